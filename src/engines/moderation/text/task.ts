// What the main thread asks of a text worker, and what comes back.
import type { Calibration } from "../calibrate.js";

/** The bank's sentence vectors, on a SharedArrayBuffer: every task shares them, none copies them. */
export interface SharedBankVectors {
  /** Identifies the bank text and encoder the vectors came from (workers cache by it). */
  key: string;
  dim: number;
  vectors: Float32Array;
}

export type TextTask =
  | { kind: "calibrate"; bank: SharedBankVectors }
  /** Indexes the bank and loads the lexicon: the worker is ready to score when it answers. */
  | { kind: "index"; bank: SharedBankVectors }
  | {
      kind: "score";
      bank: SharedBankVectors;
      calibration: Pick<Calibration, "probe" | "models">;
      /** The windows to score and their sentence vectors (texts.length × dim). */
      texts: string[];
      vectors: Float32Array;
    };

export type TextResult =
  | { kind: "calibrate"; calibration: Calibration }
  | { kind: "index" }
  /** texts.length × CATEGORY_COUNT calibrated probabilities. */
  | { kind: "score"; probabilities: Float32Array };

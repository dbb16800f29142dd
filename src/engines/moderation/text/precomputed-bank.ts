// The bank's vectors and calibration as committed in precomputed.json (written by
// scripts/moderation-calibration.ts, checked by test/engines/moderation/precomputed.test.ts), so
// that a start needs neither to embed the bank nor to calibrate. Loaded on the first text to
// classify, never at start-up.
import { BANK } from "../bank/index.js";
import type { Calibration } from "../calibrate.js";
import type { SharedBankVectors } from "./task.js";

export interface PrecomputedBank {
  /** bankKey() of the bank and encoder the vectors came from. */
  key: string;
  dim: number;
  /** BANK.length × dim float32, little-endian, base64. */
  vectors: string;
  calibration: Calibration;
}

/**
 * precomputed.json as committed. Data rather than a TypeScript module: a 3 MB string literal in
 * a module makes the compiler's emit (with its source map) take 25 s of every build.
 */
export async function committedPrecomputed(): Promise<PrecomputedBank> {
  return ((await import("./precomputed.json", { with: { type: "json" } })) as { default: PrecomputedBank }).default;
}

/** The committed bank when it is this bank's (`key`); undefined when the bank or the encoder changed. */
export async function readPrecomputed(key: string, dim: number): Promise<{ bank: SharedBankVectors; calibration: Calibration } | undefined> {
  const PRECOMPUTED = await committedPrecomputed();
  if (PRECOMPUTED.key !== key || PRECOMPUTED.dim !== dim) return undefined;
  const bytes = Buffer.from(PRECOMPUTED.vectors, "base64");
  if (bytes.length !== BANK.length * dim * 4) return undefined;
  const vectors = new Float32Array(new SharedArrayBuffer(bytes.length));
  new Uint8Array(vectors.buffer).set(bytes);
  return { bank: { key, dim, vectors }, calibration: PRECOMPUTED.calibration };
}

/** The text precomputed.json holds. */
export function precomputedJson(p: PrecomputedBank): string {
  return `${JSON.stringify(p)}\n`;
}

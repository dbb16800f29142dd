// The bank as the scorer reads it (vectors, labels, benign marks), and its calibration. Shared by
// the text worker and scripts/moderation-calibration.ts, so the committed calibration
// (precomputed.json) is computed by exactly the code a worker would run.
import { BANK } from "../bank/index.js";
import { calibrate, type Calibration } from "../calibrate.js";
import { CATEGORIES, CATEGORY_COUNT } from "../categories.js";
import { lexiconFeatures } from "../lexicon.js";
import type { BankIndex } from "../scorer.js";
import type { SharedBankVectors } from "./task.js";

export function indexBank(shared: SharedBankVectors): BankIndex {
  const count = BANK.length;
  if (shared.vectors.length !== count * shared.dim) throw new Error(`the bank has ${count} examples but ${shared.vectors.length / shared.dim} vectors were sent`);
  const labels = new Uint8Array(count * CATEGORY_COUNT);
  const benign = new Uint8Array(count);
  BANK.forEach((e, i) => {
    CATEGORIES.forEach((c, k) => (labels[i * CATEGORY_COUNT + k] = e.labels.has(c) ? 1 : 0));
    benign[i] = e.labels.size === 0 ? 1 : 0;
  });
  return { count, dim: shared.dim, vectors: shared.vectors, labels, benign };
}

/** Logistic models and thresholds fitted on the bank out of fold (calibrate.ts). Deterministic. */
export function calibrateBank(bank: BankIndex): Calibration {
  const lexicon = new Float32Array(bank.count * CATEGORY_COUNT);
  BANK.forEach((e, i) => lexicon.set(lexiconFeatures(e.text), i * CATEGORY_COUNT));
  const sections = [...new Set(BANK.map((e) => e.section))];
  return calibrate(bank, lexicon, BANK.map((e) => sections.indexOf(e.section)));
}

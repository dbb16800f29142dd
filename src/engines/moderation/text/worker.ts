// The text worker: nearest-example features against the bank, then each category's calibrated
// logistic model. Calibration (a few seconds, when no precomputed one applies) also runs here, off
// the main thread.
import { serveTasks } from "../../pool/serve.js";
import { CATEGORIES, CATEGORY_COUNT } from "../categories.js";
import { lexiconFeatures } from "../lexicon.js";
import { FEATURE_COUNT, neighbourhoodFeatures, probability, probeScores, similarities, type BankIndex } from "../scorer.js";
import { calibrateBank, indexBank } from "./bank-index.js";
import type { SharedBankVectors, TextResult, TextTask } from "./task.js";

let cached: { key: string; index: BankIndex } | undefined;

function bankIndex(shared: SharedBankVectors): BankIndex {
  if (cached?.key === shared.key) return cached.index;
  const index = indexBank(shared);
  cached = { key: shared.key, index };
  return index;
}

serveTasks<TextTask, TextResult>((task, ctx) => {
  const bank = bankIndex(task.bank);
  if (task.kind === "calibrate") return { kind: "calibrate", calibration: calibrateBank(bank) };
  if (task.kind === "index") {
    lexiconFeatures(""); // builds the word-list matcher now, not in the first request's score
    return { kind: "index" };
  }
  const n = task.texts.length;
  const probabilities = new Float32Array(n * CATEGORY_COUNT);
  const sims = new Float32Array(bank.count);
  for (let w = 0; w < n; w++) {
    ctx.signal.throwIfAborted();
    similarities(bank, task.vectors, w * bank.dim, sims);
    const probe = probeScores(task.calibration.probe, task.vectors, w * bank.dim);
    const features = neighbourhoodFeatures(bank, sims, probe, lexiconFeatures(task.texts[w]!));
    CATEGORIES.forEach((c, k) => (probabilities[w * CATEGORY_COUNT + k] = probability(task.calibration.models[c], features, k * FEATURE_COUNT)));
  }
  ctx.transfer(probabilities.buffer as ArrayBuffer);
  return { kind: "score", probabilities };
});

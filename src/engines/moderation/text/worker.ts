// The text worker: nearest-example features against the bank, then each category's calibrated
// logistic model. Calibration (a few seconds, once) also runs here, off the main thread.
import { serveTasks } from "../../pool/serve.js";
import { BANK } from "../bank/index.js";
import { calibrate } from "../calibrate.js";
import { CATEGORIES, CATEGORY_COUNT } from "../categories.js";
import { lexiconFeatures } from "../lexicon.js";
import { FEATURE_COUNT, neighbourhoodFeatures, probability, probeScores, similarities, type BankIndex } from "../scorer.js";
import type { SharedBankVectors, TextResult, TextTask } from "./task.js";

let cached: { key: string; index: BankIndex } | undefined;

function bankIndex(shared: SharedBankVectors): BankIndex {
  if (cached?.key === shared.key) return cached.index;
  const count = BANK.length;
  if (shared.vectors.length !== count * shared.dim) throw new Error(`the bank has ${count} examples but ${shared.vectors.length / shared.dim} vectors were sent`);
  const labels = new Uint8Array(count * CATEGORY_COUNT);
  const benign = new Uint8Array(count);
  BANK.forEach((e, i) => {
    CATEGORIES.forEach((c, k) => (labels[i * CATEGORY_COUNT + k] = e.labels.has(c) ? 1 : 0));
    benign[i] = e.labels.size === 0 ? 1 : 0;
  });
  const index: BankIndex = { count, dim: shared.dim, vectors: shared.vectors, labels, benign };
  cached = { key: shared.key, index };
  return index;
}

serveTasks<TextTask, TextResult>((task, ctx) => {
  const bank = bankIndex(task.bank);
  if (task.kind === "calibrate") {
    const lexicon = new Float32Array(bank.count * CATEGORY_COUNT);
    BANK.forEach((e, i) => lexicon.set(lexiconFeatures(e.text), i * CATEGORY_COUNT));
    const sections = [...new Set(BANK.map((e) => e.section))];
    return { kind: "calibrate", calibration: calibrate(bank, lexicon, BANK.map((e) => sections.indexOf(e.section))) };
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

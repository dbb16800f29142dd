// Calibration on a split of the example bank (never on the evaluation set): the bank is cut into
// FOLDS folds (round-robin within each section, so every fold has every category); each example
// is scored against the other folds only, as an unseen text would be. On those out-of-fold
// features each category gets a logistic regression (Newton's method, a little L2) — the
// calibrated score — and a threshold: the one with the best F1 among those that flag at most
// MAX_BENIGN_FLAG_RATE of the benign look-alikes. At run time texts are scored against the whole bank.
import { CATEGORIES, CATEGORY_COUNT, type Category } from "./categories.js";
import { FEATURE_COUNT, neighbourhoodFeatures, probability, probeScores, type BankIndex, type CategoryModel, type LinearProbe } from "./scorer.js";

export const FOLDS = 5;
/** Benign bank examples a category's threshold may flag (out of fold). */
export const MAX_BENIGN_FLAG_RATE = 0.01;
const L2 = 1e-2;
/** Ridge penalty of the linear probe (the vectors are unit length). */
export const PROBE_RIDGE = 1;
const NEWTON_STEPS = 30;

export interface CalibrationQuality {
  precision: number;
  recall: number;
  f1: number;
  positives: number;
}

export interface Calibration {
  probe: LinearProbe;
  models: Record<Category, CategoryModel>;
  /** How each category did out of fold, at its threshold (bank split, not the evaluation set). */
  quality: Record<Category, CalibrationQuality>;
  /** Share of benign bank examples flagged in any category, out of fold. */
  benignFlagRate: number;
}

/**
 * Fits every category. `lexicon` holds each bank example's lexicon features (count ×
 * CATEGORY_COUNT); `section` is each example's section index (folds are assigned within it).
 */
export function calibrate(bank: BankIndex, lexicon: Float32Array, section: ArrayLike<number>, diagnostics?: { outOfFold?: Float32Array }): Calibration {
  const n = bank.count;
  const fold = assignFolds(section);
  const C = CATEGORY_COUNT;
  // The probe out of fold (trained on the other folds), then on the whole bank for run time.
  const probeOutOfFold = new Float32Array(n * C);
  const gram = new ProbeGram(bank);
  const all = gram.empty();
  const perFold = Array.from({ length: FOLDS }, () => gram.empty());
  for (let i = 0; i < n; i++) gram.add(perFold[fold[i]!]!, i);
  for (const f of perFold) gram.merge(all, f);
  for (let k = 0; k < FOLDS; k++) {
    const probe = gram.solve(gram.without(all, perFold[k]!));
    for (let i = 0; i < n; i++) if (fold[i] === k) probeOutOfFold.set(probeScores(probe, bank.vectors, i * bank.dim), i * C);
  }
  const probe = gram.solve(all);

  // Similarities of every pair (symmetric: each computed once), then each example's features
  // from the examples outside its fold.
  const dim = bank.dim;
  const pairs = new Float32Array(n * n);
  for (let i = 0; i < n; i++) {
    pairs[i * n + i] = 1;
    for (let j = i + 1; j < n; j++) {
      let dot = 0;
      for (let d = 0; d < dim; d++) dot += bank.vectors[i * dim + d]! * bank.vectors[j * dim + d]!;
      pairs[i * n + j] = pairs[j * n + i] = dot;
    }
  }
  const features = new Float32Array(n * C * FEATURE_COUNT);
  for (let i = 0; i < n; i++) {
    const f = neighbourhoodFeatures(bank, pairs.subarray(i * n, (i + 1) * n), probeOutOfFold.subarray(i * C, (i + 1) * C), lexicon.subarray(i * C, (i + 1) * C), (j) => fold[j] === fold[i]);
    features.set(f, i * C * FEATURE_COUNT);
  }

  const models = {} as Record<Category, CategoryModel>;
  const quality = {} as Record<Category, CalibrationQuality>;
  const flaggedBenign = new Uint8Array(n);
  CATEGORIES.forEach((category, c) => {
    const x: number[][] = [];
    const y: number[] = [];
    for (let i = 0; i < n; i++) {
      x.push(Array.from(features.subarray((i * C + c) * FEATURE_COUNT, (i * C + c + 1) * FEATURE_COUNT)));
      y.push(bank.labels[i * C + c]!);
    }
    const { mean, std } = standardisation(x);
    const z = x.map((row) => row.map((v, k) => (v - mean[k]!) / std[k]!));
    const { weights, bias } = logisticRegression(z, y);
    const model: CategoryModel = { mean, std, weights, bias, threshold: 0.5 };
    const p = x.map((_, i) => probability(model, features, (i * C + c) * FEATURE_COUNT));
    if (diagnostics) {
      diagnostics.outOfFold ??= new Float32Array(n * C);
      p.forEach((v, i) => (diagnostics.outOfFold![i * C + c] = v));
    }
    const chosen = chooseThreshold(p, y, bank.benign);
    model.threshold = chosen.threshold;
    models[category] = model;
    quality[category] = chosen.quality;
    p.forEach((v, i) => {
      if (bank.benign[i] && v >= model.threshold) flaggedBenign[i] = 1;
    });
  });
  let benign = 0;
  let flagged = 0;
  for (let i = 0; i < n; i++)
    if (bank.benign[i]) {
      benign++;
      flagged += flaggedBenign[i]!;
    }
  return { probe, models, quality, benignFlagRate: benign ? flagged / benign : 0 };
}

/** The sums a ridge probe is solved from: XᵀX and Xᵀy over some examples, X with a bias column. */
interface GramSums {
  xx: Float64Array;
  xy: Float64Array;
}

/**
 * Ridge regression of every category's 0/1 label on the sentence vectors, for any subset of the
 * bank: the sums of each fold are gathered once, and a training set's are the whole bank's minus
 * one fold's. The bias column is not penalised. One Cholesky solve serves all categories.
 */
class ProbeGram {
  private readonly p: number;
  constructor(private readonly bank: BankIndex) {
    this.p = bank.dim + 1;
  }

  empty(): GramSums {
    return { xx: new Float64Array(this.p * this.p), xy: new Float64Array(this.p * CATEGORY_COUNT) };
  }

  add(sums: GramSums, i: number): void {
    const { dim, vectors, labels } = this.bank;
    const p = this.p;
    const x = new Float64Array(p);
    for (let d = 0; d < dim; d++) x[d] = vectors[i * dim + d]!;
    x[dim] = 1;
    for (let a = 0; a < p; a++) {
      const xa = x[a]!;
      if (xa === 0) continue;
      for (let b = a; b < p; b++) sums.xx[a * p + b]! += xa * x[b]!;
      for (let c = 0; c < CATEGORY_COUNT; c++) if (labels[i * CATEGORY_COUNT + c]) sums.xy[a * CATEGORY_COUNT + c]! += xa;
    }
  }

  merge(into: GramSums, from: GramSums): void {
    for (let k = 0; k < into.xx.length; k++) into.xx[k]! += from.xx[k]!;
    for (let k = 0; k < into.xy.length; k++) into.xy[k]! += from.xy[k]!;
  }

  without(all: GramSums, part: GramSums): GramSums {
    return { xx: all.xx.map((v, k) => v - part.xx[k]!), xy: all.xy.map((v, k) => v - part.xy[k]!) };
  }

  solve(sums: GramSums): LinearProbe {
    const p = this.p;
    const a = new Float64Array(sums.xx);
    for (let i = 0; i < p; i++) {
      if (i < p - 1) a[i * p + i]! += PROBE_RIDGE;
      for (let j = 0; j < i; j++) a[i * p + j] = a[j * p + i]!;
    }
    const w = choleskySolve(a, sums.xy, p, CATEGORY_COUNT);
    const weights: number[] = [];
    for (let c = 0; c < CATEGORY_COUNT; c++) for (let d = 0; d < p; d++) weights.push(w[d * CATEGORY_COUNT + c]!);
    return { dim: this.bank.dim, weights };
  }
}

/** Solves A·X = B for symmetric positive definite A (n × n) and B (n × m), row-major. */
function choleskySolve(a: Float64Array, b: Float64Array, n: number, m: number): Float64Array {
  const l = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let sum = a[i * n + j]!;
      for (let k = 0; k < j; k++) sum -= l[i * n + k]! * l[j * n + k]!;
      l[i * n + j] = i === j ? Math.sqrt(Math.max(sum, 1e-12)) : sum / l[j * n + j]!;
    }
  }
  const y = new Float64Array(n * m);
  for (let i = 0; i < n; i++)
    for (let c = 0; c < m; c++) {
      let sum = b[i * m + c]!;
      for (let k = 0; k < i; k++) sum -= l[i * n + k]! * y[k * m + c]!;
      y[i * m + c] = sum / l[i * n + i]!;
    }
  const x = new Float64Array(n * m);
  for (let i = n - 1; i >= 0; i--)
    for (let c = 0; c < m; c++) {
      let sum = y[i * m + c]!;
      for (let k = i + 1; k < n; k++) sum -= l[k * n + i]! * x[k * m + c]!;
      x[i * m + c] = sum / l[i * n + i]!;
    }
  return x;
}

/** Round-robin within each section: example k of a section goes to fold k mod FOLDS. */
export function assignFolds(section: ArrayLike<number>): Uint8Array {
  const seen = new Map<number, number>();
  const fold = new Uint8Array(section.length);
  for (let i = 0; i < section.length; i++) {
    const k = seen.get(section[i]!) ?? 0;
    fold[i] = k % FOLDS;
    seen.set(section[i]!, k + 1);
  }
  return fold;
}

function standardisation(x: number[][]): { mean: number[]; std: number[] } {
  const mean = new Array<number>(FEATURE_COUNT).fill(0);
  const std = new Array<number>(FEATURE_COUNT).fill(0);
  for (const row of x) row.forEach((v, k) => (mean[k]! += v / x.length));
  for (const row of x) row.forEach((v, k) => (std[k]! += (v - mean[k]!) ** 2 / x.length));
  // A constant feature (a lexicon signal no example has) keeps weight 0 and must not divide by 0.
  return { mean, std: std.map((v) => (v > 1e-12 ? Math.sqrt(v) : 1)) };
}

/** L2-regularised logistic regression by Newton's method (the features are few). */
export function logisticRegression(x: number[][], y: number[]): { weights: number[]; bias: number } {
  const d = FEATURE_COUNT + 1; // the last coefficient is the bias
  const w = new Array<number>(d).fill(0);
  for (let step = 0; step < NEWTON_STEPS; step++) {
    const grad = new Array<number>(d).fill(0);
    const hess = Array.from({ length: d }, () => new Array<number>(d).fill(0));
    for (let i = 0; i < x.length; i++) {
      const row = [...x[i]!, 1];
      let z = 0;
      for (let k = 0; k < d; k++) z += w[k]! * row[k]!;
      const p = 1 / (1 + Math.exp(-z));
      const r = p * (1 - p);
      for (let a = 0; a < d; a++) {
        grad[a]! += (p - y[i]!) * row[a]!;
        for (let b = 0; b < d; b++) hess[a]![b]! += r * row[a]! * row[b]!;
      }
    }
    for (let a = 0; a < d - 1; a++) {
      grad[a]! += L2 * x.length * w[a]!;
      hess[a]![a]! += L2 * x.length;
    }
    hess[d - 1]![d - 1]! += 1e-9;
    const delta = solve(hess, grad);
    let moved = 0;
    for (let k = 0; k < d; k++) {
      w[k]! -= delta[k]!;
      moved = Math.max(moved, Math.abs(delta[k]!));
    }
    if (moved < 1e-7) break;
  }
  return { weights: w.slice(0, d - 1), bias: w[d - 1]! };
}

/** Gaussian elimination with partial pivoting: a·x = b. */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i]!]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r]![col]!) > Math.abs(m[pivot]![col]!)) pivot = r;
    [m[col], m[pivot]] = [m[pivot]!, m[col]!];
    const p = m[col]![col]!;
    if (Math.abs(p) < 1e-12) continue;
    for (let r = 0; r < n; r++) {
      if (r === col) continue;
      const f = m[r]![col]! / p;
      if (f !== 0) for (let k = col; k <= n; k++) m[r]![k]! -= f * m[col]![k]!;
    }
  }
  return m.map((row, i) => (Math.abs(row[i]!) < 1e-12 ? 0 : row[n]! / row[i]!));
}

/** The threshold with the best F1 among those flagging at most MAX_BENIGN_FLAG_RATE of benign examples. */
function chooseThreshold(p: number[], y: number[], benign: Uint8Array): { threshold: number; quality: CalibrationQuality } {
  const positives = y.reduce((a, b) => a + b, 0);
  let benignCount = 0;
  for (let i = 0; i < p.length; i++) benignCount += benign[i]!;
  let best = { threshold: 0.5, quality: { precision: 0, recall: 0, f1: 0, positives } };
  for (let t = 0.1; t <= 0.951; t += 0.01) {
    let tp = 0;
    let fp = 0;
    let benignFlagged = 0;
    for (let i = 0; i < p.length; i++) {
      if (p[i]! < t) continue;
      if (y[i]) tp++;
      else fp++;
      if (benign[i]) benignFlagged++;
    }
    if (benignCount && benignFlagged / benignCount > MAX_BENIGN_FLAG_RATE) continue;
    const precision = tp + fp ? tp / (tp + fp) : 0;
    const recall = positives ? tp / positives : 0;
    const f1 = precision + recall ? (2 * precision * recall) / (precision + recall) : 0;
    if (f1 > best.quality.f1 + 1e-9) best = { threshold: Math.round(t * 100) / 100, quality: { precision, recall, f1, positives } };
  }
  return best;
}

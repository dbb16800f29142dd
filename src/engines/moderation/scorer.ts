// The nearest-example half of the text classifier. A text's sentence vector is compared (cosine)
// with every example of the bank; for each category nine features (FEATURE_NAMES): seven from the
// neighbourhood — how close the nearest examples of the category are, how close the nearest
// examples outside it are (benign look-alikes included), the margin, how the ten nearest vote —
// plus the linear probe's score and the lexicon's 0/1. A small logistic regression per category
// (fitted by calibrate.ts on a split of the bank) turns them into a probability, and a
// per-category threshold into the boolean.
import { CATEGORY_COUNT } from "./categories.js";

export const FEATURE_NAMES = [
  "nearest_in_category",
  "top3_in_category",
  "nearest_outside",
  "top3_outside",
  "nearest_benign",
  "margin",
  "knn10_vote",
  "linear_probe",
  "lexicon",
] as const;

export const FEATURE_COUNT = FEATURE_NAMES.length;

/** Neighbours that vote. */
const VOTERS = 10;

/** The example bank as vectors and labels. */
export interface BankIndex {
  count: number;
  dim: number;
  /** count × dim, unit length. */
  vectors: Float32Array;
  /** count × CATEGORY_COUNT: 1 where the example carries the category. */
  labels: Uint8Array;
  /** 1 for benign examples. */
  benign: Uint8Array;
}

/**
 * A ridge-regression probe per category on the sentence vector itself: CATEGORY_COUNT rows of
 * `dim` weights and a bias (dim + 1 numbers each). It sees directions of the vector space that
 * nearest examples miss; calibration treats its output as one more feature.
 */
export interface LinearProbe {
  dim: number;
  /** CATEGORY_COUNT × (dim + 1), the bias last. */
  weights: number[];
}

/** The probe's score of every category for the vector at `offset`. */
export function probeScores(probe: LinearProbe, vectors: Float32Array, offset = 0): Float32Array {
  const out = new Float32Array(CATEGORY_COUNT);
  const stride = probe.dim + 1;
  for (let c = 0; c < CATEGORY_COUNT; c++) {
    let z = probe.weights[c * stride + probe.dim]!;
    for (let d = 0; d < probe.dim; d++) z += probe.weights[c * stride + d]! * vectors[offset + d]!;
    out[c] = z;
  }
  return out;
}

/** One category's calibrated model: standardisation, logistic weights, decision threshold. */
export interface CategoryModel {
  mean: number[];
  std: number[];
  weights: number[];
  bias: number;
  threshold: number;
}

/** Cosine similarity of `query` (unit length, at `offset`) with every bank example. */
export function similarities(bank: BankIndex, query: Float32Array, offset = 0, out = new Float32Array(bank.count)): Float32Array {
  const { dim, vectors } = bank;
  // The query copied once and the sum unrolled by four: this loop is most of a text's scoring time.
  const q = query.slice(offset, offset + dim);
  const tail = dim & ~3;
  for (let i = 0; i < bank.count; i++) {
    const base = i * dim;
    let a = 0;
    let b = 0;
    let c = 0;
    let e = 0;
    let d = 0;
    for (; d < tail; d += 4) {
      a += vectors[base + d]! * q[d]!;
      b += vectors[base + d + 1]! * q[d + 1]!;
      c += vectors[base + d + 2]! * q[d + 2]!;
      e += vectors[base + d + 3]! * q[d + 3]!;
    }
    for (; d < dim; d++) a += vectors[base + d]! * q[d]!;
    out[i] = a + b + c + e;
  }
  return out;
}

/**
 * The features of every category for one text: CATEGORY_COUNT × FEATURE_COUNT numbers. `probe`
 * and `lexicon` are the text's linear-probe scores and lexicon signals (CATEGORY_COUNT each).
 * `skip(i)` leaves example i out (calibration scores each bank example without its own fold).
 */
export function neighbourhoodFeatures(bank: BankIndex, sims: Float32Array, probe: Float32Array, lexicon: Float32Array, skip?: (i: number) => boolean): Float32Array {
  const order = nearestFirst(sims, bank.count, skip);

  const C = CATEGORY_COUNT;
  const inTop = new Float32Array(C * 3).fill(NaN);
  const outTop = new Float32Array(C * 3).fill(NaN);
  const inSeen = new Uint8Array(C);
  const outSeen = new Uint8Array(C);
  const vote = new Float32Array(C);
  let voteTotal = 0;
  let nearestBenign = NaN;
  // Walk from the nearest example outwards until every category has its three nearest examples
  // inside and outside, the ten voters have voted and the nearest benign example is known.
  let complete = 0;
  for (let rank = 0; rank < order.length && (complete < C || rank < VOTERS || Number.isNaN(nearestBenign)); rank++) {
    const i = order[rank]! % INDEX_SPAN;
    const s = sims[i]!;
    if (bank.benign[i] && Number.isNaN(nearestBenign)) nearestBenign = s;
    const weight = Math.max(s, 0);
    if (rank < VOTERS) voteTotal += weight;
    for (let c = 0; c < C; c++) {
      const has = bank.labels[i * C + c] === 1;
      if (has && rank < VOTERS) vote[c]! += weight;
      const seen = has ? inSeen : outSeen;
      if (seen[c]! >= 3) continue;
      (has ? inTop : outTop)[c * 3 + seen[c]!] = s;
      seen[c]!++;
      if (inSeen[c] === 3 && outSeen[c] === 3) complete++;
    }
  }

  const out = new Float32Array(C * FEATURE_COUNT);
  for (let c = 0; c < C; c++) {
    const nearestIn = orZero(inTop[c * 3]!);
    const nearestOut = orZero(outTop[c * 3]!);
    const f = c * FEATURE_COUNT;
    out[f] = nearestIn;
    out[f + 1] = mean3(inTop, c * 3);
    out[f + 2] = nearestOut;
    out[f + 3] = mean3(outTop, c * 3);
    out[f + 4] = orZero(nearestBenign);
    out[f + 5] = nearestIn - nearestOut;
    out[f + 6] = voteTotal > 0 ? vote[c]! / voteTotal : 0;
    out[f + 7] = probe[c]!;
    out[f + 8] = lexicon[c]!;
  }
  return out;
}

const orZero = (x: number) => (Number.isNaN(x) ? 0 : x);

/** Bank indices are packed below this in the sort keys of nearestFirst. */
const INDEX_SPAN = 1 << 16;

/**
 * Keys whose ascending order is the examples' from most to least similar; `key % INDEX_SPAN` is
 * the example's index. Packing similarity and index into one float64 lets the native numeric
 * sort do the work (a comparator sort is several times slower).
 */
function nearestFirst(sims: Float32Array, count: number, skip?: (i: number) => boolean): Float64Array {
  if (count > INDEX_SPAN) throw new RangeError(`the bank holds at most ${INDEX_SPAN} examples`);
  const keys = new Float64Array(count);
  let n = 0;
  for (let i = 0; i < count; i++) {
    if (skip?.(i)) continue;
    // (1 - similarity) in [0, 2], to 1e-7: ties in that resolution keep index order.
    keys[n++] = Math.round((1 - sims[i]!) * 1e7) * INDEX_SPAN + i;
  }
  return keys.subarray(0, n).sort();
}

function mean3(a: Float32Array, at: number): number {
  let sum = 0;
  let n = 0;
  for (let k = 0; k < 3; k++) {
    const v = a[at + k]!;
    if (!Number.isNaN(v)) {
      sum += v;
      n++;
    }
  }
  return n ? sum / n : 0;
}

export const sigmoid = (z: number) => 1 / (1 + Math.exp(-z));

/** The calibrated probability of one category from its features (at `offset` in `features`). */
export function probability(model: CategoryModel, features: Float32Array, offset: number): number {
  let z = model.bias;
  for (let k = 0; k < FEATURE_COUNT; k++) z += model.weights[k]! * ((features[offset + k]! - model.mean[k]!) / model.std[k]!);
  return sigmoid(z);
}

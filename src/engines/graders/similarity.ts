// text_similarity's lexical metrics, each to its published definition and checked against a
// reference implementation (test/fixtures/graders/similarity.json, made by
// test/fixtures/graders/make_similarity_fixtures.py with Debian's python3-nltk):
//
//   fuzzy_match  normalised Indel similarity, 2·LCS(chars) / (|a| + |b|) (rapidfuzz's fuzz.ratio / 100)
//   bleu         NLTK sentence_bleu: 1–4-gram clipped precisions, weights 0.25, brevity penalty,
//                no smoothing (a zero precision counts as the smallest normal float, as NLTK)
//   gleu         NLTK sentence_gleu: min(precision, recall) over all 1–4-grams
//   meteor       NLTK meteor_score (alpha 0.9, beta 3, gamma 0.5; exact then Porter-stem matching).
//                The WordNet synonym stage is not run: no WordNet ships offline; the fixtures
//                are computed with NLTK given an empty WordNet, so they pin exactly this.
//   rouge_n/l    Google's rouge-score F-measure, its default tokenizer (lower case, runs of
//                [a-z0-9]), no stemming
//
// Tokens for bleu, gleu and meteor: the text split on whitespace (Python's str.split()), as
// NLTK expects pre-tokenised input; meteor lower-cases them itself.
import { porterStem } from "./porter.js";

export const whitespaceTokens = (text: string): string[] => text.split(/\s+/).filter((t) => t.length > 0);

/** rouge-score's default tokenizer: lower case, non-alphanumerics as spaces. */
export const rougeTokens = (text: string): string[] =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, " ")
    .split(" ")
    .filter((t) => t.length > 0);

/** Length of the longest common subsequence of two sequences, in O(|b|) memory. */
function lcsLength<T>(a: ArrayLike<T>, b: ArrayLike<T>): number {
  if (a.length === 0 || b.length === 0) return 0;
  let prev = new Uint32Array(b.length + 1);
  let cur = new Uint32Array(b.length + 1);
  for (let i = 1; i <= a.length; i++) {
    const ai = a[i - 1];
    for (let j = 1; j <= b.length; j++) cur[j] = ai === b[j - 1] ? prev[j - 1]! + 1 : Math.max(prev[j]!, cur[j - 1]!);
    [prev, cur] = [cur, prev];
  }
  return prev[b.length]!;
}

export function fuzzyMatch(input: string, reference: string): number {
  // Code points, not UTF-16 units, so an emoji counts once as it does in Python.
  const a = Array.from(input);
  const b = Array.from(reference);
  if (a.length + b.length === 0) return 1;
  return (2 * lcsLength(a, b)) / (a.length + b.length);
}

/** n-gram counts, keyed by the tokens joined with a separator no token contains. */
function ngramCounts(tokens: string[], n: number): Map<string, number> {
  const out = new Map<string, number>();
  for (let i = 0; i + n <= tokens.length; i++) {
    const key = tokens.slice(i, i + n).join("\u0000");
    out.set(key, (out.get(key) ?? 0) + 1);
  }
  return out;
}

function overlap(a: Map<string, number>, b: Map<string, number>): number {
  let n = 0;
  for (const [k, c] of a) n += Math.min(c, b.get(k) ?? 0);
  return n;
}

const total = (m: Map<string, number>) => {
  let n = 0;
  for (const c of m.values()) n += c;
  return n;
};

const SMALLEST_NORMAL = 2.2250738585072014e-308;

export function bleu(input: string, reference: string): number {
  const hyp = whitespaceTokens(input);
  const ref = whitespaceTokens(reference);
  const precisions: Array<{ num: number; den: number }> = [];
  for (let n = 1; n <= 4; n++) {
    const h = ngramCounts(hyp, n);
    precisions.push({ num: overlap(h, ngramCounts(ref, n)), den: Math.max(1, total(h)) });
  }
  if (precisions[0]!.num === 0) return 0;
  const bp = hyp.length > ref.length ? 1 : hyp.length === 0 ? 0 : Math.exp(1 - ref.length / hyp.length);
  let logSum = 0;
  for (const p of precisions) logSum += 0.25 * Math.log(p.num === 0 ? SMALLEST_NORMAL : p.num / p.den);
  return bp * Math.exp(logSum);
}

export function gleu(input: string, reference: string): number {
  const hyp = whitespaceTokens(input);
  const ref = whitespaceTokens(reference);
  const everygrams = (t: string[]) => {
    const all = new Map<string, number>();
    for (let n = 1; n <= 4; n++) for (const [k, c] of ngramCounts(t, n)) all.set(`${n}\u0001${k}`, c);
    return all;
  };
  const h = everygrams(hyp);
  const r = everygrams(ref);
  const nAll = Math.max(total(h), total(r));
  return nAll > 0 ? overlap(h, r) / nAll : 0;
}

type Enumerated = Array<[index: number, word: string]>;

/** NLTK's _match_enums: from the last hypothesis word back, each takes the last equal reference word. */
function matchEnums(hyp: Enumerated, ref: Enumerated): Array<[number, number]> {
  const matches: Array<[number, number]> = [];
  for (let i = hyp.length - 1; i >= 0; i--) {
    for (let j = ref.length - 1; j >= 0; j--) {
      if (hyp[i]![1] === ref[j]![1]) {
        matches.push([hyp[i]![0], ref[j]![0]]);
        hyp.splice(i, 1);
        ref.splice(j, 1);
        break;
      }
    }
  }
  return matches;
}

export function meteor(input: string, reference: string): number {
  const alpha = 0.9;
  const beta = 3;
  const gamma = 0.5;
  const hyp: Enumerated = whitespaceTokens(input).map((w, i) => [i, w.toLowerCase()]);
  const ref: Enumerated = whitespaceTokens(reference).map((w, i) => [i, w.toLowerCase()]);
  const hypLen = hyp.length;
  const refLen = ref.length;
  const exact = matchEnums(hyp, ref);
  const stemmed = matchEnums(
    hyp.map(([i, w]) => [i, porterStem(w)]),
    ref.map(([i, w]) => [i, porterStem(w)]),
  );
  const matches = [...exact, ...stemmed].sort((a, b) => a[0] - b[0]);
  if (matches.length === 0 || hypLen === 0 || refLen === 0) return 0;
  const precision = matches.length / hypLen;
  const recall = matches.length / refLen;
  const fmean = (precision * recall) / (alpha * precision + (1 - alpha) * recall);
  let chunks = 1;
  for (let i = 0; i < matches.length - 1; i++) {
    if (!(matches[i + 1]![0] === matches[i]![0] + 1 && matches[i + 1]![1] === matches[i]![1] + 1)) chunks++;
  }
  const penalty = gamma * (chunks / matches.length) ** beta;
  return (1 - penalty) * fmean;
}

const fmeasure = (matched: number, predicted: number, target: number) => {
  const p = matched / Math.max(predicted, 1);
  const r = matched / Math.max(target, 1);
  return p + r > 0 ? (2 * p * r) / (p + r) : 0;
};

export function rougeN(input: string, reference: string, n: number): number {
  const pred = ngramCounts(rougeTokens(input), n);
  const target = ngramCounts(rougeTokens(reference), n);
  return fmeasure(overlap(target, pred), total(pred), total(target));
}

export function rougeL(input: string, reference: string): number {
  const pred = rougeTokens(input);
  const target = rougeTokens(reference);
  if (pred.length === 0 || target.length === 0) return 0;
  return fmeasure(lcsLength(target, pred), pred.length, target.length);
}

export type LexicalMetric = "fuzzy_match" | "bleu" | "gleu" | "meteor" | "rouge_1" | "rouge_2" | "rouge_3" | "rouge_4" | "rouge_5" | "rouge_l";

export function lexicalSimilarity(metric: LexicalMetric, input: string, reference: string): number {
  switch (metric) {
    case "fuzzy_match":
      return fuzzyMatch(input, reference);
    case "bleu":
      return bleu(input, reference);
    case "gleu":
      return gleu(input, reference);
    case "meteor":
      return meteor(input, reference);
    case "rouge_l":
      return rougeL(input, reference);
    default:
      return rougeN(input, reference, Number(metric.slice("rouge_".length)));
  }
}

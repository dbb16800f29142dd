/**
 * From ranked lists to scored hits (README.md, "Scores").
 *
 * Reciprocal rank fusion: every non-empty ranked list ℓ (one lexical and one dense list per query
 * text) gives a chunk at 1-based rank r the vote 1 / (k + r), k = 60; `fused` is the sum of its
 * votes and `rank` = fused / (L / (k + 1)), L the number of non-empty lists: 1 for a chunk ranked
 * first everywhere, smaller the further down the lists it sits, in (0, 1].
 *
 * Scores, by mode (sim = best cosine similarity of the chunk to any query vector, clamped to 0..1):
 * - `dense`:   score = sim (no fusion needed: cosines of different queries compare directly).
 * - `lexical`: score = rank (BM25 has no absolute scale, so the score is rank-based).
 * - `hybrid`:  score = rank × sim*, sim* the best similarity of any fused chunk to the queries.
 *   The order is the fused ranking itself (ordering by rank × each chunk's own similarity pulled
 *   the result towards the dense list and lost to lexical alone on MRR: bench/vector-stores.bench.ts);
 *   sim* scales the whole list by how well the query is answered at all, so an unrelated query's
 *   hits all score low and `score_threshold` means something. With no dense list at all (a store
 *   without vectors) hybrid scores like lexical.
 * Within [0, 1], never NaN, never increasing down the list. Ties: fused votes, then rowid.
 */
import type { SearchMode } from "./types.js";

export interface Ranked {
  label: number;
  score: number;
  fused: number;
}

export interface FuseInput {
  mode: SearchMode;
  /** Rowids best first, one list per query text (empty when nothing matched). */
  lexical: number[][];
  dense: number[][];
  rrfK: number;
  /** Best cosine similarity of a chunk to the query vectors; undefined without a vector. */
  similarity: (label: number) => number | undefined;
}

const clamp01 = (x: number) => (x > 0 ? (x < 1 ? x : 1) : 0); // NaN → 0

export function fuse({ mode, lexical, dense, rrfK, similarity }: FuseInput): Ranked[] {
  const lists = [...(mode === "dense" ? [] : lexical), ...(mode === "lexical" ? [] : dense)].filter((l) => l.length > 0);
  if (lists.length === 0) return [];
  const fused = new Map<number, number>();
  for (const list of lists) {
    list.forEach((label, i) => fused.set(label, (fused.get(label) ?? 0) + 1 / (rrfK + i + 1)));
  }
  const best = lists.length / (rrfK + 1);
  const useSim = mode === "dense" || (mode === "hybrid" && dense.some((l) => l.length > 0));

  let bestSim = 0;
  if (mode === "hybrid" && useSim) for (const label of fused.keys()) bestSim = Math.max(bestSim, clamp01(similarity(label) ?? 0));
  const ranked: Ranked[] = [];
  for (const [label, votes] of fused) {
    const rank = votes / best;
    let score: number;
    if (!useSim) score = rank;
    else score = mode === "dense" ? clamp01(similarity(label) ?? 0) : rank * bestSim;
    ranked.push({ label, score: clamp01(score), fused: votes });
  }
  ranked.sort((a, b) => b.score - a.score || b.fused - a.fused || a.label - b.label);
  return ranked;
}

/**
 * One search, the same on every engine: the query checked, one lexical list and one dense list
 * per query text (filters applied inside both, before any top-k cut), fused (fusion.ts), cut by
 * the score threshold and the limit, and the chosen chunks' rows read. The engine supplies the
 * lexical ranking, the filter's allowed files, the store's dense cache and the rows, behind
 * `StoreRetrievers`; the options both indexes share are here too.
 */
import { denseCacheBytesFromEnv } from "./dense-cache.js";
import type { DenseHit, DenseOptions, DenseStore } from "./dense.js";
import { fuse, type Ranked } from "./fusion.js";
import { MAX_QUERIES } from "./types.js";
import type { Attributes, Filter, SearchHit, SearchMode, SearchQuery } from "./types.js";
import { normalised } from "./writes.js";

/** Options both indexes take. */
export interface SearchIndexOptions {
  /** A store's dense search uses the HNSW graph past this many candidate vectors (default 20,000). */
  annThreshold?: number;
  /** HNSW degree (default 16). */
  hnswM?: number;
  /** HNSW build breadth (default 100). */
  efConstruction?: number;
  /** HNSW search breadth (default 128; raised to k when k is larger). */
  efSearch?: number;
  /** Depth of each ranked list fused, as a function of the limit (default clamp(2·limit, 20, 100), at least limit). */
  candidates?: (limit: number) => number;
  /** Reciprocal rank fusion constant (default 60). */
  rrfK?: number;
  /**
   * Most postings one lexical query may walk (default 10,000). Query terms are taken rarest first
   * while their document frequencies in the store add up to at most this; the commonest terms,
   * which weigh least, are left out (README.md, "Lexical"; lexical-budget.ts).
   */
  lexicalBudget?: number;
  /** Memory for the loaded stores' vectors and graphs (DenseOptions.cacheBytes); default: denseCacheBytesFromEnv(). */
  denseCacheBytes?: number;
}

/** How a search ranks: list depth, fusion constant, postings budget. */
export interface SearchTuning {
  candidates: (limit: number) => number;
  rrfK: number;
  lexicalBudget: number;
}

const defaultCandidates = (limit: number) => Math.max(limit, Math.min(100, Math.max(20, 2 * limit)));

export function searchTuning(opts: SearchIndexOptions): SearchTuning {
  return { candidates: opts.candidates ?? defaultCandidates, rrfK: opts.rrfK ?? 60, lexicalBudget: opts.lexicalBudget ?? 10_000 };
}

export function denseOptions(opts: SearchIndexOptions, indexDir: string | null): DenseOptions {
  return {
    annThreshold: opts.annThreshold ?? 20_000,
    m: opts.hnswM ?? 16,
    efConstruction: opts.efConstruction ?? 100,
    efSearch: opts.efSearch ?? 128,
    indexDir,
    cacheBytes: opts.denseCacheBytes ?? denseCacheBytesFromEnv(),
  };
}

const MAX_LIMIT = 1000;

/** A query checked before anything is read: its mode, and its unit-length query vectors (promised ones are checked when they arrive). */
export interface CheckedQuery {
  mode: SearchMode;
  /** Empty in lexical mode; pending while the query is being embedded (it rejects when the embedding fails or is malformed). */
  queries: Promise<Float32Array[]>;
}

export function checkSearchQuery(q: SearchQuery): CheckedQuery {
  // A query refused below never reads its promised vectors: their failure must not go unhandled.
  if (q.vector instanceof Promise) q.vector.catch(() => {});
  const { limit, text } = q;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be an integer in 1..${MAX_LIMIT}`);
  if (!Array.isArray(text) || text.length === 0 || text.length > MAX_QUERIES || text.some((t) => typeof t !== "string")) {
    throw new TypeError(`text must be 1..${MAX_QUERIES} strings`);
  }
  if (q.mode === "dense" && !q.vector) throw new TypeError(`mode "dense" needs query vectors`);
  const mode: SearchMode = q.vector ? (q.mode ?? "hybrid") : "lexical";
  const vectorsChecked = (vectors: Float32Array[]) => {
    if (vectors.length !== text.length) throw new RangeError(`vector must hold one embedding per text (${text.length})`);
    return mode !== "lexical" ? vectors.map((v, i) => normalised(v, `vector[${i}]`)) : [];
  };
  if (!(q.vector instanceof Promise)) return { mode, queries: Promise.resolve(q.vector ? vectorsChecked(q.vector) : []) };
  const queries = q.vector.then(vectorsChecked);
  queries.catch(() => {}); // awaited by the search; a search that ends before (no such store) leaves it unread
  return { mode, queries };
}

/** A chosen chunk's row as the engine reads it. */
export interface ChunkRow {
  label: number;
  chunkId: string;
  fileId: string;
  index: number;
  tokens: number;
  text: string;
  /** The file's attributes as JSON, or null. */
  attributes: string | null;
}

/** What one search needs of the engine, for one existing store. */
export interface StoreRetrievers {
  /** Chunk labels by lexical rank for one query text, at most `depth`, the filter applied before the cut. */
  lexical(text: string, filter: Filter | undefined, depth: number, mustAnswer: boolean): number[] | Promise<number[]>;
  /** The store's dense cache; null when the store holds no vectors. */
  dense(): Promise<DenseStore> | null;
  /** The files the filter allows. */
  allowedFiles(filter: Filter): string[] | Promise<string[]>;
  /** The rows of these chunks, in any order (a chunk removed meanwhile is missing). */
  rows(labels: number[]): ChunkRow[] | Promise<ChunkRow[]>;
}

export async function runSearch(q: SearchQuery, checked: CheckedQuery, store: StoreRetrievers, tuning: SearchTuning): Promise<SearchHit[]> {
  const { mode } = checked;
  const depth = Math.max(q.limit, Math.floor(tuning.candidates(q.limit)));

  // The lexical lists start first: they need no query vector, so they run while it is computed.
  const lexical =
    mode === "dense" ? Promise.resolve([]) : Promise.all(q.text.map((t) => store.lexical(t, q.filter, depth, mode === "lexical")));
  lexical.catch(() => {}); // awaited below; never an unhandled rejection while the dense side runs
  const [dense, queries] = await Promise.all([mode !== "lexical" ? store.dense() : null, checked.queries]);
  const denseLists: DenseHit[][] = [];
  if (dense && dense.size > 0) {
    const allow = q.filter ? dense.allow(await store.allowedFiles(q.filter)) : undefined;
    for (const v of queries) denseLists.push(dense.search(v, depth, allow));
  }
  const lexicalLists = await lexical;

  const ranked: Ranked[] = fuse({
    mode,
    lexical: lexicalLists,
    dense: denseLists.map((l) => l.map((h) => h.label)),
    rrfK: tuning.rrfK,
    // Best cosine over the queries, for every candidate (lexical finds included).
    similarity: dense
      ? (label) => {
          let best: number | undefined;
          for (const v of queries) {
            const s = dense.similarity(label, v);
            if (s !== undefined && (best === undefined || s > best)) best = s;
          }
          return best;
        }
      : () => undefined,
  });
  const threshold = q.scoreThreshold ?? 0;
  const chosen = ranked.filter((r) => r.score >= threshold).slice(0, q.limit);
  if (chosen.length === 0) return [];

  // In ranking order; a chunk removed meanwhile is left out.
  const byLabel = new Map((await store.rows(chosen.map((r) => r.label))).map((r) => [r.label, r]));
  const hits: SearchHit[] = [];
  for (const r of chosen) {
    const row = byLabel.get(r.label);
    if (!row) continue;
    hits.push({
      fileId: row.fileId,
      chunkId: row.chunkId,
      index: row.index,
      tokens: row.tokens,
      score: r.score,
      text: row.text,
      attributes: row.attributes ? (JSON.parse(row.attributes) as Attributes) : {},
    });
  }
  return hits;
}

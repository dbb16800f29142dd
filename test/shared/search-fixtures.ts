/**
 * Fixtures of the search engine's tests (test/engines/search): synthetic vectors (bag-of-words
 * hashing, 64 dimensions: no neural model), a 10-file corpus whose attributes exercise every
 * filter operator, and the exact file sets each filter case must return. Shared by the SQLite and
 * the PostgreSQL index tests, which hold both implementations to the same cases.
 */
import type { Attributes, ChunkInput, Filter, SearchHit, SearchIndex, SearchMode } from "../../src/engines/search/index.js";

export const DIM = 64;

/** Bag-of-words hashing: each word adds ±1 in 4 hashed buckets; texts sharing words are similar. */
export function embed(text: string): Float32Array {
  const v = new Float32Array(DIM);
  for (const w of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    let h = 2166136261;
    for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619);
    for (let j = 0; j < 4; j++) {
      h = Math.imul(h ^ (h >>> 15), 2246822507) >>> 0;
      v[h % DIM]! += h & 1 ? 1 : -1;
    }
  }
  v[0]! += 0.01; // never all-zero
  return v;
}

export function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export const TOPICS = [
  "quantum physics particles entanglement",
  "cooking pasta tomato recipes",
  "gardening roses soil compost",
  "astronomy telescopes galaxies nebula",
  "finance invoices payments ledger",
  "sailing boats wind harbour",
  "music guitar chords melody",
  "medicine vaccines immune cells",
  "railways trains stations timetable",
  "chess openings gambits endgame",
];

/** The attributes of the 10 files of the small fixture; every operator's expected set is derived by hand below. */
export const ATTRS: Attributes[] = Array.from({ length: 10 }, (_, i) => {
  if (i === 9) return {}; // a file with no attributes at all
  const a: Attributes = {
    author: ["alice", "bob", "carol", "dave", "erin"][i % 5]!,
    year: 2015 + i,
    draft: i % 3 === 0,
  };
  if (i < 4) a.region = "eu";
  else if (i < 7) a.region = "us";
  if (i === 1) a.code = "7"; // a string that looks like a number
  if (i === 2) a.code = 7;
  if (i === 3) a.code = 7.5;
  return a;
});

export function smallCorpus(): ChunkInput[] {
  const chunks: ChunkInput[] = [];
  for (let f = 0; f < 10; f++) {
    for (let j = 0; j < 5; j++) {
      const text = `Atrium notes ${TOPICS[f]} part ${j} file${f}word ${j % 2 ? "running fast" : "runs slowly"}`;
      chunks.push({ chunkId: `f${f}-c${j}`, fileId: `file-${f}`, index: j, text, tokens: text.split(" ").length, vector: embed(text), attributes: ATTRS[f]! });
    }
  }
  return chunks;
}

export const ALL = new Set(Array.from({ length: 10 }, (_, i) => i));
export const only = (...xs: number[]) => new Set(xs);
export const except = (...xs: number[]) => new Set([...ALL].filter((x) => !xs.includes(x)));
export const fileSet = (hits: SearchHit[]) => new Set(hits.map((h) => Number(h.fileId.slice(5))));

export const eq = (key: string, value: unknown): Filter => ({ type: "eq", key, value }) as Filter;

/** Every operator, with the exact set of files (by number) that must match. */
export const FILTER_CASES: Array<[string, Filter, Set<number>]> = [
  ["eq string", eq("author", "alice"), only(0, 5)],
  ["eq number", eq("year", 2017), only(2)],
  ["eq true", eq("draft", true), only(0, 3, 6)],
  ["eq false", eq("draft", false), only(1, 2, 4, 5, 7, 8)],
  ["eq number vs string attribute", eq("code", 7), only(2)],
  ["eq string vs number attribute", eq("code", "7"), only(1)],
  ["eq number vs boolean attribute", eq("draft", 1), only()],
  ["eq is case-sensitive", eq("author", "Alice"), only()],
  ["ne (missing key matches)", { type: "ne", key: "author", value: "alice" }, except(0, 5)],
  ["ne region", { type: "ne", key: "region", value: "eu" }, only(4, 5, 6, 7, 8, 9)],
  ["ne other type matches", { type: "ne", key: "code", value: 7 }, except(2)],
  ["gt", { type: "gt", key: "year", value: 2020 }, only(6, 7, 8)],
  ["gte", { type: "gte", key: "year", value: 2020 }, only(5, 6, 7, 8)],
  ["lt", { type: "lt", key: "year", value: 2017 }, only(0, 1)],
  ["lte", { type: "lte", key: "year", value: 2017 }, only(0, 1, 2)],
  ["gt skips strings", { type: "gt", key: "code", value: 6 }, only(2, 3)],
  ["gte fractional", { type: "gte", key: "code", value: 7.5 }, only(3)],
  ["lt on a missing key", { type: "lt", key: "nothing", value: 1e9 }, only()],
  ["in strings", { type: "in", key: "author", value: ["alice", "carol"] }, only(0, 2, 5, 7)],
  ["in mixed types", { type: "in", key: "code", value: [7, "7"] }, only(1, 2)],
  ["in is typed", { type: "in", key: "year", value: [2015, "2016"] }, only(0)],
  ["in []", { type: "in", key: "author", value: [] }, only()],
  ["nin", { type: "nin", key: "region", value: ["eu"] }, only(4, 5, 6, 7, 8, 9)],
  ["nin []", { type: "nin", key: "author", value: [] }, ALL],
  ["nin numbers", { type: "nin", key: "year", value: [2015, 2016, 2017] }, except(0, 1, 2)],
  ["and", { type: "and", filters: [eq("region", "us"), { type: "gte", key: "year", value: 2020 }] }, only(5, 6)],
  ["or", { type: "or", filters: [eq("author", "alice"), { type: "lt", key: "year", value: 2016 }] }, only(0, 5)],
  [
    "nested and/or",
    {
      type: "or",
      filters: [
        { type: "and", filters: [eq("region", "eu"), eq("draft", true)] },
        { type: "and", filters: [{ type: "ne", key: "region", value: "eu" }, { type: "ne", key: "region", value: "us" }] },
      ],
    },
    only(0, 3, 7, 8, 9),
  ],
  [
    "deep nesting",
    { type: "and", filters: [{ type: "or", filters: [{ type: "and", filters: [{ type: "or", filters: [eq("author", "bob"), eq("author", "dave")] }] }] }, { type: "lte", key: "year", value: 2018 }] },
    only(1, 3),
  ],
  ["and []", { type: "and", filters: [] }, ALL],
  ["or []", { type: "or", filters: [] }, only()],
];

export const MODES: SearchMode[] = ["lexical", "dense", "hybrid"];

/** One search per mode with a query every chunk matches lexically ("atrium"), limit 50: returns every allowed chunk. */
export async function searchAll(index: SearchIndex, storeId: string, mode: SearchMode, filter?: Filter): Promise<SearchHit[]> {
  const text = "Atrium notes";
  return index.search(storeId, {
    text: [text],
    vector: mode === "lexical" ? undefined : [embed(text)],
    limit: 50,
    filter,
    mode,
  });
}


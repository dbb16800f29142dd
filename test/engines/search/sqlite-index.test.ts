/**
 * The vector-store search engine (src/engines/search) on a temporary SQLite file: filter semantics
 * for every operator in the lexical, dense (exact and HNSW) and hybrid retrievers, filters never
 * cutting results short, idempotent writes, removal, attribute updates, FTS query escaping, scores,
 * the filter validator, HNSW persistence and staleness across connections.
 *
 * Vectors are synthetic (bag-of-words hashing, 64 dimensions): no neural model involved.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FilterError,
  matchesFilter,
  rewriteQuery,
  SEARCH_MIGRATION,
  SqliteSearchIndex,
  validateFilter,
  type Attributes,
  type ChunkInput,
  type Filter,
  type SearchHit,
  type SearchMode,
} from "../../../src/engines/search/index.js";
import { openSqliteRecordStore, type SqliteRecordStore } from "../../../src/storage/sqlite-records.js";

// ---------- fixtures ----------

const DIM = 64;

/** Bag-of-words hashing: each word adds ±1 in 4 hashed buckets; texts sharing words are similar. */
function embed(text: string): Float32Array {
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

function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const TOPICS = [
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
const ATTRS: Attributes[] = Array.from({ length: 10 }, (_, i) => {
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

function smallCorpus(): ChunkInput[] {
  const chunks: ChunkInput[] = [];
  for (let f = 0; f < 10; f++) {
    for (let j = 0; j < 5; j++) {
      const text = `Atrium notes ${TOPICS[f]} part ${j} file${f}word ${j % 2 ? "running fast" : "runs slowly"}`;
      chunks.push({ chunkId: `f${f}-c${j}`, fileId: `file-${f}`, index: j, text, tokens: text.split(" ").length, vector: embed(text), attributes: ATTRS[f]! });
    }
  }
  return chunks;
}

const ALL = new Set(Array.from({ length: 10 }, (_, i) => i));
const only = (...xs: number[]) => new Set(xs);
const except = (...xs: number[]) => new Set([...ALL].filter((x) => !xs.includes(x)));
const fileSet = (hits: SearchHit[]) => new Set(hits.map((h) => Number(h.fileId.slice(5))));

const eq = (key: string, value: unknown): Filter => ({ type: "eq", key, value }) as Filter;

/** Every operator, with the exact set of files (by number) that must match. */
const FILTER_CASES: Array<[string, Filter, Set<number>]> = [
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

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-search-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let dbCount = 0;

function openStore(): { store: SqliteRecordStore; file: string } {
  const file = path.join(tmpRoot, `db-${++dbCount}.sqlite`);
  return { store: openSqliteRecordStore(file, { migrations: [SEARCH_MIGRATION] }), file };
}

const MODES: SearchMode[] = ["lexical", "dense", "hybrid"];

/** One search per mode with a query every chunk matches lexically ("atrium"), limit 50: returns every allowed chunk. */
async function searchAll(index: SqliteSearchIndex, storeId: string, mode: SearchMode, filter?: Filter): Promise<SearchHit[]> {
  const text = "Atrium notes";
  return index.search(storeId, {
    text: [text],
    vector: mode === "lexical" ? undefined : [embed(text)],
    limit: 50,
    filter,
    mode,
  });
}

// ---------- filters: exact semantics in every retriever ----------

describe.each([
  ["exact dense scan", 20_000],
  ["HNSW forced (threshold 10)", 10],
])("filter semantics, %s", (_name, annThreshold) => {
  let store: SqliteRecordStore;
  let index: SqliteSearchIndex;
  beforeAll(async () => {
    ({ store } = openStore());
    index = new SqliteSearchIndex(store.db, { annThreshold });
    await index.addChunks("vs_1", smallCorpus());
    await index.settle("vs_1");
    expect(index.inspect("vs_1")).toMatchObject({ loaded: true, vectors: 50, ann: annThreshold === 10 ? "ready" : "none", lastError: null });
  });
  afterAll(async () => {
    // The forced-HNSW run really went through the graph (filters allowing ≤ 10 chunks scan exactly).
    const { counters } = index.inspect("vs_1");
    if (annThreshold === 10) expect(counters.ann).toBeGreaterThan(50);
    else expect(counters.ann).toBe(0);
    console.log(`dense searches (threshold ${annThreshold}):`, counters);
    await index.close();
    await store.close();
  });

  it("no filter returns every chunk in every mode", async () => {
    for (const mode of MODES) {
      const hits = await searchAll(index, "vs_1", mode);
      expect(hits.length, mode).toBe(50);
      expect(new Set(hits.map((h) => h.chunkId)).size).toBe(50);
    }
  });

  it.each(FILTER_CASES)("%s", async (_label, filter, expected) => {
    const validated = validateFilter(JSON.parse(JSON.stringify(filter)));
    // The reference semantics agree with the hand-written expectation...
    expect(new Set([...ALL].filter((i) => matchesFilter(validated, ATTRS[i]!)))).toEqual(expected);
    // ...and so does every retriever, with every chunk of every matching file.
    for (const mode of MODES) {
      const hits = await searchAll(index, "vs_1", mode, validated);
      expect(fileSet(hits), mode).toEqual(expected);
      expect(hits.length, mode).toBe(expected.size * 5);
    }
  });

  it("random filters: SQL agrees with matchesFilter", async () => {
    const rnd = mulberry32(annThreshold);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const keys = ["author", "year", "draft", "region", "code", "missing"];
    const values: Array<string | number | boolean> = ["alice", "bob", "eu", "us", "7", 7, 7.5, 2015, 2018, 2020, 2024, true, false];
    const randomFilter = (depth: number): Filter => {
      if (depth < 3 && rnd() < 0.35) {
        return { type: pick(["and", "or"] as const), filters: Array.from({ length: Math.floor(rnd() * 4) }, () => randomFilter(depth + 1)) };
      }
      const type = pick(["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"] as const);
      const key = pick(keys);
      if (type === "in" || type === "nin") {
        return { type, key, value: Array.from({ length: Math.floor(rnd() * 4) }, () => pick(values.filter((v) => typeof v !== "boolean")) as string | number) };
      }
      if (type === "eq" || type === "ne") return { type, key, value: pick(values) };
      return { type, key, value: pick([2014, 2016.5, 2019, 2024, 7, 7.5, 0]) };
    };
    for (let n = 0; n < 60; n++) {
      const filter = validateFilter(randomFilter(0));
      const expected = new Set([...ALL].filter((i) => matchesFilter(filter, ATTRS[i]!)));
      for (const mode of MODES) {
        expect(fileSet(await searchAll(index, "vs_1", mode, filter)), `${mode} ${JSON.stringify(filter)}`).toEqual(expected);
      }
    }
  });
});

// ---------- filters never short, at a size where the ranking matters ----------

describe("a selective filter never cuts results short", () => {
  let store: SqliteRecordStore;
  let index: SqliteSearchIndex;
  const RARE = [150, 151, 152]; // topics unrelated to the query, far down the ranking
  beforeAll(async () => {
    ({ store } = openStore());
    index = new SqliteSearchIndex(store.db, { annThreshold: 200 });
    const rnd = mulberry32(7);
    const chunks: ChunkInput[] = [];
    for (let f = 0; f < 200; f++) {
      const topic = RARE.includes(f) ? TOPICS[9]! : TOPICS[f % 9]!;
      const attributes: Attributes = { group: RARE.includes(f) ? "rare" : "common", half: f % 2 === 0 };
      for (let j = 0; j < 10; j++) {
        const filler = Array.from({ length: 6 }, () => TOPICS[Math.floor(rnd() * 9)]!.split(" ")[Math.floor(rnd() * 4)]).join(" ");
        const text = `atrium ${topic} ${topic.split(" ")[j % 4]} ${filler}`;
        chunks.push({ chunkId: `c${f}-${j}`, fileId: `file-${f}`, index: j, text, tokens: 10, vector: embed(text), attributes });
      }
    }
    for (let i = 0; i < chunks.length; i += 500) await index.addChunks("vs_big", chunks.slice(i, i + 500));
    await index.settle("vs_big");
    expect(index.inspect("vs_big")).toMatchObject({ vectors: 2000, ann: "ready" });
  });
  afterAll(async () => {
    await index.close();
    await store.close();
  });

  const query = "quantum physics particles entanglement";

  it.each(MODES)("%s: 3 rare files far down the ranking still come back, all of them", async (mode) => {
    const filter: Filter = { type: "eq", key: "group", value: "rare" };
    const vector = mode === "lexical" ? undefined : [embed(query)];
    // lexical needs a term the rare chunks contain (the everywhere-word "atrium", which ranks them
    // far down); dense and hybrid find them by vector alone.
    const text = mode === "lexical" ? `${query} atrium` : query;
    const unfiltered = await index.search("vs_big", { text: [text], vector, limit: 10, mode });
    expect(unfiltered.some((h) => h.attributes.group === "rare")).toBe(false);
    const ten = await index.search("vs_big", { text: [text], vector, limit: 10, mode, filter });
    expect(ten).toHaveLength(10);
    expect(fileSet(ten).size).toBeGreaterThan(0);
    for (const h of ten) expect(RARE).toContain(Number(h.fileId.slice(5)));
    const all = await index.search("vs_big", { text: [text], vector, limit: 50, mode, filter });
    expect(all).toHaveLength(30);
    expect(fileSet(all)).toEqual(new Set(RARE));
  });

  it("a broad filter goes through the HNSW admission callback: full pages, all allowed, close to exact", async () => {
    const filter: Filter = { type: "eq", key: "half", value: true }; // 1000 chunks > threshold 200
    const q = embed(query);
    const before = index.inspect("vs_big").counters;
    const hits = await index.search("vs_big", { text: [query], vector: [q], limit: 50, mode: "dense", filter });
    expect(hits).toHaveLength(50);
    for (const h of hits) expect(Number(h.fileId.slice(5)) % 2).toBe(0);
    // Same query against an index that only scans exactly.
    const exact = new SqliteSearchIndex(store.db, { annThreshold: 1e9 });
    const ref = await exact.search("vs_big", { text: [query], vector: [q], limit: 50, mode: "dense", filter });
    await exact.close();
    const refIds = new Set(ref.map((h) => h.chunkId));
    const overlap = hits.filter((h) => refIds.has(h.chunkId)).length;
    expect(overlap / 50).toBeGreaterThanOrEqual(0.9);
    expect(hits[0]!.score).toBeCloseTo(ref[0]!.score, 5);
    expect(index.inspect("vs_big").counters).toMatchObject({ ann: before.ann + 1, fallback: before.fallback });
  });
});

// ---------- writes ----------

describe("writes", () => {
  let store: SqliteRecordStore;
  let index: SqliteSearchIndex;
  beforeAll(() => {
    ({ store } = openStore());
    index = new SqliteSearchIndex(store.db, { annThreshold: 10 });
  });
  afterAll(async () => {
    await index.close();
    await store.close();
  });

  it("addChunks is idempotent by chunk id and re-adding replaces", async () => {
    const chunks = smallCorpus();
    await index.addChunks("vs_w", chunks);
    const before = await index.stats("vs_w");
    expect(before.chunks).toBe(50);
    const textBytes = chunks.reduce((s, c) => s + Buffer.byteLength(c.text), 0);
    expect(before.bytes).toBe(textBytes + 50 * DIM * 4);
    await index.search("vs_w", { text: ["x"], vector: [embed("x")], limit: 1 }); // load the dense cache
    await index.settle();

    await index.addChunks("vs_w", chunks);
    await index.addChunks("vs_w", chunks.slice(0, 5));
    expect(await index.stats("vs_w")).toEqual(before);
    for (const mode of MODES) {
      const hits = await searchAll(index, "vs_w", mode);
      expect(hits.length, mode).toBe(50);
      expect(new Set(hits.map((h) => h.chunkId)).size, mode).toBe(50);
    }

    // Replace one chunk's text and vector: the old words are gone, the new ones found, still 50 chunks.
    const replaced = { ...chunks[0]!, text: "Atrium zeppelin airship hangar", vector: embed("Atrium zeppelin airship hangar") };
    await index.addChunks("vs_w", [replaced]);
    expect((await index.stats("vs_w")).chunks).toBe(50);
    const z = await index.search("vs_w", { text: ["zeppelin"], limit: 5, mode: "lexical" });
    expect(z.map((h) => h.chunkId)).toEqual(["f0-c0"]);
    const old = await index.search("vs_w", { text: ["file0word"], limit: 10, mode: "lexical" });
    expect(old.map((h) => h.chunkId).sort()).toEqual(["f0-c1", "f0-c2", "f0-c3", "f0-c4"]);
    const d = await index.search("vs_w", { text: ["zeppelin airship"], vector: [embed("Atrium zeppelin airship hangar")], limit: 1, mode: "dense" });
    expect(d[0]).toMatchObject({ chunkId: "f0-c0", text: "Atrium zeppelin airship hangar" });
    expect(d[0]!.score).toBeCloseTo(1, 5);
    // Duplicate ids inside one batch: the last one wins.
    await index.addChunks("vs_w", [
      { ...replaced, text: "Atrium first version" },
      { ...replaced, text: "Atrium second version" },
    ]);
    expect((await index.stats("vs_w")).chunks).toBe(50);
    const v = await index.search("vs_w", { text: ["version"], limit: 5, mode: "lexical" });
    expect(v.map((h) => h.text)).toEqual(["Atrium second version"]);
  });

  it("removeFile removes the file from FTS, the vectors and the graph", async () => {
    await index.settle();
    await index.removeFile("vs_w", "file-3");
    expect((await index.stats("vs_w")).chunks).toBe(45);
    for (const mode of MODES) {
      const hits = await searchAll(index, "vs_w", mode);
      expect(hits.length, mode).toBe(45);
      expect(fileSet(hits).has(3), mode).toBe(false);
    }
    const exact = await index.search("vs_w", { text: ["file3word"], vector: [embed(smallCorpus()[15]!.text)], limit: 50 });
    expect(exact.some((h) => h.fileId === "file-3")).toBe(false);
    await index.removeFile("vs_w", "file-3"); // again: no-op
    await index.removeFile("vs_missing", "file-3");
    expect((await index.stats("vs_w")).chunks).toBe(45);
  });

  it("updateAttributes is visible to the next search's filters, in every mode", async () => {
    const filter: Filter = { type: "eq", key: "author", value: "zoe" };
    for (const mode of MODES) expect(await searchAll(index, "vs_w", mode, filter), mode).toHaveLength(0);
    await index.updateAttributes("vs_w", "file-4", { author: "zoe", year: 1999 });
    for (const mode of MODES) {
      const hits = await searchAll(index, "vs_w", mode, filter);
      expect(fileSet(hits), mode).toEqual(only(4));
      expect(hits[0]!.attributes).toEqual({ author: "zoe", year: 1999 });
    }
    // The old values are gone.
    for (const mode of MODES) expect(fileSet(await searchAll(index, "vs_w", mode, eq("author", "erin"))), mode).toEqual(only());
    await index.updateAttributes("vs_w", "file-4", {});
    for (const mode of MODES) {
      expect(await searchAll(index, "vs_w", mode, filter), mode).toHaveLength(0);
      expect(fileSet(await searchAll(index, "vs_w", mode, { type: "ne", key: "author", value: "zoe" })).has(4), mode).toBe(true);
    }
  });

  it("rejects bad chunks without writing anything", async () => {
    const before = await index.stats("vs_w");
    const good = smallCorpus()[0]!;
    await expect(index.addChunks("vs_w", [{ ...good, chunkId: "new-1" }, { ...good, chunkId: "new-2", vector: new Float32Array(8).fill(1) }])).rejects.toThrow(/different lengths/);
    await expect(index.addChunks("vs_w", [{ ...good, chunkId: "new-3", vector: new Float32Array(32).fill(1) }])).rejects.toThrow(/dimensions/);
    await expect(index.addChunks("vs_w", [{ ...good, chunkId: "new-4", vector: new Float32Array(DIM) }])).rejects.toThrow(/non-zero/);
    await expect(index.addChunks("vs_w", [{ ...good, chunkId: "new-5", attributes: { a: null as unknown as string } }])).rejects.toThrow(/attribute/);
    expect(await index.stats("vs_w")).toEqual(before);
    await expect(index.search("vs_w", { text: ["x"], vector: [new Float32Array(32).fill(1)], limit: 1 })).rejects.toThrow(/dimensions/);
    await expect(index.search("vs_w", { text: ["x"], limit: 0 })).rejects.toThrow(RangeError);
    await expect(index.search("vs_w", { text: ["x"], limit: 1, mode: "dense" })).rejects.toThrow(/vectors/);
  });

  it("dropStore forgets everything; the id can be reused", async () => {
    await index.dropStore("vs_w");
    expect(await index.stats("vs_w")).toEqual({ chunks: 0, bytes: 0 });
    expect(await searchAll(index, "vs_w", "hybrid")).toEqual([]);
    expect(index.inspect("vs_w").loaded).toBe(false);
    const ftsTables = store.db.prepare(`SELECT name FROM sqlite_schema WHERE name GLOB 'search_fts_*' AND type = 'table' AND sql IS NOT NULL AND sql LIKE '%fts5%'`).pluck().all();
    expect(ftsTables).toEqual([]); // the store's FTS table went with it
    const rows = (table: string) => store.db.prepare(`SELECT count(*) FROM ${table}`).pluck().get();
    expect([rows("search_chunks"), rows("search_vectors"), rows("search_files"), rows("search_attrs")]).toEqual([0, 0, 0, 0]);
    await index.addChunks("vs_w", smallCorpus().slice(0, 5));
    for (const mode of MODES) expect((await searchAll(index, "vs_w", mode)).length, mode).toBe(5);
    const leftovers = await index.search("vs_w", { text: ["file4word"], limit: 10, mode: "lexical" });
    expect(leftovers).toEqual([]);
  });

  it("stores are isolated", async () => {
    await index.addChunks("vs_other", [{ chunkId: "x", fileId: "file-0", index: 0, text: "Atrium other store", tokens: 3, vector: embed("Atrium other store"), attributes: {} }]);
    for (const mode of MODES) {
      expect((await searchAll(index, "vs_other", mode)).map((h) => h.chunkId), mode).toEqual(["x"]);
      expect((await searchAll(index, "vs_w", mode)).some((h) => h.chunkId === "x"), mode).toBe(false);
    }
  });
});

// ---------- query text ----------

describe("lexical queries", () => {
  let store: SqliteRecordStore;
  let index: SqliteSearchIndex;
  beforeAll(async () => {
    ({ store } = openStore());
    index = new SqliteSearchIndex(store.db);
    const texts = [
      "The café serves crème brûlée and espresso",
      "Tokyo 東京 is the capital of Japan",
      "Use C++ templates AND generics carefully",
      "The runner was running in the park",
      'He said "hello" (twice) with a star * and NEAR the door',
      "Ünïcödé diacritics everywhere",
    ];
    await index.addChunks(
      "vs_q",
      texts.map((text, i) => ({ chunkId: `q${i}`, fileId: `file-${i}`, index: 0, text, tokens: 5, attributes: {} })),
    );
  });
  afterAll(async () => {
    await index.close();
    await store.close();
  });

  const lex = async (text: string) => (await index.search("vs_q", { text: [text], limit: 10 })).map((h) => h.chunkId);

  it("never a syntax error, whatever the punctuation or operators", async () => {
    const nasty = [
      '"', '"unbalanced', "AND", "OR NOT", "*", "(", ")", "((a", "a AND", "NEAR(", "NEAR(a b, 2)", "text:café", "store:1", "-", "^a",
      "a OR", "\\", "'", "{a b}: c", "col : x", "+", "a*", "🙂", "\u0000", "\u0301", "", "   ", "a\"b", "x".repeat(5000),
      Array.from({ length: 500 }, (_, i) => `w${i}`).join(" "),
    ];
    for (const q of nasty) await expect(index.search("vs_q", { text: [q], limit: 5 }), JSON.stringify(q.slice(0, 40))).resolves.toBeDefined();
    expect(await lex("🙂")).toEqual([]);
    expect(await lex("!!! ??? ***")).toEqual([]);
  });

  it("operators and quotes are plain words", async () => {
    expect(await lex('"hello"')).toEqual(["q4"]);
    expect(await lex("NEAR")).toEqual(["q4"]);
    expect(await lex("(twice")).toEqual(["q4"]);
    expect(await lex("C++ AND templates*")).toEqual(["q2"]);
    expect(await lex("generics OR espresso")).toEqual(expect.arrayContaining(["q0", "q2"]));
  });

  it("stemming, diacritics and unicode", async () => {
    expect(await lex("runs")).toEqual(["q3"]); // porter: running → run ← runs
    expect(await lex("cafe creme brulee")).toEqual(["q0"]);
    expect(await lex("CAFÉ")).toEqual(["q0"]);
    expect(await lex("unicode")).toEqual(["q5"]);
    expect(await lex("東京")).toEqual(["q1"]);
  });

  it("stop words are dropped, unless the query is only stop words", async () => {
    expect(await lex("the capital")).toEqual(["q1"]); // "the" alone matches four chunks
    expect((await lex("the")).sort()).toEqual(["q0", "q1", "q3", "q4"]);
    expect(await lex("of and with")).toEqual(expect.arrayContaining(["q1"]));
  });

  it("terms too common for the lexical budget are left out, rarest kept", async () => {
    const { store: s2 } = openStore();
    const small = new SqliteSearchIndex(s2.db, { lexicalBudget: 20 });
    await small.addChunks("vs_b", smallCorpus());
    const lexB = async (text: string) => small.search("vs_b", { text: [text], limit: 50 });
    const hybridB = async (text: string) => small.search("vs_b", { text: [text], vector: [embed(text)], limit: 50, mode: "hybrid" });
    // "atrium" is in all 50 chunks: in more than half, dropped; "file3word" (5 chunks) decides.
    expect(fileSet(await lexB("atrium file3word"))).toEqual(only(3));
    expect(await lexB("atrium file3word")).toHaveLength(5);
    // "fast" is in 20 chunks (exactly the budget), "slowly" in 30: over it once "fast" is taken.
    expect(await lexB("fast")).toHaveLength(20);
    expect(await lexB("fast slowly")).toHaveLength(20);
    // Nothing fits: lexical mode uses the rarest term alone; hybrid leaves lexical out.
    expect(await lexB("slowly")).toHaveLength(30);
    expect(await lexB("atrium")).toHaveLength(50);
    expect(await lexB("atrium slowly")).toHaveLength(30);
    const h = await hybridB("slowly");
    expect(h).toHaveLength(50); // the dense list alone: every chunk has a vector
    expect(h[0]!.score).toBeCloseTo(Math.max(0, Math.min(1, h[0]!.score)), 9);
    const roomy = new SqliteSearchIndex(s2.db);
    expect(await roomy.search("vs_b", { text: ["atrium file3word"], limit: 50 })).toHaveLength(50);
    await small.close();
    await roomy.close();
    await s2.close();
  });

  it("rewriteQuery", () => {
    expect(rewriteQuery("What's the Return-Policy for EU orders?!")).toBe("whats return policy eu orders");
    expect(rewriteQuery("  The   Who  ")).toBe("the who");
    expect(rewriteQuery("Crème  brûlée, s'il vous plaît")).toBe("crème brûlée sil vous plaît");
    expect(rewriteQuery("!!!")).toBe("");
    expect(rewriteQuery("ＡＢＣ ①")).toBe("abc 1");
  });
});

// ---------- scores ----------

describe("scores", () => {
  let store: SqliteRecordStore;
  let index: SqliteSearchIndex;
  beforeAll(async () => {
    ({ store } = openStore());
    index = new SqliteSearchIndex(store.db);
    await index.addChunks("vs_s", smallCorpus());
  });
  afterAll(async () => {
    await index.close();
    await store.close();
  });

  it("are in [0, 1], never NaN, best first, in every mode and with several queries", async () => {
    const queries = ["quantum particles", "pasta", "Atrium", "nothing matches this", "file3word runs", "🙂"];
    for (const mode of MODES) {
      for (const text of [[queries[0]!], queries]) {
        const hits = await index.search("vs_s", { text, vector: mode === "lexical" ? undefined : text.map(embed), limit: 50, mode });
        expect(hits.length).toBeGreaterThan(0);
        for (let i = 0; i < hits.length; i++) {
          expect(Number.isNaN(hits[i]!.score)).toBe(false);
          expect(hits[i]!.score).toBeGreaterThanOrEqual(0);
          expect(hits[i]!.score).toBeLessThanOrEqual(1);
          if (i > 0) expect(hits[i]!.score).toBeLessThanOrEqual(hits[i - 1]!.score);
        }
      }
    }
  });

  it("dense scores are cosine similarities; hybrid = fused rank × similarity", async () => {
    const chunk = smallCorpus()[7]!;
    const [top] = await index.search("vs_s", { text: [chunk.text], vector: [chunk.vector!], limit: 1, mode: "dense" });
    expect(top!.chunkId).toBe(chunk.chunkId);
    expect(top!.score).toBeCloseTo(1, 5);
    const [h] = await index.search("vs_s", { text: [chunk.text], vector: [chunk.vector!], limit: 1, mode: "hybrid" });
    expect(h!.chunkId).toBe(chunk.chunkId); // first in both lists: rank 1 × similarity 1
    expect(h!.score).toBeCloseTo(1, 5);
    // An unrelated vector: the best hit is first in its list but scores low.
    const unrelated = embed("zebra xylophone quilt");
    const [u] = await index.search("vs_s", { text: ["zebra"], vector: [unrelated], limit: 1, mode: "hybrid" });
    expect(u!.score).toBeLessThan(0.5);
  });

  it("score_threshold drops hits below it", async () => {
    const q = { text: ["quantum physics"], vector: [embed("quantum physics")], limit: 50 };
    const all = await index.search("vs_s", q);
    const cut = await index.search("vs_s", { ...q, scoreThreshold: 0.3 });
    expect(cut.length).toBeGreaterThan(0);
    expect(cut.length).toBeLessThan(all.length);
    expect(cut).toEqual(all.filter((h) => h.score >= 0.3).slice(0, 50));
    expect(await index.search("vs_s", { ...q, scoreThreshold: 1.01 })).toEqual([]);
    expect(await index.search("vs_s", { ...q, scoreThreshold: 0 })).toEqual(all);
  });

  it("the limit caps the hits", async () => {
    expect(await index.search("vs_s", { text: ["Atrium"], vector: [embed("Atrium")], limit: 3 })).toHaveLength(3);
    expect(await index.search("vs_unknown", { text: ["Atrium"], limit: 3 })).toEqual([]);
  });
});

// ---------- persistence and other connections ----------

describe("HNSW graph kept beside the database, and changes from another connection", () => {
  it("reloads the kept graph (no rebuild), reconciles changes, sees another connection's writes", async () => {
    const { store, file } = openStore();
    const a = new SqliteSearchIndex(store.db, { annThreshold: 10 });
    await a.addChunks("vs_p", smallCorpus());
    await a.settle("vs_p");
    expect(a.inspect("vs_p").ann).toBe("ready");
    const kept = fs.readdirSync(`${file}.search`);
    expect(kept).toEqual(["1.hnsw"]);
    await a.close();

    // Changed while nobody held the graph: one file gone, one chunk added.
    const b = new SqliteSearchIndex(store.db, { annThreshold: 10 });
    await b.removeFile("vs_p", "file-0");
    await b.addChunks("vs_p", [{ chunkId: "late", fileId: "file-late", index: 0, text: "Atrium late arrival", tokens: 3, vector: embed("Atrium late arrival"), attributes: { late: true } }]);
    const q = { text: ["Atrium notes"], vector: [embed("Atrium notes")], limit: 50, mode: "dense" as const };
    const hits = await b.search("vs_p", q);
    expect(b.inspect("vs_p")).toMatchObject({ ann: "ready", vectors: 46, tombstones: 5 }); // loaded, not rebuilt
    expect(hits).toHaveLength(46);
    expect(fileSet(hits.filter((h) => h.fileId !== "file-late")).has(0)).toBe(false);
    expect(hits.some((h) => h.chunkId === "late")).toBe(true);

    // A second connection to the same file (another process, in effect) writes; b notices.
    const other = new Database(file);
    const c = new SqliteSearchIndex(other, { annThreshold: 10, indexDir: null });
    await c.addChunks("vs_p", [{ chunkId: "elsewhere", fileId: "file-x", index: 0, text: "Atrium written elsewhere", tokens: 3, vector: embed("Atrium written elsewhere"), attributes: {} }]);
    await c.removeFile("vs_p", "file-1");
    const seen = await b.search("vs_p", q);
    expect(seen.some((h) => h.chunkId === "elsewhere")).toBe(true);
    expect(seen.some((h) => h.fileId === "file-1")).toBe(false);
    expect(seen).toHaveLength(42);
    await c.close();
    other.close();
    // Every vector belongs to a chunk (deletes are explicit, not left to foreign keys).
    expect(store.db.prepare(`SELECT count(*) FROM search_vectors WHERE id NOT IN (SELECT id FROM search_chunks)`).pluck().get()).toBe(0);
    await b.close();
    await store.close();
  });
});

describe("write upkeep off the writing transaction: FTS merges in steps, WAL checkpoints in a worker", () => {
  it("many small writes end in few FTS segments (automerge off, the index merges), ranked as after a full optimize; the worker checkpoints the log", async () => {
    const { store, file } = openStore();
    const index = new SqliteSearchIndex(store.db, { indexDir: null });
    const corpus = smallCorpus();
    // 300 one-chunk writes: each commit adds an FTS segment.
    for (let i = 0; i < 300; i++) {
      const c = corpus[i % corpus.length]!;
      await index.addChunks("vs_m", [{ ...c, chunkId: `m${i}`, index: i, text: `${c.text} extra${i % 7} item${i}` }]);
    }
    const ord = store.db.prepare(`SELECT ord FROM search_stores WHERE store_id = 'vs_m'`).pluck().get() as number;
    const t = `search_fts_${ord}`;
    const config = Object.fromEntries(store.db.prepare(`SELECT k, v FROM ${t}_config WHERE k IN ('automerge', 'crisismerge')`).raw().all() as Array<[string, number]>);
    expect(config).toEqual({ automerge: 0, crisismerge: 64 });
    // Without the index's merge steps, 300 commits under a crisis merge at 64 leave ~48 segments.
    const segments = store.db.prepare(`SELECT count(DISTINCT segid) FROM ${t}_idx`).pluck().get() as number;
    expect(segments).toBeLessThan(20);

    const queries = ["Atrium notes extra3", "running fast item17", "runs slowly extra5 part"];
    const ranked = async () => Promise.all(queries.map(async (q) => (await index.search("vs_m", { text: [q], limit: 20, mode: "lexical" })).map((h) => [h.chunkId, h.score])));
    const before = await ranked();
    expect(before.every((r) => r.length === 20)).toBe(true);
    store.db.exec(`INSERT INTO ${t} (${t}) VALUES ('optimize')`);
    expect(await ranked()).toEqual(before);

    // The checkpoint worker copied the log into the database file: a copy of that file alone
    // (no -wal beside it) holds the chunks.
    for (let i = 0; i < 400 && (index.walCheckpoints()!.done === 0 || index.walCheckpoints()!.busy); i++) await new Promise((r) => setTimeout(r, 25));
    const cp = index.walCheckpoints()!;
    expect(cp).toMatchObject({ lastError: null, busy: false });
    expect(cp.done).toBeGreaterThan(0);
    expect(cp.last!.copied).toBeGreaterThan(0);
    const copy = `${file}.copy`;
    fs.copyFileSync(file, copy);
    const alone = new Database(copy);
    expect(alone.prepare(`SELECT count(*) FROM search_chunks WHERE store_id = 'vs_m'`).pluck().get()).toBeGreaterThan(0);
    alone.close();
    await index.close();
    await store.close();
  });

  it("an in-memory database has no checkpoint worker", async () => {
    const store = openSqliteRecordStore(":memory:");
    const index = SqliteSearchIndex.fromStore(store);
    expect(index.walCheckpoints()).toBeNull();
    await index.close();
    await store.close();
  });
});

// ---------- the validator ----------

describe("validateFilter", () => {
  const fails = (json: unknown, path: string, message?: RegExp, root?: string) => {
    try {
      validateFilter(json, root);
    } catch (e) {
      expect(e).toBeInstanceOf(FilterError);
      expect((e as FilterError).path).toBe(path);
      if (message) expect((e as Error).message).toMatch(message);
      return;
    }
    throw new Error(`accepted ${JSON.stringify(json)}`);
  };

  it("names the JSON path of the bad part", () => {
    fails(null, "filters", /filter object/);
    fails([], "filters");
    fails("eq", "filters");
    fails({}, "filters.type", /Missing/);
    fails({ type: "like", key: "a", value: "b" }, "filters.type", /eq, ne/);
    fails({ type: 3 }, "filters.type");
    fails({ type: "and", filters: [{ type: "eq", key: "a", value: 1 }, { type: "bogus" }] }, "filters.filters[1].type");
    fails({ type: "and" }, "filters.filters", /Missing/);
    fails({ type: "or", filters: {} }, "filters.filters", /array/);
    fails({ type: "eq", value: 1 }, "filters.key", /Missing/);
    fails({ type: "eq", key: 5, value: 1 }, "filters.key");
    fails({ type: "eq", key: "", value: 1 }, "filters.key");
    fails({ type: "eq", key: "a" }, "filters.value", /Missing/);
    fails({ type: "eq", key: "a", value: null }, "filters.value");
    fails({ type: "eq", key: "a", value: [1] }, "filters.value");
    fails({ type: "ne", key: "a", value: { x: 1 } }, "filters.value");
    fails({ type: "gt", key: "a", value: "2020" }, "filters.value", /number/);
    fails({ type: "lte", key: "a", value: true }, "filters.value");
    fails({ type: "in", key: "a", value: "x" }, "filters.value", /array/);
    fails({ type: "nin", key: "a", value: [1, true] }, "filters.value[1]");
    fails({ type: "in", key: "a", value: ["x", null] }, "filters.value[1]");
    fails({ type: "in", key: "a", value: Array.from({ length: 1001 }, (_, i) => i) }, "filters.value");
    fails({ type: "eq", key: "a", value: 1, extra: 2 }, "filters.extra", /Unrecognized/);
    fails({ type: "and", filters: [], key: "a" }, "filters.key", /Unrecognized/);
    fails({ type: "or", filters: [{ type: "and", filters: [{ type: "eq", key: "k", value: 1 }, { type: "in", key: "k", value: [{}] }] }] }, "filters.filters[0].filters[1].value[0]");
  });

  it("custom root path", () => {
    fails({ type: "eq", key: "a" }, "attribute_filter.value", undefined, "attribute_filter");
  });

  it("limits nesting depth (10 compound levels) and size", () => {
    const nest = (levels: number): unknown => (levels === 0 ? { type: "eq", key: "a", value: 1 } : { type: "and", filters: [nest(levels - 1)] });
    expect(() => validateFilter(nest(10))).not.toThrow();
    fails(nest(11), "filters" + ".filters[0]".repeat(10), /10 levels/);
    fails({ type: "or", filters: Array.from({ length: 257 }, () => ({ type: "eq", key: "a", value: 1 })) }, "filters.filters[256]", /comparisons/);
  });

  it("returns a clean typed copy", () => {
    const json = { type: "and", filters: [{ type: "in", key: "a", value: [1, "x"] }, { type: "eq", key: "b", value: false }] };
    const f = validateFilter(json);
    expect(f).toEqual(json);
    expect(f).not.toBe(json);
  });
});

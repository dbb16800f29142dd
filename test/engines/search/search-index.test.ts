/**
 * The search index contract (src/engines/search, types.ts), held on both engines from one file:
 * `SqliteSearchIndex` on a temporary SQLite file and `PostgresSearchIndex` on a database of the
 * tests' private PostgreSQL cluster (test/shared/postgres.ts). Filter semantics for every operator
 * in the lexical, dense (exact and HNSW) and hybrid retrievers, filters never cutting results
 * short, idempotent writes, removal, attribute updates, query text, scores, and the dense cache's
 * memory budget. What only one engine has (graph files and WAL upkeep; the change log across
 * instances) is tested beside it: sqlite-index.test.ts, postgres/postgres-index.test.ts.
 *
 * Vectors are synthetic (bag-of-words hashing, 64 dimensions): no neural model involved.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  FilterError,
  matchesFilter,
  rewriteQuery,
  SEARCH_MIGRATION,
  SqliteSearchIndex,
  denseCacheBytesFromEnv,
  validateFilter,
  type Attributes,
  type ChunkInput,
  type DenseInfo,
  type Filter,
  type SearchIndex,
} from "../../../src/engines/search/index.js";
import type { SearchIndexOptions } from "../../../src/engines/search/hybrid-search.js";
import { PostgresSearchIndex, poolStore } from "../../../src/engines/search/postgres/index.js";
import { openSqliteRecordStore } from "../../../src/storage/sqlite-records.js";
import { testPostgres } from "../../shared/postgres.js";
import { ALL, ATTRS, DIM, embed, eq, FILTER_CASES, fileSet, MODES, mulberry32, only, searchAll, smallCorpus, TOPICS } from "../../shared/search-fixtures.js";

/** What the tests use of an index: the contract, plus the diagnostics both indexes have. */
type TestIndex = SearchIndex & {
  settle(storeId?: string): Promise<void>;
  inspect(storeId: string): DenseInfo;
  readonly denseEvictions: number;
  denseReads(): { full: number; delta: number };
  close(): Promise<void>;
};

type Options = SearchIndexOptions & { textIndex?: "auto" | "gin" };

/** An index on a database of its own, and more indexes on that same database (another process or instance). */
interface Opened {
  index: TestIndex;
  another(opts?: Options): Promise<TestIndex>;
  /** Rows left in the index's tables (after a drop: all zero). */
  rowCounts(): Promise<Record<string, number>>;
  close(): Promise<void>;
}

interface Engine {
  name: string;
  /** The text-index variants worth running the lexical cases on. */
  textIndexes: Array<"auto" | "gin" | undefined>;
  open(opts?: Options): Promise<Opened>;
}

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-search-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let dbCount = 0;

const sqlite: Engine = {
  name: "SQLite",
  textIndexes: [undefined],
  async open(opts = {}) {
    const { textIndex: _, ...rest } = opts;
    const store = openSqliteRecordStore(path.join(tmpRoot, `db-${++dbCount}.sqlite`), { migrations: [SEARCH_MIGRATION] });
    const indexes: SqliteSearchIndex[] = [];
    const make = (o: Options) => {
      const { textIndex: _t, ...r } = o;
      const index = new SqliteSearchIndex(store.db, r);
      indexes.push(index);
      return index;
    };
    const index = make(rest);
    return {
      index,
      another: async (o = {}) => make(o),
      async rowCounts() {
        const count = (sql: string) => store.db.prepare(sql).pluck().get() as number;
        const counts: Record<string, number> = {};
        for (const t of ["search_chunks", "search_vectors", "search_files", "search_attrs", "search_stores"]) counts[t] = count(`SELECT count(*) FROM ${t}`);
        counts.fts_tables = count(`SELECT count(*) FROM sqlite_schema WHERE name GLOB 'search_fts_*' AND type = 'table' AND sql LIKE '%fts5%'`);
        return counts;
      },
      async close() {
        for (const i of indexes) await i.close();
        await store.close();
      },
    };
  },
};

const pools: pg.Pool[] = [];
afterAll(async () => {
  for (const p of pools) await p.end();
});

const postgres: Engine = {
  name: "PostgreSQL",
  textIndexes: ["auto", "gin"], // auto: RUM where the extension is installed
  async open(opts = {}) {
    const url = await (await testPostgres()).newDatabase("search");
    const indexes: PostgresSearchIndex[] = [];
    const make = (o: Options) => {
      const pool = new pg.Pool({ connectionString: url, max: 4 });
      pools.push(pool);
      const index = PostgresSearchIndex.fromStore(poolStore(pool), o);
      indexes.push(index);
      return { index, pool };
    };
    const { index, pool } = make(opts);
    await index.ready();
    return {
      index,
      another: async (o = {}) => make(o).index,
      async rowCounts() {
        const counts: Record<string, number> = {};
        for (const t of ["search_chunks", "search_vectors", "search_files", "search_attrs", "search_stores", "search_changes", "search_terms"]) {
          counts[t] = Number((await pool.query(`SELECT count(*) FROM ${t}`)).rows[0].count);
        }
        return counts;
      },
      async close() {
        for (const i of indexes) await i.close();
      },
    };
  },
};

const ENGINES = [sqlite, postgres];

// ---------- filters: exact semantics in every retriever ----------

describe.each([
  ["SQLite", sqlite, "exact dense scan", { annThreshold: 20_000 }],
  ["SQLite", sqlite, "HNSW forced (threshold 10)", { annThreshold: 10 }],
  ["PostgreSQL", postgres, "RUM, exact dense scan", { textIndex: "auto", annThreshold: 20_000 }],
  ["PostgreSQL", postgres, "GIN, HNSW forced (threshold 10)", { textIndex: "gin", annThreshold: 10 }],
] as Array<[string, Engine, string, Options]>)("%s: filter semantics, %s", (_engine, engine, _name, opts) => {
  let db: Opened;
  let index: TestIndex;
  const forced = opts.annThreshold === 10;
  beforeAll(async () => {
    db = await engine.open(opts);
    index = db.index;
    await index.addChunks("vs_1", smallCorpus());
    await index.settle("vs_1");
    expect(index.inspect("vs_1")).toMatchObject({ loaded: true, vectors: 50, ann: forced ? "ready" : "none", lastError: null });
  });
  afterAll(async () => {
    // The forced-HNSW run really went through the graph (filters allowing ≤ 10 chunks scan exactly).
    const { counters } = index.inspect("vs_1");
    if (forced) expect(counters.ann).toBeGreaterThan(50);
    else expect(counters.ann).toBe(0);
    await db.close();
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
    const rnd = mulberry32(opts.annThreshold!);
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

describe.each(ENGINES)("$name: a selective filter never cuts results short", (engine) => {
  let db: Opened;
  let index: TestIndex;
  const RARE = [150, 151, 152]; // topics unrelated to the query, far down the ranking
  beforeAll(async () => {
    db = await engine.open({ annThreshold: 200 });
    index = db.index;
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
  afterAll(() => db.close());

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
    // Same query against an index on the same database that only scans exactly.
    const exact = await db.another({ annThreshold: 1e9 });
    const ref = await exact.search("vs_big", { text: [query], vector: [q], limit: 50, mode: "dense", filter });
    const refIds = new Set(ref.map((h) => h.chunkId));
    const overlap = hits.filter((h) => refIds.has(h.chunkId)).length;
    expect(overlap / 50).toBeGreaterThanOrEqual(0.9);
    expect(hits[0]!.score).toBeCloseTo(ref[0]!.score, 5);
    expect(index.inspect("vs_big").counters).toMatchObject({ ann: before.ann + 1, fallback: before.fallback });
  });
});

// ---------- writes ----------

describe.each(ENGINES)("$name: writes", (engine) => {
  let db: Opened;
  let index: TestIndex;
  beforeAll(async () => {
    db = await engine.open({ annThreshold: 10 });
    index = db.index;
  });
  afterAll(() => db.close());

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

  it("removeFile removes the file from the text index, the vectors and the graph", async () => {
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

  it("rejects bad chunks and queries without writing anything", async () => {
    const before = await index.stats("vs_w");
    const good = smallCorpus()[0]!;
    await expect(index.addChunks("vs_w", [{ ...good, chunkId: "new-1" }, { ...good, chunkId: "new-2", vector: new Float32Array(8).fill(1) }])).rejects.toThrow(/different lengths/);
    await expect(index.addChunks("vs_w", [{ ...good, chunkId: "new-3", vector: new Float32Array(32).fill(1) }])).rejects.toThrow(/dimensions/);
    await expect(index.addChunks("vs_w", [{ ...good, chunkId: "new-4", vector: new Float32Array(DIM) }])).rejects.toThrow(/non-zero/);
    await expect(index.addChunks("vs_w", [{ ...good, chunkId: "new-5", attributes: { a: null as unknown as string } }])).rejects.toThrow(/attribute/);
    await expect(index.addChunks("vs_w", [{ ...good, chunkId: "new-6", tokens: 1.5 }])).rejects.toThrow(/chunks\[0\]: index and tokens/);
    expect(await index.stats("vs_w")).toEqual(before);
    await expect(index.search("vs_w", { text: ["x"], vector: [new Float32Array(32).fill(1)], limit: 1 })).rejects.toThrow(/dimensions/);
    await expect(index.search("vs_w", { text: ["x"], vector: [new Float32Array(DIM)], limit: 1 })).rejects.toThrow(/vector\[0\]/);
    await expect(index.search("vs_w", { text: ["x"], limit: 0 })).rejects.toThrow(RangeError);
    await expect(index.search("vs_w", { text: ["x"], limit: 1, mode: "dense" })).rejects.toThrow(/vectors/);
  });

  it("dropStore forgets everything; the id can be reused", async () => {
    await index.dropStore("vs_w");
    expect(await index.stats("vs_w")).toEqual({ chunks: 0, bytes: 0 });
    expect(await searchAll(index, "vs_w", "hybrid")).toEqual([]);
    expect(index.inspect("vs_w").loaded).toBe(false);
    const counts = await db.rowCounts();
    expect(counts).toEqual(Object.fromEntries(Object.keys(counts).map((k) => [k, 0])));
    await index.addChunks("vs_w", smallCorpus().slice(0, 5));
    for (const mode of MODES) expect((await searchAll(index, "vs_w", mode)).length, mode).toBe(5);
    expect(await index.search("vs_w", { text: ["file4word"], limit: 10, mode: "lexical" })).toEqual([]);
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

describe.each(ENGINES.flatMap((e) => e.textIndexes.map((t) => [e.name, t ?? "FTS5", e, t] as const)))("%s: lexical queries (%s)", (_engine, _label, engine, textIndex) => {
  let db: Opened;
  let index: TestIndex;
  beforeAll(async () => {
    db = await engine.open({ textIndex });
    index = db.index;
    const texts = [
      "The café serves crème brûlée and espresso",
      "Tokyo 東京 is the capital of Japan",
      "Use C++ templates AND generics carefully",
      "The runner was running in the park",
      'He said "hello" (twice) with a star * and NEAR the door',
      "Ünïcödé diacritics everywhere",
    ];
    await index.addChunks("vs_q", texts.map((text, i) => ({ chunkId: `q${i}`, fileId: `file-${i}`, index: 0, text, tokens: 5, attributes: {} })));
  });
  afterAll(() => db.close());

  const lex = async (text: string) => (await index.search("vs_q", { text: [text], limit: 10 })).map((h) => h.chunkId);

  it("never a syntax error, whatever the punctuation or operators", async () => {
    const nasty = [
      '"', '"unbalanced', "AND", "OR NOT", "*", "(", ")", "((a", "a AND", "NEAR(", "NEAR(a b, 2)", "text:café", "store:1", "-", "^a",
      "a OR", "\\", "'", "{a b}: c", "col : x", "+", "a*", "a & b", "a | !b", "a:*", "<->", "🙂", "\u0000", "\u0301", "", "   ", "a\"b",
      "x".repeat(5000), Array.from({ length: 500 }, (_, i) => `w${i}`).join(" "),
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
    expect(await lex("runs")).toEqual(["q3"]); // stemmed: running → run ← runs
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
    const budgeted = await engine.open({ textIndex, lexicalBudget: 20 });
    const small = budgeted.index;
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
    const roomy = await budgeted.another({ textIndex });
    expect(await roomy.search("vs_b", { text: ["atrium file3word"], limit: 50 })).toHaveLength(50);
    await budgeted.close();
  });
});

// ---------- scores ----------

describe.each(ENGINES)("$name: scores", (engine) => {
  let db: Opened;
  let index: TestIndex;
  beforeAll(async () => {
    db = await engine.open();
    index = db.index;
    await index.addChunks("vs_s", smallCorpus());
  });
  afterAll(() => db.close());

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

  it("query vectors given as a promise: the same hits; a failed or malformed one fails the search", async () => {
    const text = ["quantum particles", "pasta"];
    for (const mode of ["hybrid", "dense"] as const) {
      const given = await index.search("vs_s", { text, vector: text.map(embed), limit: 20, mode });
      expect(given.length).toBeGreaterThan(0);
      expect(await index.search("vs_s", { text, vector: Promise.resolve(text.map(embed)), limit: 20, mode })).toEqual(given);
    }
    const down = new Error("the encoder is down");
    await expect(index.search("vs_s", { text, vector: Promise.reject(down), limit: 20 })).rejects.toBe(down);
    await expect(index.search("vs_s", { text, vector: Promise.resolve([embed("pasta")]), limit: 20 })).rejects.toThrow(/one embedding per text/);
    await expect(index.search("vs_s", { text, vector: [embed("pasta")], limit: 20 })).rejects.toThrow(/one embedding per text/);
  });

  it("the limit caps the hits", async () => {
    expect(await index.search("vs_s", { text: ["Atrium"], vector: [embed("Atrium")], limit: 3 })).toHaveLength(3);
    expect(await index.search("vs_unknown", { text: ["Atrium"], limit: 3 })).toEqual([]);
  });
});

// ---------- memory: the dense cache keeps within its bytes ----------

describe.each(ENGINES)("$name: dense cache budget", (engine) => {
  const perStore = 50 * DIM * 4; // 50 vectors, no graph under the threshold

  it("unloads the stores searched least recently past the budget; an unloaded store reloads with the same answers", async () => {
    const db = await engine.open({ annThreshold: 20_000, denseCacheBytes: 2.5 * perStore });
    const index = db.index;
    try {
      for (const id of ["vs_a", "vs_b", "vs_c"]) await index.addChunks(id, smallCorpus());
      const first = await searchAll(index, "vs_a", "dense");
      await searchAll(index, "vs_b", "dense");
      expect(index.denseEvictions).toBe(0);
      await searchAll(index, "vs_c", "dense");
      expect(index.denseEvictions).toBe(1);
      expect(index.inspect("vs_a").loaded).toBe(false);
      expect(index.inspect("vs_b").loaded && index.inspect("vs_c").loaded).toBe(true);
      expect(index.denseReads().full).toBe(3);
      // vs_a comes back from the database; vs_b is now the least recently searched.
      expect((await searchAll(index, "vs_a", "dense")).map((h) => [h.chunkId, h.score])).toEqual(first.map((h) => [h.chunkId, h.score]));
      expect(index.inspect("vs_b").loaded).toBe(false);
      expect(index.denseEvictions).toBe(2);
      expect(index.denseReads().full).toBe(4);
    } finally {
      await db.close();
    }
  });

  it("a store larger than the whole budget is still searched, and unloaded by the next store searched", async () => {
    const db = await engine.open({ annThreshold: 20_000, denseCacheBytes: 0.5 * perStore });
    const index = db.index;
    try {
      for (const id of ["vs_a", "vs_b"]) await index.addChunks(id, smallCorpus());
      expect(await searchAll(index, "vs_a", "dense")).toHaveLength(50);
      expect(index.inspect("vs_a")).toMatchObject({ loaded: true, vectors: 50 });
      expect(await searchAll(index, "vs_a", "hybrid")).toHaveLength(50);
      expect(index.denseEvictions).toBe(0);
      expect(await searchAll(index, "vs_b", "dense")).toHaveLength(50);
      expect(index.inspect("vs_a").loaded).toBe(false);
      expect(index.inspect("vs_b").loaded).toBe(true);
      expect(index.denseEvictions).toBe(1);
      // A write to an unloaded store is found by its next search, which loads it again.
      await index.addChunks("vs_a", [{ chunkId: "late", fileId: "file-late", index: 0, text: "Atrium late arrival", tokens: 3, vector: embed("Atrium late arrival"), attributes: {} }]);
      expect((await searchAll(index, "vs_a", "dense")).some((h) => h.chunkId === "late")).toBe(true);
      expect(index.inspect("vs_b").loaded).toBe(false);
    } finally {
      await db.close();
    }
  });
});

// ---------- engine-neutral pieces ----------

describe("ATRIUM_SEARCH_CACHE_MB", () => {
  it("sets the dense cache's budget (default 1024 MiB)", () => {
    expect(denseCacheBytesFromEnv({})).toBe(1024 * 2 ** 20);
    expect(denseCacheBytesFromEnv({ ATRIUM_SEARCH_CACHE_MB: "64" })).toBe(64 * 2 ** 20);
    expect(() => denseCacheBytesFromEnv({ ATRIUM_SEARCH_CACHE_MB: "0" })).toThrow(/ATRIUM_SEARCH_CACHE_MB/);
  });
});

describe("rewriteQuery", () => {
  it("normalises, drops punctuation and stop words", () => {
    expect(rewriteQuery("What's the Return-Policy for EU orders?!")).toBe("whats return policy eu orders");
    expect(rewriteQuery("  The   Who  ")).toBe("the who");
    expect(rewriteQuery("Crème  brûlée, s'il vous plaît")).toBe("crème brûlée sil vous plaît");
    expect(rewriteQuery("!!!")).toBe("");
    expect(rewriteQuery("ＡＢＣ ①")).toBe("abc 1");
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

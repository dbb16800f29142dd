/**
 * What only the SQLite search index has (src/engines/search/sqlite-index.ts): HNSW graph files
 * kept beside the database and reconciled on load, another connection's writes noticed, FTS5
 * merges in steps and WAL checkpoints in a worker. The contract both indexes share is tested on
 * both from search-index.test.ts.
 *
 * Vectors are synthetic (bag-of-words hashing, 64 dimensions): no neural model involved.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { SEARCH_MIGRATION, SqliteSearchIndex } from "../../../src/engines/search/index.js";
import { openSqliteRecordStore, type SqliteRecordStore } from "../../../src/storage/sqlite-records.js";
import { embed, fileSet, smallCorpus } from "../../shared/search-fixtures.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-search-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));
let dbCount = 0;

function openStore(): { store: SqliteRecordStore; file: string } {
  const file = path.join(tmpRoot, `db-${++dbCount}.sqlite`);
  return { store: openSqliteRecordStore(file, { migrations: [SEARCH_MIGRATION] }), file };
}

// ---------- persistence and other connections ----------

describe("HNSW graph kept beside the database, and changes from another connection", () => {
  it("reloads the kept graph (no rebuild), reconciles changes, sees another connection's writes", async () => {
    const { store, file } = openStore();
    const a = new SqliteSearchIndex(store.db, { annThreshold: 10 });
    await a.addChunks("vs_p", smallCorpus());
    await a.settle("vs_p");
    expect(a.inspect("vs_p").ann).toBe("ready");
    const kept = fs.readdirSync(`${file}.search`);
    expect(kept).toEqual(["1.graph"]);
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

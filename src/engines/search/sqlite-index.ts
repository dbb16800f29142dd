/**
 * `SqliteSearchIndex`: the embedded `SearchIndex`, in the record store's SQLite file. The façade
 * over the concept files beside it:
 * - schema.ts: the tables (and the migration the vector stores area registers);
 * - writes.ts: chunk and attribute writes, one transaction each;
 * - fts-tables.ts: the per-store FTS5 tables and their merge upkeep after each write;
 * - lexical-budget.ts: which query terms a lexical search can afford;
 * - sql-filter.ts: filters compiled to SQL, applied before any top-k cut;
 * - dense-cache.ts: the in-memory vectors (and HNSW graph, dense.ts) of each searched store;
 * - hnsw-files.ts: the graph files kept beside the database;
 * - wal-checkpointer.ts: WAL checkpoints in a worker thread while the index writes.
 *
 * The dense side is an in-memory cache of the vectors, loaded on a store's first dense search;
 * the lexical side is SQL only.
 */
import type Database from "better-sqlite3";
import type { SqliteRecordStore } from "../../storage/sqlite-records.js";
import { DenseCache, type DenseInfo } from "./dense-cache.js";
import type { DenseHit, DenseOptions, DenseStore } from "./dense.js";
import { FtsTables, ftsTable } from "./fts-tables.js";
import { fuse, type Ranked } from "./fusion.js";
import { removeGraphFile, sweepGraphFiles } from "./hnsw-files.js";
import { affordableTerms } from "./lexical-budget.js";
import { SEARCH_MIGRATION, type StoreRow } from "./schema.js";
import { compileFilter } from "./sql-filter.js";
import { ftsExpression, queryTerms } from "./text.js";
import { MAX_QUERIES } from "./types.js";
import type { Attributes, ChunkInput, Filter, IndexStats, SearchHit, SearchIndex, SearchMode, SearchQuery } from "./types.js";
import { WalCheckpointer, type CheckpointResult } from "./wal-checkpointer.js";
import { IndexWrites, normalised, type Committed } from "./writes.js";

export type { DenseInfo } from "./dense-cache.js";

export interface SqliteSearchOptions {
  /** A store's dense search uses the HNSW graph past this many candidate vectors (default 20,000). */
  annThreshold?: number;
  /** HNSW degree (default 16). */
  hnswM?: number;
  /** HNSW build breadth (default 100). */
  efConstruction?: number;
  /** HNSW search breadth (default 128; raised to k when k is larger). */
  efSearch?: number;
  /**
   * Where built HNSW graphs are kept, one `<ord>.hnsw` per store. Default: `<database file>.search`
   * beside the database; null (and the default for an in-memory database): not kept, rebuilt
   * after a restart.
   */
  indexDir?: string | null;
  /** Depth of each ranked list fused, as a function of the limit (default clamp(2·limit, 20, 100), at least limit). */
  candidates?: (limit: number) => number;
  /** Reciprocal rank fusion constant (default 60). */
  rrfK?: number;
  /**
   * Most postings one lexical query may walk (default 10,000, ~6 ms). Query terms are taken rarest
   * first while their document frequencies in the store add up to at most this; the commonest
   * terms, which BM25 weighs least, are left out (README.md, "Lexical"; lexical-budget.ts).
   */
  lexicalBudget?: number;
  /**
   * Checkpoint the write-ahead log in a worker thread while the index writes (wal-checkpointer.ts;
   * default true for a database file in WAL mode).
   */
  walCheckpoints?: boolean;
}

const MAX_LIMIT = 1000;

const defaultCandidates = (limit: number) => Math.max(limit, Math.min(100, Math.max(20, 2 * limit)));

export class SqliteSearchIndex implements SearchIndex {
  private readonly denseOpts: DenseOptions;
  private readonly candidates: (limit: number) => number;
  private readonly rrfK: number;
  private readonly lexicalBudget: number;
  private readonly fts: FtsTables;
  private readonly writes: IndexWrites;
  private readonly dense: DenseCache;
  private readonly checkpointer: WalCheckpointer | null;
  private closed = false;

  private readonly sStore: Database.Statement;
  private readonly sHits: Database.Statement;

  /** Applies the search migration through the record store (idempotent), then opens the index on its connection. */
  static fromStore(store: SqliteRecordStore, opts?: SqliteSearchOptions): SqliteSearchIndex {
    store.applyMigrations([SEARCH_MIGRATION]);
    return new SqliteSearchIndex(store.db, opts);
  }

  constructor(
    private readonly db: Database.Database,
    opts: SqliteSearchOptions = {},
  ) {
    const hasTables = db.prepare(`SELECT 1 FROM sqlite_schema WHERE name = 'search_chunks'`).pluck().get();
    if (!hasTables) {
      throw new Error(`search tables missing: use SqliteSearchIndex.fromStore(store), or open the record store with SEARCH_MIGRATION`);
    }
    const fileDb = db.name !== "" && db.name !== ":memory:" && !db.memory;
    this.denseOpts = {
      annThreshold: opts.annThreshold ?? 20_000,
      m: opts.hnswM ?? 16,
      efConstruction: opts.efConstruction ?? 100,
      efSearch: opts.efSearch ?? 128,
      indexDir: opts.indexDir === undefined ? (fileDb ? `${db.name}.search` : null) : opts.indexDir,
    };
    this.candidates = opts.candidates ?? defaultCandidates;
    this.rrfK = opts.rrfK ?? 60;
    this.lexicalBudget = opts.lexicalBudget ?? 10_000;
    const wal = fileDb && String(db.pragma("journal_mode", { simple: true })).toLowerCase() === "wal";
    this.checkpointer = wal && opts.walCheckpoints !== false ? new WalCheckpointer(db.name) : null;

    this.sStore = db.prepare(`SELECT ord, dim, version, chunks, bytes FROM search_stores WHERE store_id = ?`);
    this.sHits = db.prepare(
      `SELECT c.id, c.chunk_id, c.file_id, c.idx, c.tokens, c.text, f.attributes
       FROM search_chunks c LEFT JOIN search_files f ON f.store_id = c.store_id AND f.file_id = c.file_id
       WHERE c.id IN (SELECT value FROM json_each(?))`,
    ).raw();
    this.fts = new FtsTables(db);
    this.writes = new IndexWrites(db, this.fts);
    this.dense = new DenseCache(db, this.denseOpts, (storeId) => this.sStore.get(storeId) as StoreRow | undefined);
    const dir = this.denseOpts.indexDir;
    if (dir) sweepGraphFiles(dir, () => new Set(db.prepare(`SELECT ord FROM search_stores`).pluck().all() as number[]));
  }

  // ---- writes: one SQLite transaction each, then the same change applied to a loaded dense cache ----

  async addChunks(storeId: string, chunks: ChunkInput[]): Promise<void> {
    await this.committed(storeId, this.writes.addChunks(storeId, chunks));
  }

  async removeFile(storeId: string, fileId: string): Promise<void> {
    await this.committed(storeId, this.writes.removeFile(storeId, fileId));
  }

  async updateAttributes(storeId: string, fileId: string, attributes: Attributes): Promise<void> {
    // Filters are evaluated in SQL at search time, so the dense cache needs no change.
    this.writes.updateAttributes(storeId, fileId, attributes);
  }

  async dropStore(storeId: string): Promise<void> {
    const ord = this.writes.dropStore(storeId);
    if (ord !== undefined && this.denseOpts.indexDir) removeGraphFile(this.denseOpts.indexDir, ord);
    this.dense.drop(storeId);
  }

  async stats(storeId: string): Promise<IndexStats> {
    const row = this.sStore.get(storeId) as StoreRow | undefined;
    return { chunks: row?.chunks ?? 0, bytes: row?.bytes ?? 0 };
  }

  /**
   * Brings a loaded dense cache along with a committed write, then the work the write leaves for
   * later, each part after a turn of the event loop: one FTS merge step (fts-tables.ts) and a WAL
   * checkpoint in the checkpoint worker.
   */
  private async committed(storeId: string, change: Committed | null): Promise<void> {
    if (!change) return;
    this.dense.apply(storeId, change.ord, change.version, change.ops);
    await new Promise((r) => setImmediate(r));
    if (this.closed) return;
    this.fts.mergeStep(change.ord, change.bytes);
    this.checkpointer?.afterWrite();
  }

  // ---- search ----

  async search(storeId: string, q: SearchQuery): Promise<SearchHit[]> {
    const { limit, text } = q;
    if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) throw new RangeError(`limit must be an integer in 1..${MAX_LIMIT}`);
    if (!Array.isArray(text) || text.length === 0 || text.length > MAX_QUERIES || text.some((t) => typeof t !== "string")) {
      throw new TypeError(`text must be 1..${MAX_QUERIES} strings`);
    }
    if (q.vector && q.vector.length !== text.length) throw new RangeError(`vector must hold one embedding per text (${text.length})`);
    if (q.mode === "dense" && !q.vector) throw new TypeError(`mode "dense" needs query vectors`);
    const mode: SearchMode = q.vector ? (q.mode ?? "hybrid") : "lexical";

    const store = this.sStore.get(storeId) as StoreRow | undefined;
    if (!store) return [];
    const depth = Math.max(limit, Math.floor(this.candidates(limit)));

    // Dense lists first (the only await), then everything else synchronously on the same snapshot.
    let dense: DenseStore | null = null;
    let queries: Float32Array[] = [];
    const denseLists: DenseHit[][] = [];
    if (mode !== "lexical" && store.dim !== null) {
      queries = q.vector!.map((v, i) => normalised(v, `vector[${i}]`));
      dense = await this.dense.get(storeId, store);
      if (dense.size > 0) {
        let allow: { allowed: Uint8Array; count: number } | undefined;
        if (q.filter) {
          const params: unknown[] = [storeId];
          const cond = compileFilter(q.filter, "f", storeId, params);
          const fileIds = this.db.prepare(`SELECT f.file_id FROM search_files f WHERE f.store_id = ? AND ${cond}`).pluck().all(...params) as string[];
          allow = dense.allow(fileIds);
        }
        for (const v of queries) denseLists.push(dense.search(v, depth, allow));
      }
    }
    const lexicalLists = mode === "dense" ? [] : text.map((t) => this.lexical(storeId, store, t, q.filter, depth, mode === "lexical"));

    const ranked: Ranked[] = fuse({
      mode,
      lexical: lexicalLists,
      dense: denseLists.map((l) => l.map((h) => h.label)),
      rrfK: this.rrfK,
      // Best cosine over the queries, for every candidate (lexical finds included).
      similarity: dense
        ? (label) => {
            let best: number | undefined;
            for (const v of queries) {
              const s = dense!.similarity(label, v);
              if (s !== undefined && (best === undefined || s > best)) best = s;
            }
            return best;
          }
        : () => undefined,
    });

    const threshold = q.scoreThreshold ?? 0;
    const chosen = ranked.filter((r) => r.score >= threshold).slice(0, limit);
    return chosen.length === 0 ? [] : this.hits(chosen);
  }

  /** The chosen chunks' rows, in ranking order (a chunk removed meanwhile is left out). */
  private hits(chosen: Ranked[]): SearchHit[] {
    const rows = this.sHits.all(JSON.stringify(chosen.map((r) => r.label))) as Array<
      [number, string, string, number, number, string, string | null]
    >;
    const byId = new Map(rows.map((r) => [r[0], r]));
    const hits: SearchHit[] = [];
    for (const r of chosen) {
      const row = byId.get(r.label);
      if (!row) continue;
      hits.push({
        fileId: row[2],
        chunkId: row[1],
        index: row[3],
        tokens: row[4],
        score: r.score,
        text: row[5],
        attributes: row[6] ? (JSON.parse(row[6]) as Attributes) : {},
      });
    }
    return hits;
  }

  /** Chunk rowids by BM25 for one query text, the filter applied in the WHERE (before the LIMIT). */
  private lexical(storeId: string, store: StoreRow, text: string, filter: Filter | undefined, depth: number, mustAnswer: boolean): number[] {
    const fts = this.fts.of(store.ord);
    const count = (term: string, cap: number) => fts.count.get(`"${term}"`, cap) as number;
    const expr = ftsExpression(affordableTerms(count, queryTerms(text), store.chunks, mustAnswer, this.lexicalBudget));
    if (!expr) return [];
    if (!filter) return fts.search.all(expr, depth) as number[];
    const params: unknown[] = [];
    const cond = compileFilter(filter, "c", storeId, params);
    const t = ftsTable(store.ord);
    return this.db
      .prepare(
        `SELECT ${t}.rowid FROM ${t} JOIN search_chunks c ON c.id = ${t}.rowid
         WHERE ${t} MATCH ? AND ${cond} ORDER BY bm25(${t}), ${t}.rowid LIMIT ?`,
      )
      .pluck()
      .all(expr, ...params, depth) as number[];
  }

  // ---- lifecycle and diagnostics ----

  /** The dense cache of a store, as it stands. */
  inspect(storeId: string): DenseInfo {
    return this.dense.inspect(storeId);
  }

  /** The WAL checkpoint worker's record; null when it is off (an in-memory database, or `walCheckpoints: false`). */
  walCheckpoints(): { done: number; busy: boolean; last: CheckpointResult | null; lastError: string | null } | null {
    const c = this.checkpointer;
    return c && { done: c.done, busy: c.busy, last: c.last, lastError: c.lastError };
  }

  /**
   * Loads a store's dense cache now (instead of on its first search) and waits for background
   * graph work (builds, drains) of every loaded store to finish. For tests, benchmarks and warm-up.
   */
  async settle(storeId?: string): Promise<void> {
    if (storeId !== undefined) {
      const row = this.sStore.get(storeId) as StoreRow | undefined;
      if (row) await this.dense.get(storeId, row);
    }
    await this.dense.settle();
  }

  /** Stops background work and releases the caches. The database stays open (it is the record store's). */
  async close(): Promise<void> {
    this.closed = true;
    this.dense.close();
    await this.checkpointer?.close();
  }
}

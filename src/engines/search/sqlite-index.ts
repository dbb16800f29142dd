/**
 * `SqliteSearchIndex`: the embedded `SearchIndex`, in the record store's SQLite file. The façade
 * over the concept files beside it:
 * - schema.ts: the tables (and the migration the vector stores area registers);
 * - sqlite-writes.ts: chunk and attribute writes, one transaction each (their checks: writes.ts);
 * - fts-tables.ts: the per-store FTS5 tables and their merge upkeep after each write;
 * - lexical-budget.ts: which query terms a lexical search can afford;
 * - sql-filter.ts: filters compiled to SQL, applied before any top-k cut;
 * - dense-cache.ts: the in-memory vectors (and HNSW graph, dense.ts) of each searched store,
 *   read from this file through `sqliteDenseSource` below;
 * - hnsw-files.ts: the graph files kept beside the database;
 * - wal-checkpointer.ts: WAL checkpoints in a worker thread while the index writes.
 *
 * The search itself is hybrid-search.ts, shared with the PostgreSQL index. The dense side is an
 * in-memory cache of the vectors, loaded on a store's first dense search; the lexical side is SQL only.
 */
import type Database from "better-sqlite3";
import type { SqliteRecordStore } from "../../storage/sqlite-records.js";
import { DenseCache, DenseCachedIndex, type DenseSource, type VectorRow } from "./dense-cache.js";
import { FtsTables, ftsTable } from "./fts-tables.js";
import { removeGraphFile, sweepGraphFiles } from "./hnsw-files.js";
import { checkSearchQuery, denseOptions, runSearch, searchTuning, type ChunkRow, type SearchIndexOptions, type SearchTuning } from "./hybrid-search.js";
import { affordableTerms } from "./lexical-budget.js";
import { SEARCH_MIGRATION, type StoreRow } from "./schema.js";
import { compileFilter } from "./sql-filter.js";
import { IndexWrites, type Committed } from "./sqlite-writes.js";
import { ftsExpression, queryTerms } from "./text.js";
import type { Attributes, ChunkInput, Filter, IndexStats, SearchHit, SearchIndex, SearchQuery } from "./types.js";
import { WalCheckpointer, type CheckpointResult } from "./wal-checkpointer.js";
import { BOUND_LIMIT } from "../../common/sqlite.js";

export type { DenseInfo } from "./dense-cache.js";
export { denseCacheBytesFromEnv } from "./dense-cache.js";

export interface SqliteSearchOptions extends SearchIndexOptions {
  /**
   * Where built HNSW graphs are kept, one `<ord>.graph` per store. Default: `<database file>.search`
   * beside the database; null (and the default for an in-memory database): not kept, rebuilt
   * after a restart.
   */
  indexDir?: string | null;
  /**
   * Checkpoint the write-ahead log in a worker thread while the index writes (wal-checkpointer.ts;
   * default true for a database file in WAL mode).
   */
  walCheckpoints?: boolean;
}

export class SqliteSearchIndex extends DenseCachedIndex<StoreRow> implements SearchIndex {
  private readonly indexDir: string | null;
  private readonly tuning: SearchTuning;
  private readonly fts: FtsTables;
  private readonly writes: IndexWrites;
  protected readonly dense: DenseCache<StoreRow>;
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
    super();
    const hasTables = db.prepare(`SELECT 1 FROM sqlite_schema WHERE name = 'search_chunks'`).pluck().get();
    if (!hasTables) {
      throw new Error(`search tables missing: use SqliteSearchIndex.fromStore(store), or open the record store with SEARCH_MIGRATION`);
    }
    const fileDb = db.name !== "" && db.name !== ":memory:" && !db.memory;
    this.indexDir = opts.indexDir === undefined ? (fileDb ? `${db.name}.search` : null) : opts.indexDir;
    this.tuning = searchTuning(opts);
    const wal = fileDb && String(db.pragma("journal_mode", { simple: true })).toLowerCase() === "wal";
    this.checkpointer = wal && opts.walCheckpoints !== false ? new WalCheckpointer(db.name) : null;

    this.sStore = db.prepare(`SELECT ord, dim, version, chunks, bytes FROM search_stores WHERE store_id = ?`);
    this.sHits = db.prepare(
      `SELECT c.id AS label, c.chunk_id AS chunkId, c.file_id AS fileId, c.idx AS "index", c.tokens, c.text, f.attributes
       FROM search_chunks c LEFT JOIN search_files f ON f.store_id = c.store_id AND f.file_id = c.file_id
       WHERE c.id IN (SELECT value FROM json_each(?))`,
    );
    this.fts = new FtsTables(db);
    this.writes = new IndexWrites(db, this.fts);
    this.dense = new DenseCache(sqliteDenseSource(db), denseOptions(opts, this.indexDir));
    const dir = this.indexDir;
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
    if (ord !== undefined && this.indexDir) removeGraphFile(this.indexDir, ord);
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

  // ---- search (hybrid-search.ts), over FTS5 and the dense cache ----

  async search(storeId: string, q: SearchQuery): Promise<SearchHit[]> {
    const checked = checkSearchQuery(q);
    const store = this.sStore.get(storeId) as StoreRow | undefined;
    if (!store) return [];
    return runSearch(q, checked, {
      lexical: (text, filter, depth, mustAnswer) => this.lexical(storeId, store, text, filter, depth, mustAnswer),
      dense: () => (store.dim === null ? null : this.dense.get(storeId, store)),
      allowedFiles: (filter) => {
        const params: unknown[] = [storeId];
        const cond = compileFilter(filter, "f", storeId, params);
        return this.db.prepare(`SELECT f.file_id FROM search_files f WHERE f.store_id = ? AND ${cond}`).pluck().all(...params) as string[];
      },
      rows: (labels) => this.sHits.all(JSON.stringify(labels)) as ChunkRow[],
    }, this.tuning);
  }

  /** Chunk rowids by BM25 for one query text, the filter applied in the WHERE (before the LIMIT). */
  private lexical(storeId: string, store: StoreRow, text: string, filter: Filter | undefined, depth: number, mustAnswer: boolean): number[] {
    const fts = this.fts.of(store.ord);
    const count = (term: string, cap: number) => fts.count.get(`"${term}"`, cap) as number;
    const expr = ftsExpression(affordableTerms(count, queryTerms(text), store.chunks, mustAnswer, this.tuning.lexicalBudget));
    if (!expr) return [];
    if (!filter) return fts.search.all(expr, depth) as number[];
    const params: unknown[] = [];
    const cond = compileFilter(filter, "c", storeId, params);
    const t = ftsTable(store.ord);
    return this.db
      .prepare(
        `SELECT ${t}.rowid FROM ${t} JOIN search_chunks c ON c.id = ${t}.rowid
         WHERE ${t} MATCH ? AND ${cond} ORDER BY bm25(${t}), ${t}.rowid ${BOUND_LIMIT}`,
      )
      .pluck()
      .all(expr, ...params, depth) as number[];
  }

  // ---- lifecycle and diagnostics ----

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

/**
 * The SQLite file as the dense cache's source. Pages are synchronous reads, so this process's
 * writes apply to a store while it loads. There is no change log: a store another process wrote
 * (a version this process did not make) reloads.
 */
function sqliteDenseSource(db: Database.Database): DenseSource<StoreRow> {
  const sPage = db.prepare(
    `SELECT c.id, c.file_id, v.vector FROM search_chunks c JOIN search_vectors v ON v.id = c.id
     WHERE c.store_id = (SELECT store_id FROM search_stores WHERE ord = ?) AND c.id > ? ORDER BY c.id ${BOUND_LIMIT}`,
  ).raw();
  return {
    pagesReadAtOnce: true,
    page: (row, after, limit) => sPage.all(row.ord, after, limit) as VectorRow[],
    changesSince: async () => null,
  };
}

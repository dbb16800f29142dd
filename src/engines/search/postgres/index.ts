/**
 * `PostgresSearchIndex`: the `SearchIndex` for instances sharing one PostgreSQL database (issue 19,
 * "Search across instances"). The façade over the files beside it:
 * - schema.ts: the tables, the text search configuration and the RUM or GIN text index;
 * - writes.ts: chunk and attribute writes, one transaction each, with the store's change log;
 * - lexical.ts: full-text search cut like the SQLite path's (text.ts), under the same postings budget;
 * - filter-sql.ts: filters compiled to SQL, applied before any top-k cut in both retrievers;
 * - dense-source.ts: where each instance's dense cache (../dense-cache.ts) reads vectors and the change log.
 * The search itself, the dense cache with its memory bound, and the writes' checks are the SQLite
 * index's too (../hybrid-search.ts, ../dense-cache.ts, ../writes.ts): the two indexes differ only
 * in where rows live and in the lexical ranking function (ts_rank / RUM's distance instead of BM25).
 */
import { DenseCache, DenseCachedIndex } from "../dense-cache.js";
import { checkSearchQuery, denseOptions, runSearch, searchTuning, type ChunkRow, type SearchIndexOptions, type SearchTuning } from "../hybrid-search.js";
import type { Attributes, ChunkInput, IndexStats, SearchHit, SearchIndex, SearchQuery } from "../types.js";
import type { Committed } from "../writes.js";
import { pgDenseSource } from "./dense-source.js";
import { compilePgFilter } from "./filter-sql.js";
import { lexicalSearch } from "./lexical.js";
import { ensureSearchSchema, STORE_ROW_SQL, type PgStoreRow, type TextIndexKind } from "./schema.js";
import type { PgStore } from "./store.js";
import { PgIndexWrites } from "./writes.js";

export { poolStore, type PgStore } from "./store.js";
export { ensureSearchSchema, POSTGRES_SEARCH_TABLES, type TextIndexKind } from "./schema.js";

export interface PostgresSearchOptions extends SearchIndexOptions {
  /** "gin" never uses RUM; "auto" (default): RUM when the extension can be created. */
  textIndex?: "auto" | "gin";
  /** Versions of history each store's change log keeps (default 4,096); a cache further behind reloads in full. */
  changeLogKeep?: number;
}

export class PostgresSearchIndex extends DenseCachedIndex<PgStoreRow> implements SearchIndex {
  private readonly writes: PgIndexWrites;
  protected readonly dense: DenseCache<PgStoreRow>;
  private readonly tuning: SearchTuning;

  private schema: Promise<TextIndexKind> | undefined;
  private readonly textIndexOption: "auto" | "gin";

  /**
   * Opens the index on the store's pool. The schema is created if missing (idempotent, under an
   * advisory lock) in the background; every call waits for it, and a failed attempt is retried by
   * the next call.
   */
  static fromStore(store: PgStore, opts: PostgresSearchOptions = {}): PostgresSearchIndex {
    return new PostgresSearchIndex(store, opts);
  }

  private constructor(
    private readonly store: PgStore,
    opts: PostgresSearchOptions,
  ) {
    super();
    this.textIndexOption = opts.textIndex ?? "auto";
    this.ready().catch(() => {}); // reported to the first call that needs the schema
    this.writes = new PgIndexWrites((f) => store.transaction(f), opts.changeLogKeep);
    // No graph is kept on disk: every instance builds its own (into a temporary file).
    this.dense = new DenseCache(pgDenseSource(store.pool), denseOptions(opts, null));
    this.tuning = searchTuning(opts);
  }

  // ---- writes: one transaction each, then the same change applied to a loaded dense cache ----

  async addChunks(storeId: string, chunks: ChunkInput[]): Promise<void> {
    await this.ready();
    this.committed(storeId, await this.writes.addChunks(storeId, chunks));
  }

  async removeFile(storeId: string, fileId: string): Promise<void> {
    await this.ready();
    this.committed(storeId, await this.writes.removeFile(storeId, fileId));
  }

  async updateAttributes(storeId: string, fileId: string, attributes: Attributes): Promise<void> {
    await this.ready();
    // Filters are evaluated in SQL at search time, so the dense cache needs no change.
    await this.writes.updateAttributes(storeId, fileId, attributes);
  }

  async dropStore(storeId: string): Promise<void> {
    await this.ready();
    await this.writes.dropStore(storeId);
    this.dense.drop(storeId);
  }

  async stats(storeId: string): Promise<IndexStats> {
    await this.ready();
    const row = await this.storeRow(storeId);
    return { chunks: row?.chunks ?? 0, bytes: row?.bytes ?? 0 };
  }

  /** The schema in place: resolves to the text index searches use (RUM or GIN). */
  ready(): Promise<TextIndexKind> {
    this.schema ??= ensureSearchSchema(this.store.pool, this.textIndexOption).catch((err) => {
      this.schema = undefined;
      throw err;
    });
    return this.schema;
  }

  private committed(storeId: string, change: Committed | null): void {
    if (change) this.dense.apply(storeId, change.ord, change.version, change.ops);
  }

  private async storeRow(storeId: string): Promise<PgStoreRow | undefined> {
    const { rows } = await this.store.pool.query<PgStoreRow>(STORE_ROW_SQL, [storeId]);
    return rows[0];
  }

  // ---- search (../hybrid-search.ts), over full-text search and the dense cache ----

  async search(storeId: string, q: SearchQuery): Promise<SearchHit[]> {
    const checked = checkSearchQuery(q);
    const textIndex = await this.ready();
    const store = await this.storeRow(storeId);
    if (!store) {
      this.dense.discard(storeId); // dropped, perhaps by another instance: its cache goes too
      return [];
    }
    const pool = this.store.pool;
    return runSearch(q, checked, {
      lexical: (text, filter, depth, mustAnswer) =>
        lexicalSearch(pool, textIndex, { storeId, store, text, filter, depth, mustAnswer, budget: this.tuning.lexicalBudget }),
      dense: () => (store.dim === null ? null : this.dense.get(storeId, store)),
      allowedFiles: async (filter) => {
        const params: unknown[] = [store.ord];
        const cond = compilePgFilter(filter, "f", store.ord, params);
        const { rows } = await pool.query<{ file_id: string }>(`SELECT f.file_id FROM search_files f WHERE f.store_ord = $1 AND ${cond}`, params);
        return rows.map((r) => r.file_id);
      },
      rows: async (labels) => {
        const { rows } = await pool.query<Omit<ChunkRow, "label"> & { label: string }>(
          `SELECT c.id AS label, c.chunk_id AS "chunkId", c.file_id AS "fileId", c.idx AS "index", c.tokens, c.text, f.attributes
           FROM search_chunks c LEFT JOIN search_files f ON f.store_ord = c.store_ord AND f.file_id = c.file_id
           WHERE c.id = ANY($1::bigint[])`,
          [labels],
        );
        return rows.map((r) => ({ ...r, label: Number(r.label) }));
      },
    }, this.tuning);
  }

  // ---- lifecycle and diagnostics ----

  /** Loads a store's dense cache now and waits for background graph work (tests, benchmarks, warm-up). */
  async settle(storeId?: string): Promise<void> {
    await this.ready();
    if (storeId !== undefined) {
      const row = await this.storeRow(storeId);
      if (row?.dim != null) await this.dense.get(storeId, row);
    }
    await this.dense.settle();
  }

  /** Stops background work and releases the caches. The pool stays open (it is the record store's). */
  async close(): Promise<void> {
    this.dense.close();
  }
}

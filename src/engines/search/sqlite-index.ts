/**
 * `SqliteSearchIndex`: the embedded `SearchIndex`, in the record store's SQLite file.
 *
 * Tables (migration `search/0001_index`, registered when this module is imported):
 * - `search_stores`: one row per store: `ord` (a small integer naming the store's FTS table and
 *   graph file, never reused), vector dimension, chunk and byte counters, and `version`, bumped by
 *   every chunk change so a process can tell its in-memory vectors are stale.
 * - `search_chunks`: text and token count. Its rowid (AUTOINCREMENT, never reused) is the chunk's
 *   label everywhere (FTS rowid, HNSW label).
 * - `search_vectors`: the chunk's vector as a Float32 little-endian BLOB, apart from the chunk so
 *   the rows a filtered lexical query joins stay small (2 KB vectors inline made that join read a
 *   page per row: 3× slower).
 * - `search_fts_<ord>`, one per store, created with it and dropped with it: FTS5, contentless
 *   (the text lives in `search_chunks`), porter stemming over unicode61 with diacritics removed.
 *   One table per store keeps BM25's statistics (document count, term frequencies, lengths) to
 *   the store, so no tenant's documents shape another's ranking, and a MATCH walks only that
 *   store's postings (a shared table scoped by a store column cost ~3.5 ms per query at 100k).
 * - `search_files` (attributes as JSON, returned with hits) and `search_attrs` (one row per
 *   attribute: type tag `s`/`n`/`b` and the value, indexed by (store, key, type, value)): filters
 *   compile to SQL over `search_attrs`, so both retrievers apply them before any top-k cut.
 *
 * The dense side (dense.ts) is an in-memory cache of the vectors, loaded on a store's first dense
 * search; the lexical side is SQL only.
 */
import { readdirSync, statSync, unlinkSync } from "node:fs";
import { join } from "node:path";
import type Database from "better-sqlite3";
import { registerMigration, type SqliteRecordStore } from "../../storage/sqlite-records.js";
import { DenseStore, type AnnState, type DenseHit, type DenseOptions } from "./dense.js";
import { fuse, type Ranked } from "./fusion.js";
import { ftsExpression, queryTerms } from "./text.js";
import { WalCheckpointer, type CheckpointResult } from "./wal-checkpointer.js";
import type {
  AttributeValue,
  Attributes,
  ChunkInput,
  ComparisonFilter,
  Filter,
  IndexStats,
  SearchHit,
  SearchIndex,
  SearchMode,
  SearchQuery,
} from "./types.js";

export const SEARCH_MIGRATION_ID = "search/0001_index";
export const SEARCH_MIGRATION_SQL = `
  CREATE TABLE search_stores (
    ord      INTEGER PRIMARY KEY AUTOINCREMENT,
    store_id TEXT    NOT NULL UNIQUE,
    dim      INTEGER,
    chunks   INTEGER NOT NULL DEFAULT 0,
    bytes    INTEGER NOT NULL DEFAULT 0,
    version  INTEGER NOT NULL DEFAULT 0
  );
  CREATE TABLE search_chunks (
    id       INTEGER PRIMARY KEY AUTOINCREMENT,
    store_id TEXT    NOT NULL,
    chunk_id TEXT    NOT NULL,
    file_id  TEXT    NOT NULL,
    idx      INTEGER NOT NULL,
    tokens   INTEGER NOT NULL,
    bytes    INTEGER NOT NULL,
    text     TEXT    NOT NULL,
    UNIQUE (store_id, chunk_id)
  );
  CREATE TABLE search_vectors (
    id     INTEGER PRIMARY KEY, -- search_chunks.id, deleted with it by this module
    vector BLOB    NOT NULL
  );
  -- (store_id, rowid) order: the dense cache pages through a store by rowid.
  CREATE INDEX search_chunks_by_store ON search_chunks (store_id);
  CREATE INDEX search_chunks_by_file ON search_chunks (store_id, file_id);
  CREATE TABLE search_files (
    store_id   TEXT NOT NULL,
    file_id    TEXT NOT NULL,
    attributes TEXT NOT NULL,
    PRIMARY KEY (store_id, file_id)
  ) WITHOUT ROWID;
  -- STRICT + ANY: values keep their type (a TEXT '1' never becomes the INTEGER 1).
  CREATE TABLE search_attrs (
    store_id TEXT NOT NULL,
    file_id  TEXT NOT NULL,
    key      TEXT NOT NULL,
    type     TEXT NOT NULL,
    value    ANY  NOT NULL,
    PRIMARY KEY (store_id, file_id, key)
  ) STRICT, WITHOUT ROWID;
  CREATE INDEX search_attrs_by_value ON search_attrs (store_id, key, type, value);
`;

/** The FTS5 table of one store (see the top of this file). */
const ftsTable = (ord: number) => `search_fts_${ord}`;
const FTS_TOKENIZER = "porter unicode61 remove_diacritics 2";
/**
 * FTS5 merges its segment b-trees inside the writing transaction (automerge), and a merge of the
 * higher levels rewrites megabytes at once: 15-50 ms on the event loop every 16th or 64th write
 * of an ingestion. So the tables run with automerge off and the index merges itself: after each
 * write, once the event loop has had a turn, one bounded step (`'merge', N` pages, N in
 * proportion to what was written: 1-6 ms) in a transaction of its own. The crisis merge (all of
 * a level's segments at once) stays as the backstop, at 64 segments instead of 16.
 */
const FTS_SETTINGS = { automerge: 0, crisismerge: 64 };
/** Merge pages per byte of text written, and the least a step does. */
const MERGE_PAGES_PER_BYTE = 1 / 512;
const MIN_MERGE_PAGES = 64;

registerMigration(SEARCH_MIGRATION_ID, SEARCH_MIGRATION_SQL);

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
   * terms, which BM25 weighs least, are left out (README.md, "Lexical").
   */
  lexicalBudget?: number;
  /**
   * Checkpoint the write-ahead log in a worker thread while the index writes (wal-checkpointer.ts;
   * default true for a database file in WAL mode).
   */
  walCheckpoints?: boolean;
}

/** What the dense cache of a store looks like (diagnostics, tests, benchmarks). */
export interface DenseInfo {
  loaded: boolean;
  vectors: number;
  ann: AnnState;
  pending: number;
  tombstones: number;
  lastError: string | null;
  /** Dense searches served by the exact scan, by the graph, and graph answers that fell back to exact. */
  counters: { exact: number; ann: number; fallback: number };
}

interface StoreRow {
  ord: number;
  dim: number | null;
  version: number;
  chunks: number;
  bytes: number;
}

/** Prepared statements on one store's FTS table. */
interface FtsStatements {
  insert: Database.Statement;
  remove: Database.Statement;
  count: Database.Statement;
  search: Database.Statement;
  merge: Database.Statement;
}

interface DenseEntry {
  state: DenseStore;
  ready: Promise<void>;
}

/** A change to the dense cache, in commit order. */
type DenseOp = { add: number; fileId: string; vector: Float32Array } | { remove: number };

const PAGE = 2048;
const MAX_LIMIT = 1000;
const MAX_QUERIES = 20;

const defaultCandidates = (limit: number) => Math.max(limit, Math.min(100, Math.max(20, 2 * limit)));

function checkAttributes(attributes: unknown, what: string): Attributes {
  if (attributes === null || attributes === undefined) return {};
  if (typeof attributes !== "object" || Array.isArray(attributes)) throw new TypeError(`${what}: attributes must be an object`);
  for (const [k, v] of Object.entries(attributes)) {
    if (typeof v !== "string" && typeof v !== "boolean" && !(typeof v === "number" && Number.isFinite(v))) {
      throw new TypeError(`${what}: attribute ${JSON.stringify(k)} must be a string, a finite number or a boolean`);
    }
  }
  return attributes as Attributes;
}

function typeTag(v: AttributeValue): "s" | "n" | "b" {
  return typeof v === "string" ? "s" : typeof v === "number" ? "n" : "b";
}

/** SQLite has no booleans: store and bind them as 0/1 next to the `b` type tag. */
const sqlValue = (v: AttributeValue): string | number => (typeof v === "boolean" ? (v ? 1 : 0) : v);

/** A copy scaled to unit length; rejects empty, non-finite and zero vectors. */
function normalised(v: Float32Array, what: string): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  if (v.length === 0 || !Number.isFinite(sum) || sum === 0) throw new RangeError(`${what}: the vector must be non-empty, finite and non-zero`);
  const out = new Float32Array(v.length);
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! * inv;
  return out;
}

const vectorBlob = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);

/**
 * Compiles a (validated) filter to a SQL condition on `<ref>.file_id`, pushing its parameters.
 * Each comparison is `file_id IN (files of this store whose attribute matches)`: an uncorrelated
 * subquery SQLite evaluates once per statement through `search_attrs_by_value`. `ne`/`nin` are
 * `NOT` of `eq`/`in`, so they match files without the key (see filter.ts).
 */
export function compileFilter(filter: Filter, ref: string, storeId: string, params: unknown[]): string {
  switch (filter.type) {
    case "and":
    case "or": {
      if (filter.filters.length === 0) return filter.type === "and" ? "1" : "0";
      const parts = filter.filters.map((f) => compileFilter(f, ref, storeId, params));
      return `(${parts.join(filter.type === "and" ? " AND " : " OR ")})`;
    }
    case "ne":
    case "nin":
      return `NOT ${compileFilter({ ...filter, type: filter.type === "ne" ? "eq" : "in" }, ref, storeId, params)}`;
  }
  const f = filter as ComparisonFilter;
  const files = (cond: string, values: unknown[]) => {
    params.push(storeId, f.key, ...values);
    return `${ref}.file_id IN (SELECT a.file_id FROM search_attrs a WHERE a.store_id = ? AND a.key = ? AND ${cond})`;
  };
  switch (f.type) {
    case "eq": {
      const v = f.value as AttributeValue;
      return files(`a.type = '${typeTag(v)}' AND a.value = ?`, [sqlValue(v)]);
    }
    case "in": {
      const list = f.value as Array<string | number>;
      const strings = list.filter((x) => typeof x === "string");
      const numbers = list.filter((x) => typeof x === "number");
      const conds: string[] = [];
      if (strings.length) conds.push(`(a.type = 's' AND a.value IN (${strings.map(() => "?").join(", ")}))`);
      if (numbers.length) conds.push(`(a.type = 'n' AND a.value IN (${numbers.map(() => "?").join(", ")}))`);
      if (conds.length === 0) return "0";
      return files(`(${conds.join(" OR ")})`, [...strings, ...numbers]);
    }
    default: {
      const op = { gt: ">", gte: ">=", lt: "<", lte: "<=" }[f.type as "gt" | "gte" | "lt" | "lte"];
      return files(`a.type = 'n' AND a.value ${op} ?`, [f.value]);
    }
  }
}

export class SqliteSearchIndex implements SearchIndex {
  private readonly denseOpts: DenseOptions;
  private readonly candidates: (limit: number) => number;
  private readonly rrfK: number;
  private readonly lexicalBudget: number;
  private readonly dense = new Map<string, DenseEntry>();
  // Statements per store FTS table, most recently used last (bounded: one table per store).
  private readonly ftsCache = new Map<number, FtsStatements>();
  private closed = false;
  // FTS tables given FTS_SETTINGS by this process (tables made before them get them at their next write).
  private readonly ftsTuned = new Set<number>();
  private readonly checkpointer: WalCheckpointer | null;

  private readonly sStore: Database.Statement;
  private readonly sEnsureStore: Database.Statement;
  private readonly sSetDim: Database.Statement;
  private readonly sBump: Database.Statement;
  private readonly sDeleteChunk: Database.Statement;
  private readonly sInsertChunk: Database.Statement;
  private readonly sInsertVector: Database.Statement;
  private readonly sDeleteVector: Database.Statement;
  private readonly sDeleteFileChunks: Database.Statement;
  private readonly sUpsertFile: Database.Statement;
  private readonly sDeleteFile: Database.Statement;
  private readonly sDeleteAttrs: Database.Statement;
  private readonly sInsertAttr: Database.Statement;
  private readonly sPage: Database.Statement;
  private readonly sHits: Database.Statement;

  /** Applies the migration through the record store (idempotent), then opens the index on its connection. */
  static fromStore(store: SqliteRecordStore, opts?: SqliteSearchOptions): SqliteSearchIndex {
    store.applyMigrations([{ id: SEARCH_MIGRATION_ID, sql: SEARCH_MIGRATION_SQL }]);
    return new SqliteSearchIndex(store.db, opts);
  }

  constructor(
    private readonly db: Database.Database,
    opts: SqliteSearchOptions = {},
  ) {
    const hasTables = db.prepare(`SELECT 1 FROM sqlite_schema WHERE name = 'search_chunks'`).pluck().get();
    if (!hasTables) {
      throw new Error(`search tables missing: use SqliteSearchIndex.fromStore(store), or import sqlite-index.js before opening the record store`);
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
    this.sEnsureStore = db.prepare(`INSERT INTO search_stores (store_id) VALUES (?) ON CONFLICT (store_id) DO NOTHING`);
    this.sSetDim = db.prepare(`UPDATE search_stores SET dim = ? WHERE store_id = ? AND dim IS NULL`);
    this.sBump = db.prepare(
      `UPDATE search_stores SET chunks = chunks + ?, bytes = bytes + ?, version = version + 1 WHERE store_id = ? RETURNING version`,
    ).pluck();
    this.sDeleteChunk = db.prepare(`DELETE FROM search_chunks WHERE store_id = ? AND chunk_id = ? RETURNING id, bytes`).raw();
    this.sInsertChunk = db.prepare(
      `INSERT INTO search_chunks (store_id, chunk_id, file_id, idx, tokens, bytes, text)
       VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    ).pluck();
    this.sInsertVector = db.prepare(`INSERT INTO search_vectors (id, vector) VALUES (?, ?)`);
    this.sDeleteVector = db.prepare(`DELETE FROM search_vectors WHERE id = ?`);
    this.sDeleteFileChunks = db.prepare(`DELETE FROM search_chunks WHERE store_id = ? AND file_id = ? RETURNING id, bytes`).raw();
    this.sUpsertFile = db.prepare(
      `INSERT INTO search_files (store_id, file_id, attributes) VALUES (?, ?, ?)
       ON CONFLICT (store_id, file_id) DO UPDATE SET attributes = excluded.attributes`,
    );
    this.sDeleteFile = db.prepare(`DELETE FROM search_files WHERE store_id = ? AND file_id = ?`);
    this.sDeleteAttrs = db.prepare(`DELETE FROM search_attrs WHERE store_id = ? AND file_id = ?`);
    this.sInsertAttr = db.prepare(`INSERT INTO search_attrs (store_id, file_id, key, type, value) VALUES (?, ?, ?, ?, ?)`);
    this.sPage = db.prepare(
      `SELECT c.id, c.file_id, v.vector FROM search_chunks c JOIN search_vectors v ON v.id = c.id
       WHERE c.store_id = ? AND c.id > ? ORDER BY c.id LIMIT ${PAGE}`,
    ).raw();
    this.sHits = db.prepare(
      `SELECT c.id, c.chunk_id, c.file_id, c.idx, c.tokens, c.text, f.attributes
       FROM search_chunks c LEFT JOIN search_files f ON f.store_id = c.store_id AND f.file_id = c.file_id
       WHERE c.id IN (SELECT value FROM json_each(?))`,
    ).raw();
    this.sweepIndexDir();
  }

  // ---- writes: one SQLite transaction each, then the same change applied to a loaded dense cache ----

  async addChunks(storeId: string, chunks: ChunkInput[]): Promise<void> {
    if (chunks.length === 0) return;
    // Validate everything before writing anything.
    const rows = chunks.map((c, i) => {
      const what = `chunks[${i}]`;
      if (typeof c.chunkId !== "string" || typeof c.fileId !== "string" || typeof c.text !== "string") {
        throw new TypeError(`${what}: chunkId, fileId and text must be strings`);
      }
      const attributes = checkAttributes(c.attributes, what);
      const vector = c.vector ? normalised(c.vector, what) : undefined;
      const bytes = Buffer.byteLength(c.text) + (vector ? vector.byteLength : 0);
      return { c, attributes, vector, bytes };
    });
    const dims = new Set(rows.filter((r) => r.vector).map((r) => r.vector!.length));
    if (dims.size > 1) throw new RangeError(`chunks: vectors of different lengths (${[...dims].join(", ")})`);
    const dim = dims.size ? [...dims][0]! : null;

    const { ord, version, ops } = this.db.transaction(() => {
      if (this.sEnsureStore.run(storeId).changes > 0) {
        const { ord } = this.sStore.get(storeId) as StoreRow;
        this.db.exec(
          `CREATE VIRTUAL TABLE ${ftsTable(ord)} USING fts5 (text, content = '', contentless_delete = 1, tokenize = '${FTS_TOKENIZER}')`,
        );
      }
      const storeOrd = (this.sStore.get(storeId) as StoreRow).ord;
      const fts = this.fts(storeOrd);
      this.tuneFts(storeOrd);
      if (dim !== null) {
        this.sSetDim.run(dim, storeId);
        const stored = (this.sStore.get(storeId) as StoreRow).dim;
        if (stored !== dim) throw new RangeError(`chunks: vectors have ${dim} dimensions; the store's have ${stored}`);
      }
      const ops: DenseOp[] = [];
      let dChunks = 0;
      let dBytes = 0;
      for (const r of rows) {
        for (const [id, bytes] of this.sDeleteChunk.all(storeId, r.c.chunkId) as Array<[number, number]>) {
          fts.remove.run(id);
          this.sDeleteVector.run(id);
          ops.push({ remove: id });
          dChunks--;
          dBytes -= bytes;
        }
        const id = this.sInsertChunk.get(
          storeId, r.c.chunkId, r.c.fileId, r.c.index, r.c.tokens, r.bytes, r.c.text,
        ) as number;
        if (r.vector) this.sInsertVector.run(id, vectorBlob(r.vector));
        fts.insert.run(id, r.c.text);
        if (r.vector) ops.push({ add: id, fileId: r.c.fileId, vector: r.vector });
        dChunks++;
        dBytes += r.bytes;
      }
      // Attributes belong to the file; the last chunk of each file in the batch sets them.
      const fileAttrs = new Map<string, Attributes>();
      for (const r of rows) fileAttrs.set(r.c.fileId, r.attributes);
      for (const [fileId, attributes] of fileAttrs) this.writeAttributes(storeId, fileId, attributes);
      const version = this.sBump.get(dChunks, dBytes, storeId) as number;
      const { ord } = this.sStore.get(storeId) as StoreRow;
      return { ord, version, ops };
    }).immediate();
    this.applyDense(storeId, ord, version, ops);
    await this.afterWrite(ord, rows.reduce((n, r) => n + r.bytes, 0));
  }

  async removeFile(storeId: string, fileId: string): Promise<void> {
    const done = this.db.transaction(() => {
      const store = this.sStore.get(storeId) as StoreRow | undefined;
      const removed = this.sDeleteFileChunks.all(storeId, fileId) as Array<[number, number]>;
      this.sDeleteAttrs.run(storeId, fileId);
      this.sDeleteFile.run(storeId, fileId);
      if (!store || removed.length === 0) return null;
      const fts = this.fts(store.ord);
      for (const [id] of removed) {
        fts.remove.run(id);
        this.sDeleteVector.run(id);
      }
      const bytes = removed.reduce((s, [, b]) => s + b, 0);
      const version = this.sBump.get(-removed.length, -bytes, storeId) as number;
      return { ord: store.ord, version, ops: removed.map(([id]) => ({ remove: id })), bytes };
    }).immediate();
    if (!done) return;
    this.applyDense(storeId, done.ord, done.version, done.ops);
    await this.afterWrite(done.ord, done.bytes);
  }

  async updateAttributes(storeId: string, fileId: string, attributes: Attributes): Promise<void> {
    const attrs = checkAttributes(attributes, "attributes");
    // Filters are evaluated in SQL at search time, so the dense cache needs no change.
    this.db.transaction(() => this.writeAttributes(storeId, fileId, attrs)).immediate();
  }

  async dropStore(storeId: string): Promise<void> {
    const entry = this.dense.get(storeId);
    const ord = this.db.transaction(() => {
      this.db.prepare(`DELETE FROM search_vectors WHERE id IN (SELECT id FROM search_chunks WHERE store_id = ?)`).run(storeId);
      this.db.prepare(`DELETE FROM search_chunks WHERE store_id = ?`).run(storeId);
      this.db.prepare(`DELETE FROM search_attrs WHERE store_id = ?`).run(storeId);
      this.db.prepare(`DELETE FROM search_files WHERE store_id = ?`).run(storeId);
      const ord = this.db.prepare(`DELETE FROM search_stores WHERE store_id = ? RETURNING ord`).pluck().get(storeId) as number | undefined;
      if (ord !== undefined) {
        this.ftsCache.delete(ord);
        this.ftsTuned.delete(ord);
        this.db.exec(`DROP TABLE IF EXISTS ${ftsTable(ord)}`);
      }
      return ord;
    }).immediate();
    if (ord !== undefined && this.denseOpts.indexDir) {
      try {
        unlinkSync(join(this.denseOpts.indexDir, `${ord}.hnsw`));
      } catch {
        // never built
      }
    }
    if (entry) {
      entry.state.close(true);
      this.dense.delete(storeId);
    }
  }

  async stats(storeId: string): Promise<IndexStats> {
    const row = this.sStore.get(storeId) as StoreRow | undefined;
    return { chunks: row?.chunks ?? 0, bytes: row?.bytes ?? 0 };
  }

  private tuneFts(ord: number): void {
    if (this.ftsTuned.has(ord)) return;
    const t = ftsTable(ord);
    // Integers in the SQL text: FTS5 refuses a configuration value bound as a double.
    for (const [key, value] of Object.entries(FTS_SETTINGS)) this.db.exec(`INSERT INTO ${t} (${t}, rank) VALUES ('${key}', ${value})`);
    this.ftsTuned.add(ord);
  }

  /**
   * The work a write leaves for later, each part after a turn of the event loop: one FTS merge
   * step (FTS_SETTINGS) and a WAL checkpoint in the checkpoint worker.
   */
  private async afterWrite(ord: number, bytes: number): Promise<void> {
    await new Promise((r) => setImmediate(r));
    if (this.closed) return;
    try {
      this.fts(ord).merge.run(Math.max(MIN_MERGE_PAGES, Math.ceil(bytes * MERGE_PAGES_PER_BYTE)));
    } catch {
      // The store was dropped meanwhile, or another process holds the write lock: the next
      // write's step does this one's work too (and the crisis merge bounds the backlog).
    }
    this.checkpointer?.afterWrite();
  }

  private writeAttributes(storeId: string, fileId: string, attributes: Attributes): void {
    this.sUpsertFile.run(storeId, fileId, JSON.stringify(attributes));
    this.sDeleteAttrs.run(storeId, fileId);
    for (const [key, value] of Object.entries(attributes)) {
      this.sInsertAttr.run(storeId, fileId, key, typeTag(value), sqlValue(value));
    }
  }

  /**
   * Applies a committed change to the store's loaded dense cache. The cache must be exactly one
   * version behind; otherwise another process wrote too, and the cache is dropped (reloaded by
   * the next dense search).
   */
  private applyDense(storeId: string, ord: number, version: number, ops: DenseOp[]): void {
    const entry = this.dense.get(storeId);
    if (!entry) return;
    const state = entry.state;
    if (state.ord !== ord || state.version !== version - 1) {
      this.discard(storeId);
      return;
    }
    state.version = version;
    for (const op of ops) {
      if ("add" in op) state.add(op.add, op.fileId, op.vector);
      else state.remove(op.remove);
    }
    state.maintain();
  }

  private discard(storeId: string): void {
    this.dense.get(storeId)?.state.close(false);
    this.dense.delete(storeId);
  }

  // ---- the dense cache ----

  /** The store's dense cache, loaded (from SQLite's BLOBs and the kept HNSW file) on first use. */
  private async denseState(storeId: string, row: StoreRow): Promise<DenseStore> {
    for (let attempt = 0; ; attempt++) {
      let entry = this.dense.get(storeId);
      if (entry && entry.state.ord !== row.ord) {
        this.discard(storeId);
        entry = undefined;
      }
      if (!entry) entry = this.load(storeId, row);
      await entry.ready;
      const now = this.sStore.get(storeId) as StoreRow | undefined;
      const current = this.dense.get(storeId) === entry && (!now || now.version === entry.state.version);
      // Changed by another process (or dropped) meanwhile: reload once, then serve what we have.
      if (current || !now || attempt > 0) return entry.state;
      if (this.dense.get(storeId) === entry) this.discard(storeId);
      row = now;
    }
  }

  private load(storeId: string, row: StoreRow): DenseEntry {
    const state = new DenseStore(row.ord, row.version, this.denseOpts);
    const entry: DenseEntry = { state, ready: Promise.resolve() };
    this.dense.set(storeId, entry);
    // Paged by rowid with a yield between pages: a 100k-chunk store (200 MB of vectors) must not
    // stall the event loop. Changes committed meanwhile are applied to the half-loaded cache;
    // add/remove are idempotent by rowid, so a row seen twice is harmless.
    entry.ready = (async () => {
      let after = 0;
      for (;;) {
        if (this.closed || this.dense.get(storeId) !== entry) return;
        const rows = this.sPage.all(storeId, after) as Array<[number, string, Buffer]>;
        for (const [id, fileId, blob] of rows) state.add(id, fileId, blob);
        if (rows.length < PAGE) break;
        after = rows[rows.length - 1]![0];
        await new Promise((r) => setImmediate(r));
      }
      if (state.size > this.denseOpts.annThreshold) await state.loadIndexFile();
      state.loading = false;
      state.maintain();
    })().catch((err) => {
      // Not cached half-loaded: the next search tries again.
      if (this.dense.get(storeId) === entry) this.discard(storeId);
      throw err;
    });
    return entry;
  }

  /** Deletes graphs of stores that no longer exist and build leftovers older than an hour. */
  private sweepIndexDir(): void {
    const dir = this.denseOpts.indexDir;
    if (!dir) return;
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    const ords = new Set(this.db.prepare(`SELECT ord FROM search_stores`).pluck().all() as number[]);
    for (const name of names) {
      const m = /^(\d+)\.hnsw(\.tmp-.*)?$/.exec(name);
      if (!m) continue;
      const file = join(dir, name);
      try {
        if (m[2] ? Date.now() - statSync(file).mtimeMs > 3600_000 : !ords.has(Number(m[1]))) unlinkSync(file);
      } catch {
        // raced with another process
      }
    }
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
      dense = await this.denseState(storeId, store);
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
    if (chosen.length === 0) return [];
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

  /** The statements on a store's FTS table, prepared on first use. */
  private fts(ord: number): FtsStatements {
    let st = this.ftsCache.get(ord);
    if (st) {
      this.ftsCache.delete(ord); // re-inserted below: most recently used last
    } else {
      const t = ftsTable(ord);
      st = {
        insert: this.db.prepare(`INSERT INTO ${t} (rowid, text) VALUES (?, ?)`),
        remove: this.db.prepare(`DELETE FROM ${t} WHERE rowid = ?`),
        count: this.db.prepare(`SELECT count(*) FROM (SELECT rowid FROM ${t} WHERE ${t} MATCH ? LIMIT ?)`).pluck(),
        // bm25() is negative, best first ascending; ties by rowid (insertion order).
        search: this.db.prepare(`SELECT rowid FROM ${t} WHERE ${t} MATCH ? ORDER BY bm25(${t}), rowid LIMIT ?`).pluck(),
        merge: this.db.prepare(`INSERT INTO ${t} (${t}, rank) VALUES ('merge', ?)`),
      };
      if (this.ftsCache.size >= 64) this.ftsCache.delete(this.ftsCache.keys().next().value!);
    }
    this.ftsCache.set(ord, st);
    return st;
  }

  /** Chunk rowids by BM25 for one query text, the filter applied in the WHERE (before the LIMIT). */
  private lexical(storeId: string, store: StoreRow, text: string, filter: Filter | undefined, depth: number, mustAnswer: boolean): number[] {
    const fts = this.fts(store.ord);
    const expr = ftsExpression(this.affordableTerms(fts, queryTerms(text), store.chunks, mustAnswer));
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

  /**
   * The terms one lexical query can afford. FTS5 scores every chunk a term matches (~0.6 µs each),
   * so a word found in most of a 100k-chunk store costs ~100 ms whatever the LIMIT. So, with each
   * term's count in the store (counting stops past the budget):
   * 1. terms in more than half the chunks are dropped when any other term matches: BM25 gives
   *    them weight ~0 anyway (FTS5 floors their IDF at 1e-6), they would only add cost;
   * 2. the rest are taken rarest first while their counts add up to at most `lexicalBudget`;
   * 3. if not even the rarest fits: `lexical` mode uses it alone (the slow case, every posting
   *    walked); `hybrid` leaves the lexical list out and the dense list answers.
   */
  private affordableTerms(fts: FtsStatements, terms: string[], chunks: number, mustAnswer: boolean): string[] {
    const budget = this.lexicalBudget;
    if (terms.length === 0 || chunks * terms.length <= budget) return terms;
    const half = chunks / 2;
    let counted = terms.map((t) => ({ t, n: fts.count.get(`"${t}"`, budget + 1) as number })).filter((c) => c.n > 0);
    if (counted.some((c) => c.n <= half)) counted = counted.filter((c) => c.n <= half);
    counted.sort((a, b) => a.n - b.n);
    const chosen: string[] = [];
    let total = 0;
    for (const c of counted) {
      if (total + c.n > budget) break;
      chosen.push(c.t);
      total += c.n;
    }
    if (chosen.length === 0 && mustAnswer && counted.length > 0) {
      // The counts stopped at the budget: count in full to find the truly rarest.
      const full = counted.map((c) => ({ t: c.t, n: fts.count.get(`"${c.t}"`, chunks + 1) as number }));
      chosen.push(full.reduce((a, b) => (b.n < a.n ? b : a)).t);
    }
    return chosen;
  }

  // ---- lifecycle and diagnostics ----

  /** The dense cache of a store, as it stands. */
  inspect(storeId: string): DenseInfo {
    const s = this.dense.get(storeId)?.state;
    return {
      loaded: !!s && !s.loading,
      vectors: s?.size ?? 0,
      ann: s?.annState ?? "none",
      pending: s?.backlog.pending ?? 0,
      tombstones: s?.backlog.tombstones ?? 0,
      lastError: s?.lastError?.message ?? null,
      counters: { ...(s?.counters ?? { exact: 0, ann: 0, fallback: 0 }) },
    };
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
      if (row) await this.denseState(storeId, row);
    }
    for (const entry of [...this.dense.values()]) {
      await entry.ready;
      await entry.state.settle();
    }
  }

  /** Stops background work and releases the caches. The database stays open (it is the record store's). */
  async close(): Promise<void> {
    this.closed = true;
    for (const id of [...this.dense.keys()]) this.discard(id);
    await this.checkpointer?.close();
  }
}

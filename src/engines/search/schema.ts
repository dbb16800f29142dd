/**
 * The SQLite index's tables (migration `search/0001_index`, registered by the vector stores area
 * through `ApiArea.migrations`; `SqliteSearchIndex.fromStore` applies it to a store opened
 * without it):
 * - `search_stores`: one row per store: `ord` (a small integer naming the store's FTS table and
 *   graph file, never reused), vector dimension, chunk and byte counters, and `version`, bumped by
 *   every chunk change so a process can tell its in-memory vectors are stale.
 * - `search_chunks`: text and token count. Its rowid (AUTOINCREMENT, never reused) is the chunk's
 *   label everywhere (FTS rowid, HNSW label).
 * - `search_vectors`: the chunk's vector as a Float32 little-endian BLOB, apart from the chunk so
 *   the rows a filtered lexical query joins stay small (2 KB vectors inline made that join read a
 *   page per row: 3× slower).
 * - `search_fts_<ord>`, one per store, created with it and dropped with it (fts-tables.ts): FTS5,
 *   contentless (the text lives in `search_chunks`), porter stemming over unicode61 with
 *   diacritics removed. One table per store keeps BM25's statistics (document count, term
 *   frequencies, lengths) to the store, so no tenant's documents shape another's ranking, and a
 *   MATCH walks only that store's postings (a shared table scoped by a store column cost ~3.5 ms
 *   per query at 100k).
 * - `search_files` (attributes as JSON, returned with hits) and `search_attrs` (one row per
 *   attribute: type tag `s`/`n`/`b` and the value, indexed by (store, key, type, value)): filters
 *   compile to SQL over `search_attrs` (sql-filter.ts), so both retrievers apply them before any
 *   top-k cut.
 */
import type { Migration } from "../../storage/index.js";

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

/** The search tables, as a migration for the record store that holds them. */
export const SEARCH_MIGRATION: Migration = { id: SEARCH_MIGRATION_ID, sql: SEARCH_MIGRATION_SQL };

/** A `search_stores` row. */
export interface StoreRow {
  ord: number;
  dim: number | null;
  version: number;
  chunks: number;
  bytes: number;
}

/**
 * The PostgreSQL index's tables, created by `ensureSearchSchema` (idempotent, under an advisory
 * lock, so instances starting together never race):
 * - `search_stores`: one row per store: `ord` (names the store in the other tables, never
 *   reused), vector dimension, chunk and byte counters, `version` (bumped by every chunk change;
 *   the row is locked by each write, so versions commit in order) and `log_floor` (changes at or
 *   below it are pruned from the log).
 * - `search_chunks`: text, token count, and `tsv`, the text's tsvector (configuration
 *   `atrium_search`: English Snowball stemming without stop words, over text the engine has already
 *   cut into words: lexical.ts). Its id (identity, never reused) is the chunk's label everywhere.
 * - `search_vectors`: the vector, float32 little-endian bytes: the source of truth each
 *   instance's in-memory cache (and HNSW graph) is built from.
 * - `search_terms`: per store and lexeme, how many chunks hold it (kept by every write), so the
 *   postings budget (lexical-budget.ts) costs one indexed lookup instead of a count over the
 *   matches (a bitmap heap scan per term: ~15 ms each at 30k chunks).
 * - `search_changes`: the store's change log, (version, label, added), so another instance's
 *   cache catches up with a delta read instead of reloading.
 * - `search_files`, `search_attrs`: the file's attributes as JSON (returned with hits) and one row
 *   per attribute (strings in `value_text`, numbers and booleans in `value_num`, beside the type
 *   tag) for filters (filter-sql.ts).
 * The text index is RUM (ordering by `<=>` walks only the best matches) when the `rum` extension
 * can be created, GIN otherwise (every match is ranked).
 */
import type pg from "pg";

export type TextIndexKind = "rum" | "gin";

/** pg_advisory_lock key of the search schema (any fixed number distinct from other users'). */
const SCHEMA_LOCK = 0x5ea7c4;

export const POSTGRES_SEARCH_TABLES = `
  CREATE TABLE IF NOT EXISTS search_stores (
    ord       integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    store_id  text    NOT NULL UNIQUE,
    dim       integer,
    chunks    bigint  NOT NULL DEFAULT 0,
    bytes     bigint  NOT NULL DEFAULT 0,
    version   bigint  NOT NULL DEFAULT 0,
    log_floor bigint  NOT NULL DEFAULT 0
  );
  CREATE TABLE IF NOT EXISTS search_chunks (
    id        bigint  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    store_ord integer NOT NULL,
    chunk_id  text    NOT NULL,
    file_id   text    NOT NULL,
    idx       integer NOT NULL,
    tokens    integer NOT NULL,
    bytes     integer NOT NULL,
    text      text    NOT NULL,
    tsv       tsvector NOT NULL,
    UNIQUE (store_ord, chunk_id)
  );
  CREATE INDEX IF NOT EXISTS search_chunks_by_file ON search_chunks (store_ord, file_id);
  CREATE TABLE IF NOT EXISTS search_vectors (
    id     bigint PRIMARY KEY,
    vector bytea  NOT NULL
  );
  CREATE TABLE IF NOT EXISTS search_changes (
    store_ord integer NOT NULL,
    version   bigint  NOT NULL,
    label     bigint  NOT NULL,
    added     boolean NOT NULL,
    file_id   text    NOT NULL,
    PRIMARY KEY (store_ord, version, label)
  );
  CREATE TABLE IF NOT EXISTS search_terms (
    store_ord integer NOT NULL,
    lexeme    text    NOT NULL,
    df        integer NOT NULL,
    PRIMARY KEY (store_ord, lexeme)
  );
  CREATE TABLE IF NOT EXISTS search_files (
    store_ord  integer NOT NULL,
    file_id    text    NOT NULL,
    attributes text    NOT NULL,
    PRIMARY KEY (store_ord, file_id)
  );
  CREATE TABLE IF NOT EXISTS search_attrs (
    store_ord  integer NOT NULL,
    file_id    text    NOT NULL,
    key        text    NOT NULL,
    type       "char"  NOT NULL,
    value_text text,
    value_num  double precision,
    PRIMARY KEY (store_ord, file_id, key)
  );
  CREATE INDEX IF NOT EXISTS search_attrs_by_text ON search_attrs (store_ord, key, type, value_text);
  CREATE INDEX IF NOT EXISTS search_attrs_by_num ON search_attrs (store_ord, key, type, value_num);
  DO $$ BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_ts_dict WHERE dictname = 'atrium_english_stem') THEN
      CREATE TEXT SEARCH DICTIONARY atrium_english_stem (TEMPLATE = snowball, LANGUAGE = english);
    END IF;
    IF NOT EXISTS (SELECT 1 FROM pg_ts_config WHERE cfgname = 'atrium_search') THEN
      CREATE TEXT SEARCH CONFIGURATION atrium_search (COPY = english);
      ALTER TEXT SEARCH CONFIGURATION atrium_search ALTER MAPPING REPLACE english_stem WITH atrium_english_stem;
    END IF;
  END $$;
`;

const RUM_INDEX = `CREATE INDEX IF NOT EXISTS search_chunks_text_rum ON search_chunks USING rum (tsv rum_tsvector_ops, store_ord rum_int4_ops)`;
const GIN_INDEX = `CREATE INDEX IF NOT EXISTS search_chunks_text_gin ON search_chunks USING gin (tsv)`;

/**
 * Creates the tables and the text index if missing; returns the kind of text index searches use.
 * `textIndex: "gin"` never tries RUM; "auto" (the default) uses RUM when the extension is there or
 * can be created, GIN otherwise. A database that already has one keeps it.
 */
export async function ensureSearchSchema(pool: pg.Pool, textIndex: "auto" | "gin" = "auto"): Promise<TextIndexKind> {
  const client = await pool.connect();
  try {
    await client.query(`SELECT pg_advisory_lock($1)`, [SCHEMA_LOCK]);
    try {
      await client.query(POSTGRES_SEARCH_TABLES);
      const existing = await textIndexOf(client);
      if (existing) return existing;
      if (textIndex === "auto" && (await tryRum(client))) return "rum";
      await client.query(GIN_INDEX);
      return "gin";
    } finally {
      await client.query(`SELECT pg_advisory_unlock($1)`, [SCHEMA_LOCK]);
    }
  } finally {
    client.release();
  }
}

/** The text index already in the database, if any (RUM preferred when both are). */
export async function textIndexOf(client: pg.PoolClient | pg.Pool): Promise<TextIndexKind | null> {
  const { rows } = await client.query<{ indexname: string }>(
    `SELECT indexname FROM pg_indexes WHERE tablename = 'search_chunks' AND indexname IN ('search_chunks_text_rum', 'search_chunks_text_gin')`,
  );
  const names = new Set(rows.map((r) => r.indexname));
  return names.has("search_chunks_text_rum") ? "rum" : names.has("search_chunks_text_gin") ? "gin" : null;
}

async function tryRum(client: pg.PoolClient): Promise<boolean> {
  await client.query("BEGIN");
  try {
    await client.query(`CREATE EXTENSION IF NOT EXISTS rum`);
    await client.query(RUM_INDEX);
    await client.query("COMMIT");
    return true;
  } catch {
    // Not installed, or no right to create extensions: GIN serves.
    await client.query("ROLLBACK");
    return false;
  }
}

/** A `search_stores` row. */
export interface PgStoreRow {
  ord: number;
  dim: number | null;
  version: number;
  chunks: number;
  bytes: number;
  logFloor: number;
}

export const STORE_ROW_SQL = `SELECT ord, dim, version::float8 AS version, chunks::float8 AS chunks, bytes::float8 AS bytes, log_floor::float8 AS "logFloor" FROM search_stores WHERE store_id = $1`;

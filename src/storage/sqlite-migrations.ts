// The schema of the embedded record store: the core tables, and the migrations other modules
// register for tables they keep in the same database file. Each applies once, recorded by id.
import { RECORD_TOTALS_MIGRATION } from "./record-totals.js";

export interface Migration {
  /** Unique, stable forever: it is what marks the migration as applied. */
  id: string;
  /** One or more SQL statements, run in one transaction together with the bookkeeping row. */
  sql: string;
  /**
   * The same change in PostgreSQL's dialect, for a store on PostgreSQL. Omitted: the migration
   * has nothing to do there (it only concerns a SQLite file's own tables), and is recorded as
   * applied all the same.
   */
  postgres?: string;
}

// Core schema. `seq` is the rowid (AUTOINCREMENT: never reused, even after deleting the newest
// row), so insertion order is assigned by SQLite itself and stays monotonic across restarts and
// across processes sharing the file. In a rowid table a composite PRIMARY KEY is just a unique
// index, so UNIQUE(kind, id) is the same structure as PRIMARY KEY(kind, id) would be.
export const CORE_MIGRATIONS: Migration[] = [
  {
    id: "storage/0001_records",
    sql: `
      CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
      CREATE TABLE records (
        seq        INTEGER PRIMARY KEY AUTOINCREMENT,
        kind       TEXT    NOT NULL,
        id         TEXT    NOT NULL,
        project_id TEXT    NOT NULL,
        parent_id  TEXT    NOT NULL DEFAULT '',
        created_at INTEGER NOT NULL,
        expires_at INTEGER,
        tag        TEXT,
        version    INTEGER NOT NULL DEFAULT 1,
        data       TEXT    NOT NULL,
        UNIQUE (kind, id)
      );
      -- Every list shape walks an index in (created_at, seq) order and stops after limit+1 rows.
      CREATE INDEX records_by_parent ON records (kind, project_id, parent_id, created_at, seq);
      CREATE INDEX records_by_project ON records (kind, project_id, created_at, seq);
      CREATE INDEX records_by_tag ON records (kind, project_id, tag, created_at, seq);
      CREATE INDEX records_by_expiry ON records (expires_at, seq) WHERE expires_at IS NOT NULL;
    `,
    // The same tables on PostgreSQL. `seq` is an identity column (a sequence: never reused); the
    // store takes it under a per-(kind, project) lock held to commit, so within one list seq order
    // is commit order (src/storage/postgres/records.ts says why). `data` is TEXT, not JSONB: the
    // document round-trips byte for byte (key order, "\u0000" escapes), and sum() reads a field
    // with a json cast in the aggregate.
    postgres: `
      CREATE TABLE meta (
        key   TEXT PRIMARY KEY,
        value TEXT NOT NULL
      );
      CREATE TABLE records (
        seq        BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        kind       TEXT    NOT NULL,
        id         TEXT    NOT NULL,
        project_id TEXT    NOT NULL,
        parent_id  TEXT    NOT NULL DEFAULT '',
        created_at BIGINT  NOT NULL,
        expires_at BIGINT,
        tag        TEXT,
        version    INTEGER NOT NULL DEFAULT 1,
        data       TEXT    NOT NULL,
        UNIQUE (kind, id)
      );
      CREATE INDEX records_by_parent ON records (kind, project_id, parent_id, created_at, seq);
      CREATE INDEX records_by_project ON records (kind, project_id, created_at, seq);
      CREATE INDEX records_by_tag ON records (kind, project_id, tag, created_at, seq);
      CREATE INDEX records_by_expiry ON records (expires_at, seq) WHERE expires_at IS NOT NULL;
    `,
  },
  RECORD_TOTALS_MIGRATION,
];

const registered: Migration[] = [];

/** The registered migrations, in registration order. */
export const registeredMigrations: readonly Migration[] = registered;

/**
 * Registers a migration that every store opened afterwards applies (once, recorded by id), after
 * the core schema. For tables a module keeps in the same database file; `postgres` is the same change
 * for a store on PostgreSQL (see Migration.postgres). A module that only gets
 * the store after it is open can call `store.applyMigrations()` instead.
 */
export function registerMigration(id: string, sql: string, postgres?: string): void {
  const existing = registered.find((m) => m.id === id);
  if (existing) {
    if (existing.sql !== sql || existing.postgres !== postgres) throw new Error(`migration ${id} registered twice with different SQL`);
    return;
  }
  registered.push(postgres === undefined ? { id, sql } : { id, sql, postgres });
}

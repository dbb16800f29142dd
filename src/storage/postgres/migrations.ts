// Schema migrations on PostgreSQL. Several instances may start at once on an empty database: each
// takes the same session-level advisory lock before looking at schema_migrations, so exactly one
// applies what is missing while the others wait, and then find everything recorded.
import type pg from "pg";
import type { Migration } from "../sqlite-migrations.js";

// The two-int advisory key space (it does not overlap the one-bigint space the record store's
// per-list insert locks use). 0x41545249 is "ATRI".
const LOCK_CLASS = 0x41545249;
const MIGRATION_LOCK = 1;

/**
 * Applies each migration not yet recorded, in order, each in its own transaction together with its
 * bookkeeping row: a failing migration leaves no trace and stops the rest (the error is rethrown).
 * A migration without a `postgres` form is recorded as applied with nothing run.
 */
export async function applyPostgresMigrations(pool: pg.Pool, migrations: readonly Migration[], now = Date.now): Promise<void> {
  const seen = new Set<string>();
  for (const m of migrations) {
    if (seen.has(m.id)) throw new Error(`migration id ${m.id} listed twice`);
    seen.add(m.id);
  }
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("SELECT pg_advisory_lock($1, $2)", [LOCK_CLASS, MIGRATION_LOCK]);
    try {
      await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
        seq        BIGINT GENERATED ALWAYS AS IDENTITY,
        id         TEXT   PRIMARY KEY,
        applied_at BIGINT NOT NULL
      )`);
      const applied = new Set((await client.query<{ id: string }>("SELECT id FROM schema_migrations")).rows.map((r) => r.id));
      for (const m of migrations) {
        if (applied.has(m.id)) continue;
        await client.query("BEGIN");
        try {
          if (m.postgres) await client.query(m.postgres);
          await client.query("INSERT INTO schema_migrations (id, applied_at) VALUES ($1, $2)", [m.id, Math.floor(now() / 1000)]);
          await client.query("COMMIT");
        } catch (err) {
          await client.query("ROLLBACK").catch((e: Error) => (broken = e));
          throw new Error(`migration ${m.id} failed: ${(err as Error).message}`, { cause: err });
        }
      }
    } finally {
      // A session lock outlives a failed transaction: release it explicitly (closing the
      // connection would too, which is what a broken one gets).
      if (!broken) await client.query("SELECT pg_advisory_unlock($1, $2)", [LOCK_CLASS, MIGRATION_LOCK]).catch((e: Error) => (broken = e));
    }
  } finally {
    client.release(broken ?? false);
  }
}

/** Ids of the applied migrations, in the order they were applied. */
export async function appliedPostgresMigrations(pool: pg.Pool): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>("SELECT id FROM schema_migrations ORDER BY seq");
  return rows.map((r) => r.id);
}

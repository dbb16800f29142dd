// The record store on PostgreSQL (scale-out): open a pool, bring the schema up to date under an
// advisory lock, and hand out the store. docs/scale-out.md, "PostgreSQL store", explains the choices.
import { CORE_MIGRATIONS, registeredMigrations, type Migration } from "../sqlite-migrations.js";
import { applyPostgresMigrations } from "./migrations.js";
import { DEFAULT_POOL_SIZE, newPool } from "./pool.js";
import { PostgresRecordStore } from "./records.js";

export { PostgresRecordStore, retryOnDeadlock, type PostgresRecordStoreOptions } from "./records.js";
export { applyPostgresMigrations, appliedPostgresMigrations } from "./migrations.js";
export { DEFAULT_POOL_SIZE, clientConfig, inTransaction, newPool, sqlState } from "./pool.js";

/**
 * Connects to `url` (postgres://…) with a pool of `poolSize` connections (default
 * DEFAULT_POOL_SIZE), applies the core, registered and given migrations, and returns the store.
 * Fails (closing the pool) when the database is unreachable or a migration fails.
 */
export async function openPostgresRecordStore(
  url: string,
  opts: { now?: () => number; migrations?: Migration[]; poolSize?: number } = {},
): Promise<PostgresRecordStore> {
  const pool = newPool(url, opts.poolSize ?? DEFAULT_POOL_SIZE);
  try {
    await applyPostgresMigrations(pool, [...CORE_MIGRATIONS, ...registeredMigrations, ...(opts.migrations ?? [])]);
  } catch (err) {
    await pool.end().catch(() => {});
    throw err;
  }
  return new PostgresRecordStore(pool, opts.now ? { now: opts.now } : {});
}

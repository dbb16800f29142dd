/**
 * What the PostgreSQL search index needs of the record store it lives beside: its pool, and a
 * transaction helper (BEGIN/COMMIT/ROLLBACK on one client). `PostgresRecordStore`
 * (src/storage/postgres) has both; `poolStore` makes one from a bare pool (tools, benchmarks).
 */
import type pg from "pg";

export interface PgStore {
  readonly pool: pg.Pool;
  transaction<T>(f: (client: pg.PoolClient) => Promise<T>): Promise<T>;
}

/** A `PgStore` over a pool: each transaction on a client of its own, rolled back when `f` throws. */
export function poolStore(pool: pg.Pool): PgStore {
  return {
    pool,
    async transaction<T>(f: (client: pg.PoolClient) => Promise<T>): Promise<T> {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        const out = await f(client);
        await client.query("COMMIT");
        return out;
      } catch (err) {
        await client.query("ROLLBACK").catch(() => {});
        throw err;
      } finally {
        client.release();
      }
    },
  };
}

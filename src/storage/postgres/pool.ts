// The connection pool of a PostgreSQL store, and the transaction helper every PostgreSQL module
// (records, jobs, search) commits through.
import pg from "pg";

/**
 * Connections per instance unless the caller says otherwise. Every request holds one only for
 * the statements it runs (no connection is held across an await of anything else), so 10 serve
 * a busy instance; the database needs `instances × poolSize` (+ 1 per instance for LISTEN).
 */
export const DEFAULT_POOL_SIZE = 10;

const INT8_OID = 20;
const CONNECT_TIMEOUT_MS = 10_000;

// Columns that hold Unix seconds or milliseconds are BIGINT; pg hands BIGINT back as a string
// (it may exceed 2^53). Every value this project stores there is a JS number already, so this
// pool reads them back as numbers. Per pool, not pg's global type table, so no other pg user in
// the process is affected.
const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8_OID && format !== "binary") return (v: string) => Number(v);
    return (pg.types.getTypeParser as (o: number, f?: "text" | "binary") => unknown)(oid, format);
  },
} as unknown as pg.CustomTypesConfig;

export function newPool(url: string, poolSize = DEFAULT_POOL_SIZE): pg.Pool {
  if (!Number.isInteger(poolSize) || poolSize < 1) throw new RangeError(`invalid PostgreSQL pool size ${poolSize}`);
  // A database that stops answering makes a request fail after CONNECT_TIMEOUT_MS rather than
  // hang; keep-alive notices a connection whose peer vanished.
  const pool = new pg.Pool({ connectionString: url, max: poolSize, types, connectionTimeoutMillis: CONNECT_TIMEOUT_MS, keepAlive: true });
  // An idle connection that dies (the server restarts, a network cut) is reported here; without a
  // listener it would crash the process. The pool drops it and the next query opens a new one.
  pool.on("error", () => {});
  // A connection that dies while checked out (mid-transaction) emits 'error' on its client, which
  // the pool only listens for while the client is idle: the statement in flight fails on its own
  // promise, so this listener only keeps the event from crashing the process.
  pool.on("connect", (client) => client.on("error", () => {}));
  return pool;
}

/** Options for a client opened outside the pool (LISTEN), with the pool's type parsing. */
export function clientConfig(url: string): pg.ClientConfig {
  return { connectionString: url, types };
}

/**
 * Runs `f` in BEGIN … COMMIT on one pooled connection; anything thrown rolls the transaction back
 * and is rethrown. A connection whose ROLLBACK fails is discarded rather than reused.
 */
export async function inTransaction<T>(pool: pg.Pool, f: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query("BEGIN");
    try {
      const result = await f(client);
      await client.query("COMMIT");
      return result;
    } catch (err) {
      await client.query("ROLLBACK").catch((e: Error) => (broken = e));
      throw err;
    }
  } finally {
    client.release(broken);
  }
}

/** PostgreSQL's SQLSTATE of an error, when it is one. */
export function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === "string" ? code : undefined;
}

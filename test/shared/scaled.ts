// The shared engines of the scaled test set-up (ATRIUM_TEST_ENGINES=scaled, docs/scale-out.md):
// per test server a fresh PostgreSQL database (a clone of a template database migrated once per
// test process: ~15 ms instead of running every migration), a fresh Swift bucket through its S3
// API, and a Redis key prefix of its own. PostgreSQL comes from test/shared/postgres.ts, Swift from
// test/shared/swift.ts, Redis from ATRIUM_TEST_REDIS_URL or a private redis-server started here on
// a free port; each engine serves the whole test run (test/shared/per-run.ts) and is stopped by
// its PID when the run is over.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { openStorage } from "../../src/storage/index.js";
import { areas } from "../../src/services/index.js";
import { startRedis } from "./operability.js";
import { afterExit, onePerRun } from "./per-run.js";
import { testPostgres } from "./postgres.js";
import { testSwift } from "./swift.js";


/** The secret every instance of one deployment shares (ATRIUM_SECRET_KEY is required beside a database). */
export const SCALED_SECRET_KEY = "atrium-scaled-test-secret-key";

export interface ScaledEngines {
  databaseUrl: string;
  /** Undefined with `s3: false` (blobs on each instance's disk). */
  bucket?: string;
  redisUrl: string;
  redisKeyPrefix: string;
  /** The environment that points an instance at these engines. */
  env: Record<string, string>;
  /** Drops the database (the bucket and the Redis keys go with the run's Swift and Redis). */
  dispose(): Promise<void>;
}

let redis: Promise<string> | undefined;
let template: Promise<string> | undefined;
let n = 0;

function testRedis(): Promise<string> {
  redis ??= process.env.ATRIUM_TEST_REDIS_URL
    ? Promise.resolve(process.env.ATRIUM_TEST_REDIS_URL)
    : onePerRun("redis", async (owner) => {
        const r = await startRedis({ detached: true });
        // Stopped by PID once the run is over, however it ends.
        afterExit(owner, `kill ${r.proc.pid} 2>/dev/null`);
        r.proc.unref();
        return r.url;
      });
  return redis;
}

/** A database holding every migration the server applies, made once per test process. */
function migratedTemplate(): Promise<string> {
  template ??= (async () => {
    const pgs = await testPostgres();
    const url = await pgs.newDatabase("atrium_template");
    const dataDir = mkdtempSync(join(tmpdir(), "atrium-template-"));
    try {
      const storage = await openStorage({ dataDir, databaseUrl: url, databasePoolSize: 1 }, { migrations: areas.flatMap((a) => a.migrations ?? []) });
      await storage.close();
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
    return url;
  })();
  return template;
}

let cloning: Promise<unknown> = Promise.resolve();

/** A copy of `templateUrl`'s database under a new name; one at a time (the template must have no open session). */
function cloneDatabase(templateUrl: string, prefix: string): Promise<string> {
  const done = cloning.then(() => cloneNow(templateUrl, prefix));
  cloning = done.catch(() => {});
  return done;
}

async function cloneNow(templateUrl: string, prefix: string): Promise<string> {
  const { adminUrl } = await testPostgres();
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${n++}`;
  const templateName = decodeURIComponent(new URL(templateUrl).pathname.slice(1));
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(`CREATE DATABASE "${name}" TEMPLATE "${templateName}"`);
  } finally {
    await c.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/**
 * Engines for one scaled deployment. `migrated: false` gives an empty database (the start-up
 * migration tests); the default clones the migrated template. `s3: false` leaves blobs on each
 * instance's disk, for tests of instances that store no blob (start-up, keys, rate limits).
 */
export async function scaledEngines(opts: { migrated?: boolean; s3?: boolean } = {}): Promise<ScaledEngines> {
  const [pgs, s3, redisUrl] = await Promise.all([testPostgres(), opts.s3 === false ? undefined : testSwift(), testRedis()]);
  const databaseUrl = opts.migrated === false ? await pgs.newDatabase("atrium_scaled") : await cloneDatabase(await migratedTemplate(), "atrium_scaled");
  const bucket = await s3?.newBucket("atrium-scaled");
  const redisKeyPrefix = `t${process.pid}-${n++}:`;
  return {
    databaseUrl,
    bucket,
    redisUrl,
    redisKeyPrefix,
    env: {
      ATRIUM_DATABASE_URL: databaseUrl,
      ATRIUM_DATABASE_POOL_SIZE: "5",
      ...(s3 && bucket && s3.s3Env(bucket)),
      ATRIUM_REDIS_URL: redisUrl,
      ATRIUM_REDIS_KEY_PREFIX: redisKeyPrefix,
      ATRIUM_SECRET_KEY: SCALED_SECRET_KEY,
    },
    dispose: () => pgs.dropDatabase(databaseUrl),
  };
}

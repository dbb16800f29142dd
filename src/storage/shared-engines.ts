// Opening the shared engines of a scaled deployment: PostgreSQL (records, jobs, the search index)
// and an S3-compatible store (blobs). Their modules are loaded on demand, so the embedded default
// never loads the PostgreSQL store or the AWS SDK. The engines live in src/storage/postgres/,
// src/jobs/postgres-job-store.ts, src/engines/search/postgres/ and src/storage/s3-blobs.ts; the
// search index is loaded by name, through the shape below.
import type { SearchIndex } from "../engines/search/types.js";
import type { JobStore } from "../jobs/types.js";
import type { Migration } from "./sqlite-migrations.js";
import type { BlobStore, RecordStore } from "./types.js";
import { redactedUrl } from "../common/redacted-url.js";

/** An engine that cannot be reached (or refuses us) at start-up: main() prints the message alone. */
export class EngineUnreachable extends Error {}

type ClosableSearchIndex = SearchIndex & { close(): Promise<void> };

interface PostgresSearchModule {
  PostgresSearchIndex: { fromStore(records: RecordStore): ClosableSearchIndex };
}

// Paths relative to this file, the same in src/ (tsx, vitest) and dist/src/ (the build).
const MODULES = {
  postgresSearch: "../engines/search/postgres/index.js",
} as const;

async function load<T>(name: keyof typeof MODULES): Promise<T> {
  return (await import(MODULES[name])) as T;
}

/** The first line of an error's message (drivers sometimes add detail lines). */
const firstLine = (e: unknown) => String((e as Error)?.message ?? e).split("\n")[0];

export interface PostgresEngines {
  records: RecordStore;
  jobs: JobStore;
  searchIndex: () => ClosableSearchIndex;
}

/**
 * Records, jobs and the search index in the database at `url`. Pending migrations are applied
 * under an advisory lock (pg-core's runner), so instances starting together migrate once.
 */
export async function openPostgresEngines(url: string, opts: { now?: () => number; migrations?: Migration[]; poolSize: number }): Promise<PostgresEngines> {
  const [pgMod, jobsMod] = await Promise.all([import("./postgres/index.js"), import("../jobs/postgres-job-store.js")]);
  let records: Awaited<ReturnType<typeof pgMod.openPostgresRecordStore>>;
  try {
    records = await pgMod.openPostgresRecordStore(url, opts);
  } catch (e) {
    throw new EngineUnreachable(`cannot open the PostgreSQL database at ${redactedUrl(url)} (ATRIUM_DATABASE_URL): ${firstLine(e)}`);
  }
  try {
    const searchMod = await load<PostgresSearchModule>("postgresSearch");
    return { records, jobs: new jobsMod.PostgresJobStore(records), searchIndex: () => searchMod.PostgresSearchIndex.fromStore(records) };
  } catch (e) {
    await records.close();
    throw e;
  }
}

/** Blobs in the bucket (and prefix) of `url`, with the endpoint and credentials of `env`'s AWS variables. */
export async function openS3Blobs(url: string, env: Record<string, string | undefined>): Promise<BlobStore & { close?(): Promise<void> | void }> {
  const s3 = await import("./s3-blobs.js");
  try {
    // Checks the bucket answers and aborts the multipart uploads of writes a crash interrupted.
    return await s3.openS3BlobStore(url, env);
  } catch (e) {
    throw new EngineUnreachable(`cannot open the blob store (ATRIUM_BLOB_URL): ${firstLine(e)}`);
  }
}

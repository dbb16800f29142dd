// Opening storage. The embedded default: <dataDir>/atrium.db (SQLite, WAL) and <dataDir>/blobs
// (+ tmp/). With the engines of a scaled deployment (config-engines.ts), records, jobs and the
// search index go to PostgreSQL and blobs to an S3-compatible store, each chosen on its own. Only
// this folder (and the engines' own index and job-store files) knows which engine is underneath.
import * as fs from "node:fs";
import * as path from "node:path";
import { DiskBlobStore } from "./disk-blobs.js";
import { openSqliteRecordStore, SqliteRecordStore, type SqliteRecordStoreOptions } from "./sqlite-records.js";
import { SqliteSearchIndex } from "../engines/search/sqlite-index.js";
import type { SearchIndex } from "../engines/search/types.js";
import { JOBS_MIGRATION, SqliteJobStore } from "../jobs/sqlite-job-store.js";
import type { JobStore } from "../jobs/types.js";
import type { Migration } from "./sqlite-migrations.js";
import { DEFAULT_DATABASE_POOL_SIZE } from "../config-engines.js";
import { EngineUnreachable, openPostgresEngines, openS3Blobs } from "./shared-engines.js";
import { redactedUrl } from "../common/redacted-url.js";
import { LocalSignals, type Signals } from "./signals.js";
import type { BlobStore, RecordStore } from "./types.js";

export * from "./types.js";
export { freeBytes, isNoSpace } from "./space-reserve.js";
export { DiskBlobStore, InvalidBlobKey } from "./disk-blobs.js";
export { openSqliteRecordStore, SqliteRecordStore, type SqliteRecordStoreOptions } from "./sqlite-records.js";
export { registerMigration, type Migration } from "./sqlite-migrations.js";
export { recordTotalMigration } from "./record-totals.js";
export { EngineUnreachable } from "./shared-engines.js";
export { LocalSignals, type Signals } from "./signals.js";

/** The embedded stores of one data directory. */
export interface EmbeddedStorage {
  records: SqliteRecordStore;
  blobs: DiskBlobStore;
}
/** The embedded stores, under the name tests and benches use. */
export type Storage = EmbeddedStorage;

/** Where the server's storage lives: the data dir, and the shared engines when configured. */
export interface StorageConfig {
  dataDir: string;
  /** postgres://…: records, jobs and the search index in PostgreSQL. */
  databaseUrl?: string;
  /** s3://bucket[/prefix]: blobs in an S3-compatible store. */
  blobUrl?: string;
  /** Connections of this instance's PostgreSQL pool. */
  databasePoolSize?: number;
  /** The AWS variables the S3 client reads (endpoint, credentials, region, path style). */
  env?: Record<string, string | undefined>;
}

/** The server's storage, whichever engines hold it. */
export interface ServerStorage {
  records: RecordStore;
  blobs: BlobStore;
  jobs: JobStore;
  engines: { records: "sqlite" | "postgres"; blobs: "disk" | "s3" };
  /** Hints to every instance sharing the records (signals.ts). */
  signals: Signals;
  /** Closes the record store, the signals and the blob store's client. */
  close(): Promise<void>;
}

// The search index beside a record store on PostgreSQL (the SQLite one is found by its class).
const searchIndexes = new WeakMap<RecordStore, () => SearchIndex & { close(): Promise<void> }>();

/** What openStorage takes beside the record store's options. */
export type OpenStorageOptions = SqliteRecordStoreOptions & {
  /** Space kept back on the data dir's disk for deletes on a full disk (space-reserve.ts); disk blobs only. */
  reserveBytes?: number;
};

/**
 * Opens storage, applies pending migrations and removes the temp files of writes a crash
 * interrupted. Given a data dir: the embedded stores. Given a StorageConfig: the engines it
 * names, with the job store of the record engine (its table's migration goes first: an area's
 * migration may rewrite queued jobs).
 */
export async function openStorage(dataDir: string, opts?: OpenStorageOptions): Promise<EmbeddedStorage>;
export async function openStorage(cfg: StorageConfig, opts?: OpenStorageOptions): Promise<ServerStorage>;
export async function openStorage(where: string | StorageConfig, opts: OpenStorageOptions = {}): Promise<EmbeddedStorage | ServerStorage> {
  if (typeof where === "string") return openEmbedded(where, opts);
  fs.mkdirSync(where.dataDir, { recursive: true });
  const migrations: Migration[] = [JOBS_MIGRATION, ...(opts.migrations ?? [])];
  if (!where.blobUrl && !where.databaseUrl) {
    // The embedded default, with the job store and signals the server takes from storage.
    const { records, blobs } = await openEmbedded(where.dataDir, { ...opts, migrations });
    const signals = new LocalSignals();
    return {
      records,
      blobs,
      jobs: new SqliteJobStore(records),
      engines: { records: "sqlite", blobs: "disk" },
      signals,
      async close() {
        await signals.close();
        await records.close();
      },
    };
  }
  const blobs = await openBlobs(where, opts.reserveBytes);
  let records: RecordStore | undefined;
  let jobs: JobStore;
  let signals: Signals;
  try {
    if (where.databaseUrl) {
      const pg = await openPostgresEngines(where.databaseUrl, { now: opts.now, migrations, poolSize: where.databasePoolSize ?? DEFAULT_DATABASE_POOL_SIZE });
      ({ records, jobs } = pg);
      searchIndexes.set(records, pg.searchIndex);
      signals = await openPostgresSignals(where.databaseUrl);
    } else {
      const { reserveBytes: _, ...recordOpts } = opts;
      const sqlite = openSqliteRecordStore(path.join(where.dataDir, "atrium.db"), { ...recordOpts, migrations });
      records = sqlite;
      jobs = new SqliteJobStore(sqlite);
      signals = new LocalSignals();
    }
  } catch (e) {
    await records?.close();
    await (blobs as { close?(): unknown }).close?.();
    throw e;
  }
  const opened = records;
  return {
    records: opened,
    blobs,
    jobs,
    engines: { records: where.databaseUrl ? "postgres" : "sqlite", blobs: where.blobUrl ? "s3" : "disk" },
    signals,
    async close() {
      await signals.close();
      await opened.close();
      await (blobs as { close?(): unknown }).close?.();
    },
  };
}

async function openPostgresSignals(url: string): Promise<Signals> {
  try {
    return await (await import("./postgres-signals.js")).PostgresSignals.open(url);
  } catch (e) {
    throw new EngineUnreachable(`cannot listen for signals on the PostgreSQL database at ${redactedUrl(url)} (ATRIUM_DATABASE_URL): ${(e as Error).message}`);
  }
}

/** The embedded stores of `dataDir`: the database's writes release the disk reserve when they meet SQLITE_FULL. */
async function openEmbedded(dataDir: string, opts: OpenStorageOptions): Promise<EmbeddedStorage> {
  fs.mkdirSync(dataDir, { recursive: true });
  const { reserveBytes, ...recordOpts } = opts;
  const blobs = new DiskBlobStore(dataDir, { reserveBytes });
  await blobs.recover();
  const records = openSqliteRecordStore(path.join(dataDir, "atrium.db"), { onFull: () => blobs.releaseReserve(), ...recordOpts });
  return { records, blobs };
}

async function openBlobs(cfg: StorageConfig, reserveBytes: number | undefined): Promise<BlobStore> {
  if (cfg.blobUrl) return openS3Blobs(cfg.blobUrl, cfg.env ?? process.env);
  const blobs = new DiskBlobStore(cfg.dataDir, { reserveBytes });
  await blobs.recover();
  return blobs;
}

/**
 * The search index that lives beside `records`: for the embedded store, the SQLite index in the
 * same database file (its tables come from SEARCH_MIGRATION, applied here if the store was opened
 * without it); for PostgreSQL, its tables in the same database. Only this folder knows which
 * engine is underneath.
 */
export function searchIndexFor(records: RecordStore): SearchIndex & { close(): Promise<void> } {
  if (records instanceof SqliteRecordStore) return SqliteSearchIndex.fromStore(records);
  const open = searchIndexes.get(records);
  if (open) return open();
  throw new Error(`no search index for this record store (${records.constructor.name})`);
}

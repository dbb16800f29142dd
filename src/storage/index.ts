// The embedded storage default: <dataDir>/atrium.db (SQLite, WAL) and <dataDir>/blobs (+ tmp/).
import * as fs from "node:fs";
import * as path from "node:path";
import { DiskBlobStore } from "./disk-blobs.js";
import { openSqliteRecordStore, SqliteRecordStore, type SqliteRecordStoreOptions } from "./sqlite-records.js";
import { SqliteSearchIndex } from "../engines/search/sqlite-index.js";
import type { SearchIndex } from "../engines/search/types.js";
import type { RecordStore } from "./types.js";

export * from "./types.js";
export { DiskBlobStore, InvalidBlobKey } from "./disk-blobs.js";
export { openSqliteRecordStore, SqliteRecordStore, type SqliteRecordStoreOptions } from "./sqlite-records.js";
export { registerMigration, type Migration } from "./sqlite-migrations.js";

export interface Storage {
  records: SqliteRecordStore;
  blobs: DiskBlobStore;
}

/**
 * Opens the data directory, creating it on first use, applies pending migrations and removes the
 * temp files of writes a crash interrupted.
 */
export async function openStorage(dataDir: string, opts?: SqliteRecordStoreOptions): Promise<Storage> {
  fs.mkdirSync(dataDir, { recursive: true });
  const blobs = new DiskBlobStore(dataDir);
  await blobs.recover();
  const records = openSqliteRecordStore(path.join(dataDir, "atrium.db"), opts);
  return { records, blobs };
}

/**
 * The search index that lives beside `records`: for the embedded store, the SQLite index in the
 * same database file (its tables come from SEARCH_MIGRATION, applied here if the store was opened
 * without it). Only this folder knows which engine is underneath.
 */
export function searchIndexFor(records: RecordStore): SearchIndex & { close(): Promise<void> } {
  if (records instanceof SqliteRecordStore) return SqliteSearchIndex.fromStore(records);
  throw new Error(`no search index for this record store (${records.constructor.name})`);
}

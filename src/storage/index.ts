// The embedded storage default: <dataDir>/atrium.db (SQLite, WAL) and <dataDir>/blobs (+ tmp/).
import * as fs from "node:fs";
import * as path from "node:path";
import { DiskBlobStore } from "./disk-blobs.js";
import { openSqliteRecordStore, SqliteRecordStore, type SqliteRecordStoreOptions } from "./sqlite-records.js";

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

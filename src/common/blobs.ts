// Removing the bytes of a record that is already deleted. The record's deletion has committed, so
// the API shows the resource gone and the caller's request has succeeded: a blob that cannot be
// removed now (an I/O error, a read-only directory) is logged and left for the orphan sweeper
// (storage.sweep-orphans), never turned into an error after the fact. Callers delete the record
// first and the bytes second, so a failure never leaves a record whose bytes are gone.
import type { Logger } from "pino";
import type { BlobStore, RecordStore } from "../storage/types.js";

export async function removeBlobsOfDeleted(deps: { blobs: BlobStore; log: Pick<Logger, "warn"> }, keys: string[]): Promise<void> {
  for (const key of keys) {
    try {
      await deps.blobs.delete(key);
    } catch (err) {
      deps.log.warn({ err, key }, "blob of a deleted record not removed; the orphan sweeper reclaims it");
    }
  }
}

/**
 * Of `keys`, each named `<record id>` or `<record id>.<suffix>` (a video's variants), the ones whose
 * record of `kind` exists in any project: what a BlobOwner's `held` answers for most areas.
 */
export async function keysOfPresentRecords(records: RecordStore, kind: string, keys: string[]): Promise<Set<string>> {
  const idOf = (key: string) => (key.includes(".") ? key.slice(0, key.indexOf(".")) : key);
  const present = await records.present(kind, [...new Set(keys.map(idOf))]);
  return new Set(keys.filter((k) => present.has(idOf(k))));
}

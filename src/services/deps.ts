// What every service implementation is built from: storage behind its interfaces, the key
// store, a clock (tests move it) and a logger. No HTTP in here.
import type { Logger } from "pino";
import type { KeyStore } from "../auth/keys.js";
import type { ProjectStorage } from "../limits/storage.js";
import type { BlobStore, RecordStore, Scope } from "../storage/types.js";

export interface Clock {
  /** Unix seconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Math.floor(Date.now() / 1000) };

/**
 * What one area tells the others. The server delivers each event to every area's runtime hook
 * (AreaRuntime.onFileDeleted, ...), so an area reacts to another's changes without importing it.
 */
export interface AreaEvents {
  /** A File was deleted or has expired: areas drop what refers to it (vector stores detach it). */
  fileDeleted(scope: Scope, fileId: string): Promise<void>;
}

export interface ServiceDeps {
  records: RecordStore;
  blobs: BlobStore;
  keys: KeyStore;
  clock: Clock;
  log: Logger;
  events: AreaEvents;
  /** The project file-storage cap: a caller's File is recorded through its commit(). */
  storageCap: ProjectStorage;
}

// What every service implementation is built from: storage behind its interfaces, the key
// store, a clock (tests move it) and a logger. No HTTP in here.
import type { Logger } from "pino";
import type { KeyStore } from "../auth/keys.js";
import type { BlobStore, RecordStore } from "../storage/types.js";

export interface Clock {
  /** Unix seconds. */
  now(): number;
}

export const systemClock: Clock = { now: () => Math.floor(Date.now() / 1000) };

export interface ServiceDeps {
  records: RecordStore;
  blobs: BlobStore;
  keys: KeyStore;
  clock: Clock;
  log: Logger;
}

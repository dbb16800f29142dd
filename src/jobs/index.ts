// The durable job runner (runner.ts explains the model) and what is built on it.
export { JobRunner, type JobRunnerOptions } from "./runner.js";
export { backoffDelay } from "./run.js";
export { JobAborted, PermanentJobError, type AbortWhy, type JobContext, type JobHandler, type KindOptions } from "./handler.js";
export { type FinishedListener } from "./finished-listeners.js";
export { SqliteJobStore } from "./sqlite-job-store.js";
// PostgresJobStore (./postgres-job-store.js) is imported from its own module: re-exported here it
// would load the pg driver into every embedded server.
export { TERMINAL_STATES, type ClaimResult, type Job, type JobState, type JobStore, type LeaseStatus, type NewJob, type RunEnd } from "./types.js";
export {
  EXPIRE_JOB_KIND,
  ExpirySweeper,
  setTimer,
  timerKind,
  type ExpiryHandler,
  type ExpirySweeperOptions,
  type TimerData,
} from "./expiry.js";
export { OrphanBlobSweeper, STORAGE_SWEEP_ORPHANS_JOB, type BlobOwner, type OrphanSweepOptions, type SweepResult } from "./orphan-blobs.js";

// The durable job runner (runner.ts explains the model) and what is built on it.
export {
  backoffDelay,
  JobAborted,
  JobRunner,
  PermanentJobError,
  type AbortWhy,
  type FinishedListener,
  type JobContext,
  type JobHandler,
  type JobRunnerOptions,
  type KindOptions,
} from "./runner.js";
export { SqliteJobStore } from "./sqlite-job-store.js";
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

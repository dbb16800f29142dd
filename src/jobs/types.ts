// What a job is, and the storage contract the runner needs. The runner owns the clock and every
// decision (when to retry, when to give up); a JobStore only applies state changes atomically, each
// one fenced by the lease that the change is made under. That split keeps an implementation on
// another engine (PostgreSQL with `FOR UPDATE SKIP LOCKED`, say) a matter of translating a dozen
// small statements, with no scheduling logic to re-implement.
import type { Scope, WriteOp } from "../storage/types.js";

export type JobState = "queued" | "running" | "succeeded" | "failed" | "cancelled";

export const TERMINAL_STATES: ReadonlySet<JobState> = new Set(["succeeded", "failed", "cancelled"]);

/** One durable job row. Times are milliseconds on the runner's clock. */
export interface Job<P = unknown, R = unknown> {
  id: string;
  kind: string;
  scope: Scope;
  payload: P;
  state: JobState;
  /** Runs started so far, including the current one (a run ended by shutdown is not counted). */
  attempts: number;
  /** Not claimed before this time (delayed jobs, retry backoff). */
  runAfter: number;
  /** The claim token of the run holding the job (runner id + claim number), null unless running. */
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  /** cancel() was called while the job was running; the run ends as `cancelled`. */
  cancelRequested: boolean;
  progress: unknown;
  checkpoint: unknown;
  lastError: string | null;
  result: R | null;
  createdAt: number;
  updatedAt: number;
  finishedAt: number | null;
}

export interface NewJob {
  id: string;
  kind: string;
  scope: Scope;
  payload: unknown;
  runAfter: number;
}

/** How a run ends, as decided by the runner. */
export type RunEnd =
  | { state: "succeeded"; result: unknown; ops: WriteOp[] }
  | { state: "failed"; error: string }
  /** Back to the queue after a transient failure; the attempt counts. */
  | { state: "retry"; error: string; runAfter: number }
  /** Back to the queue because this runner is shutting down; the attempt does not count. */
  | { state: "released" };

export interface RunEnding {
  id: string;
  owner: string;
  end: RunEnd;
  notify: boolean;
}

/**
 * What a write made under a lease found: the run still holds the job, or the job was cancelled
 * meanwhile (nothing written), or another run owns it now (nothing written).
 */
export type LeaseStatus = "held" | "cancel-requested" | "lost";

export interface ClaimResult {
  /** Now running under the given lease. */
  claimed: Job[];
  /** Jobs cancelled while running whose runner vanished: ended `cancelled` by this claim. */
  cancelled: Job[];
}

export interface JobStore {
  /**
   * Inserts the jobs in one transaction. An id that already exists is not inserted again: its
   * existing row is returned instead (idempotent enqueue). Reusing an id for another kind or
   * project throws.
   */
  enqueue(jobs: NewJob[], now: number): Promise<Job[]>;
  get(id: string): Promise<Job | undefined>;
  /**
   * Atomically moves up to `limit` runnable jobs of `kind` to running under `owner` until
   * `leaseUntil`, incrementing their attempts: queued jobs due by `now`, and running jobs whose
   * lease expired (their runner died). Two runners never claim the same job. Running jobs whose
   * runner died after a cancel was requested end `cancelled` instead (`notify`: marked awaiting
   * the finished-listeners).
   */
  claim(kind: string, owner: string, limit: number, now: number, leaseUntil: number, notify: boolean): Promise<ClaimResult>;
  /** Extends the lease; reports whether it is still held. */
  renew(id: string, owner: string, leaseUntil: number): Promise<LeaseStatus>;
  saveProgress(id: string, owner: string, progress: unknown, now: number): Promise<LeaseStatus>;
  /**
   * Saves the checkpoint and applies `ops` (record writes) in ONE transaction, only if `owner` still
   * holds the lease and no cancel was requested. Throws (writing nothing) if an op fails.
   */
  saveCheckpoint(id: string, owner: string, checkpoint: unknown, ops: WriteOp[], now: number): Promise<LeaseStatus>;
  /**
   * Ends runs, each held by its `owner`, and returns for each the updated job; undefined when the
   * lease was lost (nothing written for it). If a cancel was requested meanwhile the job ends
   * `cancelled` instead of `end`. A success applies `end.ops` with the state change, atomically;
   * if an op fails that run's entry is the error and nothing of that run is written (the others
   * are). `notify` marks a terminal state as awaiting the finished-listeners. Batched because
   * runs that end together (many short jobs) then share one commit.
   */
  endRuns(runs: RunEnding[], now: number): Promise<Array<Job | undefined | Error>>;
  /**
   * Queued: cancelled at once ("cancelled"; `notify(kind)` says whether to mark it awaiting the
   * finished-listeners). Running: cancel requested ("requested"). Terminal: unchanged ("none").
   */
  cancel(id: string, now: number, notify: (kind: string) => boolean): Promise<{ job: Job; effect: "cancelled" | "requested" | "none" } | undefined>;
  /** Failed or cancelled: back to queued with a fresh attempt count. Otherwise unchanged. */
  retry(id: string, now: number): Promise<Job | undefined>;
  /** Whether a job of these kinds is queued or running (with `runnableAt`: claimable at that time). */
  hasUnfinished(kinds: string[], runnableAt?: number): Promise<boolean>;
  /** Terminal jobs whose finished-listeners have not completed (crash in between). */
  pendingNotifications(kinds: string[], limit: number): Promise<Job[]>;
  ackNotification(id: string): Promise<void>;
  /** Deletes up to `limit` terminal jobs finished before `before` and already notified. */
  purgeFinished(before: number, limit: number): Promise<number>;
  /** How many jobs of each kind are queued and running (the jobs gauge of /metrics). */
  unfinishedCounts(): Promise<Array<{ kind: string; state: "queued" | "running"; n: number }>>;
  /**
   * Optional, for stores shared by processes that can signal each other (PostgreSQL's NOTIFY):
   * calls `onEvent` for what any process does to a job — enqueued or requeued (`due`, with
   * `runAfter` on the runner's clock), a cancel requested while it runs, a run ended — so a runner
   * starts, stops or reports it without waiting for its next poll or heartbeat. Returns a
   * function that stops watching. Without it, runners find other processes' changes by polling.
   */
  watch?(onEvent: (event: JobEvent) => void): () => Promise<void>;
}

/** What JobStore.watch reports. */
export type JobEvent =
  | { type: "due"; kind: string; runAfter: number }
  | { type: "cancel-requested"; kind: string; id: string }
  | { type: "ended"; kind: string; id: string };

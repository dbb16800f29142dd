// What a job handler sees and may throw: its context (checkpoints, progress, the end of its run),
// its abort reasons, and the options of its kind. The runner (runner.ts) explains the model.
import type { Scope, WriteOp } from "../storage/types.js";

/**
 * Throw it from a handler for an error that retrying cannot fix (bad payload, missing input): the
 * job fails at once, with this message as its last error.
 */
export class PermanentJobError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "PermanentJobError";
  }
}

/** Why a run's signal aborted. */
export type AbortWhy = "cancelled" | "shutdown" | "lease-lost";

/**
 * The `reason` of an aborted `ctx.signal`, and what `ctx.progress`/`ctx.checkpoint`/`ctx.complete`
 * throw once the run may no longer write. On "shutdown" the job is left to be resumed (a handler
 * should just return or throw promptly); on "cancelled" it ends cancelled; on "lease-lost" another
 * run owns it now.
 */
export class JobAborted extends Error {
  constructor(readonly why: AbortWhy) {
    super(why === "cancelled" ? "job cancelled" : why === "shutdown" ? "runner shutting down" : "job lease lost");
    this.name = "JobAborted";
  }
}

export interface JobContext<P = unknown, C = unknown, R = unknown> {
  job: {
    id: string;
    kind: string;
    scope: Scope;
    payload: P;
    /** 1 for the first run; a run ended by shutdown does not count, one whose runner died does. */
    attempt: number;
    /** As last saved (by this run or an earlier one); undefined before the first checkpoint. */
    checkpoint: C | undefined;
  };
  signal: AbortSignal;
  /** Persists a progress value (for status reads); throws JobAborted if the run lost the job. */
  progress(value: unknown): Promise<void>;
  /**
   * Persists `state` as the checkpoint and applies `ops` in the same transaction, only while this
   * run holds the job and no cancel was requested; otherwise writes nothing and throws JobAborted.
   * A failing op (VersionConflict, DuplicateRecord) throws and writes nothing.
   */
  checkpoint(state: C, ops?: WriteOp[]): Promise<void>;
  /**
   * Ends the job as succeeded with `result`, applying `ops` in the same transaction (same rules as
   * checkpoint). For handlers whose final writes must commit with the success; after it the
   * handler should return (its return value and any later error are ignored).
   */
  complete(result: R, ops?: WriteOp[]): Promise<void>;
}

export type JobHandler<P = unknown, R = unknown, C = unknown> = (ctx: JobContext<P, C, R>) => Promise<R>;

export interface KindOptions {
  /** Runs of this kind at once in this runner. Default 1. */
  concurrency?: number;
  /** Runs before the job fails (each transient failure or runner crash counts). Default 5. */
  maxAttempts?: number;
  /** Delay before retry n: min(maxMs, baseMs·2^(n-1)), jittered to between half and all of it. */
  backoff?: { baseMs: number; maxMs: number };
  /** How long a run holds the job without a heartbeat. Default 30 s. */
  leaseMs?: number;
}

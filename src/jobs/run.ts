// A kind registered with the runner, and one run of a job in it: the run's record, the context its
// handler gets, how its signal aborts, and the delay before its retry. Every write of the context
// is fenced by the run's lease (see sqlite-job-store.ts).
import { JobAborted, type AbortWhy, type JobContext, type JobHandler, type KindOptions } from "./handler.js";
import type { Job, JobStore, LeaseStatus, RunEnd } from "./types.js";

/** A registered kind, with its options resolved and its runs in this runner counted. */
export interface Kind {
  name: string;
  handler: JobHandler<any, any, any>;
  concurrency: number;
  maxAttempts: number;
  backoff: { baseMs: number; maxMs: number };
  leaseMs: number;
  running: number;
  /** False once a claim came back short; set again by anything that may have added work. */
  mayHaveWork: boolean;
}

/** A kind as register() takes it: the options' defaults applied and checked. */
export function newKind(name: string, handler: JobHandler<any, any, any>, opts: KindOptions): Kind {
  return {
    name,
    handler,
    concurrency: positive(opts.concurrency ?? 1, "concurrency"),
    maxAttempts: positive(opts.maxAttempts ?? 5, "maxAttempts"),
    backoff: opts.backoff ?? { baseMs: 1000, maxMs: 5 * 60_000 },
    leaseMs: positive(opts.leaseMs ?? 30_000, "leaseMs"),
    running: 0,
    mayHaveWork: true,
  };
}

function positive(n: number, what: string): number {
  if (!Number.isInteger(n) || n < 1) throw new RangeError(`${what} must be a positive integer, got ${n}`);
  return n;
}

/** Exponential with "equal jitter": between half and all of min(maxMs, baseMs·2^(attempt-1)). */
export function backoffDelay(backoff: { baseMs: number; maxMs: number }, attempt: number): number {
  const full = Math.min(backoff.maxMs, backoff.baseMs * 2 ** Math.max(0, attempt - 1));
  return Math.round(full / 2 + (Math.random() * full) / 2);
}

/** A run in this runner: one claim of a job, from launch until its end is recorded. */
export interface Run {
  job: Job;
  kind: Kind;
  /** The claim token every write of this run is fenced with. */
  owner: string;
  controller: AbortController;
  heartbeat: NodeJS.Timeout;
  /** Set when ctx.complete() ended the job. */
  ended: boolean;
  /** Why the signal aborted. A shutdown can later turn into a cancel or a lost lease, never back. */
  aborted: AbortWhy | undefined;
  done: Promise<void>;
}

/** What a run's context writes through: the runner's store and clock, and its end of runs. */
export interface RunWrites {
  store: JobStore;
  now(): number;
  /** Records the run's end; false if the run had lost its lease. */
  endRun(run: Run, end: RunEnd): Promise<boolean>;
}

/** The context a run's handler gets. */
export function runContext(run: Run, writes: RunWrites): JobContext<any, any, any> {
  const { job } = run;
  const signal = run.controller.signal;
  const ctx: JobContext<any, any, any> = {
    job: {
      id: job.id,
      kind: job.kind,
      scope: job.scope,
      payload: job.payload,
      attempt: job.attempts,
      checkpoint: job.checkpoint ?? undefined,
    },
    signal,
    progress: async (value) => {
      throwIfAborted(run);
      throwUnlessHeld(run, await writes.store.saveProgress(job.id, run.owner, value, writes.now()));
    },
    checkpoint: async (state, ops = []) => {
      throwIfAborted(run);
      throwUnlessHeld(run, await writes.store.saveCheckpoint(job.id, run.owner, state, ops, writes.now()));
      ctx.job.checkpoint = state;
    },
    complete: async (result, ops = []) => {
      throwIfAborted(run);
      if (run.ended) throw new Error("complete() called twice");
      const ended = await writes.endRun(run, { state: "succeeded", result: result ?? null, ops });
      if (!ended) throwUnlessHeld(run, "lost");
      run.ended = true;
      if (run.job.state === "cancelled") throw abortRun(run, "cancelled");
    },
  };
  return ctx;
}

export function throwIfAborted(run: Run): void {
  // Shutdown asks the handler to stop, but its lease still holds: its writes remain valid.
  if (run.aborted && run.aborted !== "shutdown") throw new JobAborted(run.aborted);
}

/** Throws (aborting the run) unless the store says the run still holds its job. */
export function throwUnlessHeld(run: Run, status: LeaseStatus): void {
  if (status === "held") return;
  throw abortRun(run, status === "lost" ? "lease-lost" : "cancelled");
}

/** Aborts the run's signal (the first reason is the one the handler sees) and returns the error to throw. */
export function abortRun(run: Run, why: AbortWhy): JobAborted {
  if (!run.aborted || run.aborted === "shutdown") run.aborted = why;
  const reason = new JobAborted(run.aborted);
  if (!run.controller.signal.aborted) run.controller.abort(reason);
  return reason;
}

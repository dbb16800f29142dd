// The durable job runner. Every background task of the server (ingestion, rendering, fine-tuning,
// batches, expiry) is a job row, so that work accepted survives crashes and restarts
// (docs/architecture.md, principle 4) and several processes sharing the data directory share the work.
//
// Life of a job:
//
//   enqueue ─> queued ─claim─> running ─┬─ returns ─────────────────────────────────> succeeded
//               │  ^                    ├─ throws, attempts left ─> queued, after a backoff
//               │  │                    ├─ throws PermanentJobError, or no attempts left ─> failed
//               │  │                    ├─ cancel(): its signal aborts ─────────────────> cancelled
//               │  └────────────────────┴─ stop(): its signal aborts; released, the attempt not counted
//               └─ cancel() ──────────────────────────────────────────────────────────> cancelled
//
// A claim takes a lease: the job is this run's until `leaseExpiresAt`, renewed by a heartbeat every
// leaseMs/3. A runner that dies stops renewing; once the lease has expired any runner claims the
// job again and the new run resumes from the last checkpoint. Every write of a run is fenced by its
// lease (see sqlite-job-store.ts), so a run that lost its job (it stalled, the job was taken over,
// or cancelled) can no longer change anything; its signal aborts to tell it to stop.
//
// Handlers are plain async functions. To be "exactly once in effect" a handler splits its work
// into steps and, after each, calls `ctx.checkpoint(state, ops)`: the record writes that ARE the
// step's effect commit in the same transaction as the checkpoint that says the step is done. A
// resumed run reads `ctx.job.checkpoint` and skips what is done. A plain return ends the job as
// succeeded with the returned value as its result; a handler whose final writes must commit with
// the success calls `ctx.complete(result, ops)` instead (its later return value is ignored).
//
// Scheduling: per kind at most `concurrency` runs at once. Runs are claimed in batches (one query
// for up to 64 jobs) whenever slots are free and work may be there: after an enqueue, when a run
// ends, when a delayed job or a retry becomes due (a timer), when another process enqueues one
// (stores that signal across processes, JobStore.watch: also cancels and ends), and every `pollMs` for work enqueued by other processes
// and for expired leases. Nothing sleeps while work is available. Runs that end in the same turn
// of the event loop are recorded in one transaction: with short jobs the commit, not the handler,
// is the cost (bench/jobs.bench.ts).
import { hostname } from "node:os";
import type { Logger } from "pino";
import { deferred } from "../common/deferred.js";
import { newId } from "../common/ids.js";
import type { Scope } from "../storage/types.js";
import { FinishedListeners, type FinishedListener } from "./finished-listeners.js";
import { PermanentJobError, type JobHandler, type KindOptions } from "./handler.js";
import { abortRun, backoffDelay, newKind, runContext, type Kind, type Run, type RunWrites } from "./run.js";
import { TERMINAL_STATES, type Job, type JobEvent, type JobStore, type RunEnd, type RunEnding } from "./types.js";

export interface JobRunnerOptions {
  /** Clock in milliseconds, for run_after, leases and backoff. Default Date.now. */
  now?: () => number;
  /** How often to look for work this process was not told about. Default 500 ms. */
  pollMs?: number;
  /** How long stop() waits for aborted handlers before releasing their jobs anyway. Default 10 s. */
  shutdownGraceMs?: number;
  /** Terminal jobs are deleted this long after they finished. Default 7 days. */
  retainFinishedMs?: number;
  /** Names this runner in lease owners (debugging). Default host:pid:random. */
  name?: string;
  log?: Pick<Logger, "error" | "warn">;
}

const CLAIM_BATCH = 64;
const PURGE_EVERY_MS = 60_000;
const silentLog: Pick<Logger, "error" | "warn"> = { error: () => {}, warn: () => {} };

export class JobRunner {
  /** The runner's clock (ms): run_after, leases, finishedAt. */
  readonly now: () => number;
  private readonly pollMs: number;
  private readonly shutdownGraceMs: number;
  private readonly retainFinishedMs: number;
  private readonly name: string;
  private readonly log: Pick<Logger, "error" | "warn">;

  private readonly kinds = new Map<string, Kind>();
  private readonly listeners: FinishedListeners;
  private readonly runWrites: RunWrites;
  private readonly runs = new Map<string, Run>();
  private claimCount = 0;
  /** Ends of runs not yet written: runs that end in the same turn of the event loop share a commit. */
  private endQueue: Array<{ ending: RunEnding; resolve: (job: Job | undefined) => void; reject: (err: Error) => void }> = [];

  private started = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private unwatch: (() => Promise<void>) | undefined;
  private wakeTimer: NodeJS.Timeout | undefined;
  private wakeAt = Infinity;
  private pumpScheduled = false;
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;
  private lastPurge = 0;
  /** Resolved (and replaced) whenever a run ends or a pump completes: what idle()/drain() wait on. */
  private changed = deferred();

  constructor(
    private readonly store: JobStore,
    opts: JobRunnerOptions = {},
  ) {
    this.now = opts.now ?? Date.now;
    this.pollMs = opts.pollMs ?? 500;
    this.shutdownGraceMs = opts.shutdownGraceMs ?? 10_000;
    this.retainFinishedMs = opts.retainFinishedMs ?? 7 * 24 * 3600_000;
    this.name = opts.name ?? `${hostname()}:${process.pid}:${newId("").slice(0, 6)}`;
    this.log = opts.log ?? silentLog;
    this.listeners = new FinishedListeners(store, this.log);
    this.runWrites = { store, now: () => this.now(), endRun: (run, end) => this.endRun(run, end) };
  }

  // ---- set-up ----

  register<P = unknown, R = unknown, C = unknown>(kind: string, handler: JobHandler<P, R, C>, opts: KindOptions = {}): void {
    if (this.kinds.has(kind)) throw new Error(`job kind ${kind} registered twice`);
    this.kinds.set(kind, newKind(kind, handler, opts));
    this.schedulePump();
  }

  /**
   * Calls `listener` when a job of `kind` reaches a terminal state (succeeded, failed, cancelled),
   * after that state is committed, in the process that made the change. Delivery is at least once:
   * if the process dies before every listener has returned (or one throws), the next runner to
   * start() with a listener for the kind calls them again. Register listeners before start().
   */
  onFinished(kind: string, listener: FinishedListener): void {
    this.listeners.add(kind, listener);
  }

  // ---- the queue ----

  /**
   * Adds a job. With `id`, enqueueing is idempotent: if a job with that id exists (in any state, until
   * it is purged after `retainFinishedMs`) it is returned unchanged. Ids are global: namespace them
   * (e.g. "vs_ingest:<file id>"). `runAfter` (ms on the runner's clock) delays the first run.
   */
  async enqueue<P>(scope: Scope, kind: string, payload: P, opts: { id?: string; runAfter?: number } = {}): Promise<Job<P>> {
    const [job] = await this.enqueueMany([{ scope, kind, payload, ...opts }]);
    return job as Job<P>;
  }

  /** Like enqueue for many jobs, in one transaction. Returns them in the same order. */
  async enqueueMany(jobs: Array<{ scope: Scope; kind: string; payload: unknown; id?: string; runAfter?: number }>): Promise<Job[]> {
    const now = this.now();
    const rows = await this.store.enqueue(
      jobs.map((j) => ({ id: j.id ?? newId("job_"), kind: j.kind, scope: { projectId: j.scope.projectId }, payload: j.payload, runAfter: j.runAfter ?? now })),
      now,
    );
    for (const job of rows) if (job.state === "queued") this.wake(job.kind, job.runAfter);
    return rows;
  }

  get(id: string): Promise<Job | undefined> {
    return this.store.get(id);
  }

  /**
   * A queued job is cancelled at once. A running one gets a cancel request: its signal aborts
   * (at once in this process, within leaseMs/3 in another), its writes are refused from now on,
   * and it ends `cancelled` when its handler returns. Returns the job as it is after the call
   * (`cancelRequested` set for a running one); a finished job is returned unchanged.
   */
  async cancel(id: string): Promise<Job | undefined> {
    const outcome = await this.store.cancel(id, this.now(), (kind) => this.listeners.has(kind));
    if (!outcome) return undefined;
    if (outcome.effect === "cancelled") await this.listeners.deliver(outcome.job);
    const run = this.runs.get(id);
    if (run && outcome.job.cancelRequested) abortRun(run, "cancelled");
    return outcome.job;
  }

  /** Puts a failed or cancelled job back in the queue with a fresh attempt count. */
  async retry(id: string): Promise<Job | undefined> {
    const job = await this.store.retry(id, this.now());
    if (job?.state === "queued") this.wake(job.kind, job.runAfter);
    return job;
  }

  // ---- running ----

  start(): void {
    if (this.started) return;
    this.started = true;
    for (const k of this.kinds.values()) k.mayHaveWork = true;
    this.pollTimer = setInterval(() => this.onPoll(), this.pollMs);
    this.pollTimer.unref();
    this.unwatch = this.store.watch?.((e) => this.onStoreEvent(e));
    void this.listeners.redeliver();
    this.schedulePump();
  }

  /**
   * Stops claiming, aborts every running handler with JobAborted("shutdown") and waits for them to
   * return, at most `shutdownGraceMs`. A run that returned successfully is completed; every other
   * run is released: back to queued, its attempt not counted, its checkpoint kept, so this or
   * another runner resumes it. Runs still going after the grace period are released too (their
   * later writes are refused).
   */
  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    clearInterval(this.pollTimer);
    clearTimeout(this.wakeTimer);
    this.wakeTimer = undefined;
    this.wakeAt = Infinity;
    const unwatch = this.unwatch;
    this.unwatch = undefined;
    await unwatch?.();
    await this.pumping;
    const runs = [...this.runs.values()];
    for (const run of runs) abortRun(run, "shutdown");
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.shutdownGraceMs)));
    await Promise.race([Promise.all(runs.map((r) => r.done)), grace]);
    clearTimeout(timer);
    const stubborn = [...this.runs.values()];
    for (const run of stubborn) {
      this.log.warn({ jobId: run.job.id, kind: run.job.kind }, "job handler ignored shutdown; releasing its job");
      clearInterval(run.heartbeat);
      this.runs.delete(run.job.id);
      run.kind.running--;
    }
    if (stubborn.length) {
      await this.store.endRuns(
        stubborn.map((run) => ({ id: run.job.id, owner: run.owner, end: { state: "released" }, notify: false })),
        this.now(),
      );
    }
    this.signalChange();
  }

  /** Resolves when no job of a registered kind is claimable now and none runs in this runner. */
  async idle(): Promise<void> {
    this.assertStarted("idle");
    while (this.busyHere() || (await this.store.hasUnfinished(this.kindNames(), this.now()))) {
      await this.nextChange();
    }
  }

  /**
   * Resolves when no job of a registered kind is queued or running anywhere, including jobs that
   * wait for a retry or their runAfter, and jobs other runners hold.
   */
  async drain(): Promise<void> {
    this.assertStarted("drain");
    while (this.busyHere() || (await this.store.hasUnfinished(this.kindNames()))) {
      await this.nextChange();
    }
  }

  /**
   * Resolves with the jobs once each is settled: finished, or queued to retry later (nothing
   * to do for it right now). For callers that hand work to the runner and wait for one round of it.
   */
  async settled(ids: string[]): Promise<Job[]> {
    this.assertStarted("settled");
    for (;;) {
      const now = this.now();
      const jobs = await Promise.all(ids.map((id) => this.store.get(id)));
      const open = jobs.some((j) => j && !TERMINAL_STATES.has(j.state) && !(j.state === "queued" && j.runAfter > now));
      if (!open) return jobs.filter((j): j is Job => j !== undefined);
      await this.nextChange();
    }
  }

  // ---- scheduling ----

  private onPoll(): void {
    for (const k of this.kinds.values()) k.mayHaveWork = true;
    this.schedulePump();
    const now = this.now();
    if (now - this.lastPurge >= PURGE_EVERY_MS) {
      this.lastPurge = now;
      this.store.purgeFinished(now - this.retainFinishedMs, 1000).catch((err) => this.log.error({ err }, "purging finished jobs failed"));
    }
  }

  /** A job of `kind` is due at `runAfter`: look for work then (now, if it is due). */
  private wake(kindName: string, runAfter: number): void {
    const kind = this.kinds.get(kindName);
    if (!kind) return; // another process runs it; it will find the job by polling
    if (runAfter > this.now()) return this.wakeAtTime(runAfter);
    kind.mayHaveWork = true;
    this.schedulePump();
  }

  /** Another process changed a job (JobStore.watch). */
  private onStoreEvent(e: JobEvent): void {
    if (e.type === "due") return this.wake(e.kind, e.runAfter);
    const run = e.type === "cancel-requested" ? this.runs.get(e.id) : undefined;
    if (run) abortRun(run, "cancelled");
    if (e.type === "ended") this.signalChange();
  }

  /** One timer, for the earliest known runAfter; later ones are found when it fires or by polling. */
  private wakeAtTime(at: number): void {
    if (!this.started || at >= this.wakeAt) return;
    clearTimeout(this.wakeTimer);
    this.wakeAt = at;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = undefined;
      this.wakeAt = Infinity;
      // Timers count from the event loop's cached time, so they can fire before `at` by our clock;
      // a claim then would find nothing due and nothing would wake us until the next poll.
      if (this.now() < at) return this.wakeAtTime(at);
      for (const k of this.kinds.values()) k.mayHaveWork = true;
      this.schedulePump();
    }, at - this.now());
    this.wakeTimer.unref();
  }

  /** Coalesces every reason to look for work within one turn of the event loop into one pump. */
  private schedulePump(): void {
    if (!this.started || this.pumpScheduled) return;
    this.pumpScheduled = true;
    setImmediate(() => {
      this.pumpScheduled = false;
      void this.pump();
    });
  }

  private async pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return;
    }
    this.pumping = this.fillSlots().finally(() => {
      this.pumping = undefined;
      this.signalChange();
      if (this.pumpAgain) {
        this.pumpAgain = false;
        this.schedulePump();
      }
    });
    return this.pumping;
  }

  private async fillSlots(): Promise<void> {
    for (const kind of this.kinds.values()) {
      while (this.started && kind.mayHaveWork && kind.running < kind.concurrency) {
        const limit = Math.min(kind.concurrency - kind.running, CLAIM_BATCH);
        const now = this.now();
        const owner = `${this.name}:${++this.claimCount}`;
        let claimed: Job[];
        let cancelled: Job[];
        try {
          ({ claimed, cancelled } = await this.store.claim(kind.name, owner, limit, now, now + kind.leaseMs, this.listeners.has(kind.name)));
        } catch (err) {
          this.log.error({ err, kind: kind.name }, "claiming jobs failed; retrying at the next poll");
          break;
        }
        if (claimed.length < limit) kind.mayHaveWork = false;
        for (const job of cancelled) void this.listeners.deliver(job);
        for (const job of claimed) this.launch(kind, job, owner);
      }
    }
  }

  private launch(kind: Kind, job: Job, owner: string): void {
    kind.running++;
    const controller = new AbortController();
    const run: Run = { job, kind, owner, controller, ended: false, aborted: undefined, heartbeat: undefined!, done: undefined! };
    run.heartbeat = setInterval(() => void this.heartbeat(run), Math.max(1, Math.floor(kind.leaseMs / 3)));
    run.heartbeat.unref();
    this.runs.set(job.id, run);
    run.done = this.execute(run)
      .catch((err) => {
        // The store failed to record the end (disk full, lock timeout). The job keeps its lease,
        // which now expires without heartbeats, and is claimed again: the run is retried, not lost.
        this.log.error({ err, jobId: job.id, kind: job.kind }, "recording the end of a job run failed");
      })
      .finally(() => {
        clearInterval(run.heartbeat);
        // stop() may have given up on this run already and released it.
        if (this.runs.get(job.id) === run) {
          this.runs.delete(job.id);
          kind.running--;
        }
        kind.mayHaveWork = true;
        this.schedulePump();
        this.signalChange();
      });
  }

  private async execute(run: Run): Promise<void> {
    const { job, kind } = run;
    // Runs whose runners died count as attempts; a job that keeps killing its process stops here.
    if (job.attempts > kind.maxAttempts) {
      const error = `${job.lastError ?? "no error recorded"} (gave up after ${kind.maxAttempts} attempts; the last runner stopped without finishing)`;
      await this.endRun(run, { state: "failed", error });
      return;
    }
    let outcome: { ok: true; result: unknown } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, result: await kind.handler(runContext(run, this.runWrites)) };
    } catch (error) {
      outcome = { ok: false, error };
    }
    if (run.ended) {
      if (!outcome.ok) this.log.warn({ err: outcome.error, jobId: job.id }, "job handler threw after complete(); ignored");
      return;
    }
    const why = run.aborted;
    // Lost: someone else owns the job now; nothing of this run may be written.
    if (why === "lease-lost") return;

    let end: RunEnd;
    if (outcome.ok) {
      end = { state: "succeeded", result: outcome.result ?? null, ops: [] };
    } else if (why === "shutdown") {
      end = { state: "released" };
    } else {
      // A cancelled run's end is turned into `cancelled` by the store whatever we pass.
      const error = errorMessage(outcome.error);
      if (outcome.error instanceof PermanentJobError || job.attempts >= kind.maxAttempts) end = { state: "failed", error };
      else end = { state: "retry", error, runAfter: this.now() + backoffDelay(kind.backoff, job.attempts) };
    }
    try {
      await this.endRun(run, end);
    } catch (err) {
      // Only a success's ops can fail; treat it as the handler failing.
      if (end.state !== "succeeded") throw err;
      const error = errorMessage(err);
      await this.endRun(
        run,
        job.attempts >= kind.maxAttempts ? { state: "failed", error } : { state: "retry", error, runAfter: this.now() + backoffDelay(kind.backoff, job.attempts) },
      );
    }
  }

  /** Ends the run in the store and tells whoever listens. Returns false if the lease was lost. */
  private async endRun(run: Run, end: RunEnd): Promise<boolean> {
    const job = await new Promise<Job | undefined>((resolve, reject) => {
      if (this.endQueue.length === 0) setImmediate(() => void this.writeEnds());
      const ending = { id: run.job.id, owner: run.owner, end, notify: this.listeners.has(run.job.kind) };
      this.endQueue.push({ ending, resolve, reject });
    });
    if (!job) {
      this.log.warn({ jobId: run.job.id, kind: run.job.kind }, "job lease lost before the run ended; its end was not recorded");
      return false;
    }
    run.job = job;
    if (job.state === "queued") this.wake(job.kind, job.runAfter);
    else await this.listeners.deliver(job);
    return true;
  }

  private async writeEnds(): Promise<void> {
    const batch = this.endQueue;
    this.endQueue = [];
    try {
      const results = await this.store.endRuns(
        batch.map((b) => b.ending),
        this.now(),
      );
      results.forEach((result, i) => (result instanceof Error ? batch[i]!.reject(result) : batch[i]!.resolve(result)));
    } catch (err) {
      for (const b of batch) b.reject(err as Error);
    }
  }

  private async heartbeat(run: Run): Promise<void> {
    if (run.ended || this.runs.get(run.job.id) !== run) return;
    try {
      const status = await this.store.renew(run.job.id, run.owner, this.now() + run.kind.leaseMs);
      if (status !== "held") abortRun(run, status === "lost" ? "lease-lost" : "cancelled");
    } catch (err) {
      // A failed renewal is not a lost lease; the next beat tries again.
      this.log.warn({ err, jobId: run.job.id }, "renewing a job lease failed");
    }
  }

  // ---- helpers ----

  /** Runs going, or about to be looked for: no need to ask the store yet. */
  private busyHere(): boolean {
    return this.runs.size > 0 || this.pumpScheduled || this.pumping !== undefined;
  }

  private kindNames(): string[] {
    return [...this.kinds.keys()];
  }

  private assertStarted(what: string): void {
    if (!this.started) throw new Error(`JobRunner.${what}() needs a started runner`);
  }

  private signalChange(): void {
    const d = this.changed;
    this.changed = deferred();
    d.resolve();
  }

  /** The next change, or pollMs at the latest (work done by other processes is not signalled). */
  private async nextChange(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.changed.promise, new Promise<void>((r) => (timer = setTimeout(r, this.pollMs)))]);
    clearTimeout(timer);
  }
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

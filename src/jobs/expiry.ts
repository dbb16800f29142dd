// Durable expiry on the job runner. Expiring records (files past expires_at) and timers (upload
// deadlines: a record whose expiresAt is the due time) are found with one indexed query, as before;
// what changed is who acts on them. Each due record becomes its own `expire` job, with an id derived
// from the record, so that:
//   - one failing record never holds up the others (each job retries on its own, with backoff);
//   - re-finding a record on every pass does not duplicate work (enqueue by id is idempotent);
//   - a record whose job failed for good is left alone (logged once) and retried only after a
//     cool-down (`retryFailedAfterMs`), never in a hot loop;
//   - the expired row is deleted in the same transaction that marks the job succeeded, after its
//     handler returned, so a crash in between runs the handler again rather than losing it
//     (handlers must therefore be idempotent — deleting a blob twice is fine).
// Timers survive restarts because they are rows; so do the jobs.
//
// Drop-in for services/common/timers.ts's Sweeper: same on/start/stop/runOnce, same setTimer,
// timerKind and TimerData. The runner is started and stopped by its owner (the server), not here.
import type { Logger } from "pino";
import type { RecordStore, Scope, StoredRecord } from "../storage/types.js";
import type { Job } from "./types.js";
import type { JobContext, KindOptions } from "./handler.js";
import type { JobRunner } from "./runner.js";

export interface TimerData {
  /** The record the timer is about. */
  targetId: string;
}

export const timerKind = (name: string) => `timer:${name}`;

/** Arranges for the expiry handler of timerKind(name) to be called with this timer at `dueAt` (Unix seconds). */
export async function setTimer(records: RecordStore, name: string, scope: Scope, targetId: string, dueAt: number): Promise<void> {
  await records.collection<TimerData>(timerKind(name)).insert(scope, { id: targetId, createdAt: dueAt, expiresAt: dueAt, data: { targetId } });
}

/**
 * Called once an expired record of its kind is due, with the record as it was when it expired (an
 * expired record can no longer be read or updated). The sweeper deletes the record after the
 * handler returns. Throwing retries it later. May run more than once for the same record.
 */
export type ExpiryHandler = (scope: Scope, record: StoredRecord<unknown>) => Promise<void>;

export const EXPIRE_JOB_KIND = "expire";

interface ExpirePayload {
  kind: string;
  record: StoredRecord<unknown>;
}

export interface ExpirySweeperOptions extends KindOptions {
  /** A record whose expire job failed for good is tried again this long after. Default 1 hour. */
  retryFailedAfterMs?: number;
  /** Due records read per query. Default 200. */
  pageSize?: number;
}

type DueRecord = { kind: string; projectId: string; record: StoredRecord<unknown> };

// The createdAt and version make it the id of this record, not of any later record reusing its id.
const expireJobId = (d: DueRecord) => `expire:${d.kind}:${d.record.id}:${d.record.createdAt}:${d.record.version}`;

export class ExpirySweeper {
  private readonly handlers = new Map<string, ExpiryHandler>();
  private readonly retryFailedAfterMs: number;
  private readonly pageSize: number;
  private interval: NodeJS.Timeout | undefined;
  private passing: Promise<string[]> | undefined;
  /**
   * Jobs of due records this process has seen, by job id; `failedAt` once one failed for good. A
   * pass reads past these records (they come first, oldest first) to reach the ones with no job.
   */
  private readonly open = new Map<string, { failedAt?: number }>();

  constructor(
    private readonly records: RecordStore,
    /** Unix seconds, the same clock the record store checks expiry with. */
    private readonly clock: { now(): number },
    private readonly log: Logger,
    private readonly runner: JobRunner,
    opts: ExpirySweeperOptions = {},
  ) {
    const { retryFailedAfterMs, pageSize, ...kindOptions } = opts;
    this.retryFailedAfterMs = retryFailedAfterMs ?? 3600_000;
    this.pageSize = pageSize ?? 200;
    runner.register<ExpirePayload>(EXPIRE_JOB_KIND, (ctx) => this.expire(ctx), {
      concurrency: 4,
      maxAttempts: 5,
      backoff: { baseMs: 1000, maxMs: 60_000 },
      leaseMs: 60_000,
      ...kindOptions,
    });
    runner.onFinished(EXPIRE_JOB_KIND, (job) => this.onJobFinished(job));
  }

  /** Called for each expired record of `kind` (a record kind, or timerKind(name)); no handler: plain deletion. */
  on(kind: string, handler: ExpiryHandler): void {
    this.handlers.set(kind, handler);
  }

  /** Looks for due records every `intervalMs` (and now), handing them to the runner. */
  start(intervalMs = 1000): void {
    clearInterval(this.interval);
    this.interval = setInterval(() => void this.pass(), intervalMs);
    this.interval.unref();
    void this.pass();
  }

  async stop(): Promise<void> {
    clearInterval(this.interval);
    this.interval = undefined;
    await this.passing;
  }

  /**
   * One pass over everything due now, waiting until each due record is dealt with: expired, or its
   * job waiting for a retry or failed. Needs the runner started.
   */
  async runOnce(): Promise<void> {
    await this.passing;
    await this.runner.settled(await this.pass());
  }

  /** Enqueues a job for every due record that has none; returns the job ids of all due records. Passes do not overlap. */
  private pass(): Promise<string[]> {
    this.passing ??= this.enqueueDue()
      .catch((err) => {
        this.log.error({ err }, "expiry pass failed; the next one tries again");
        return [];
      })
      .finally(() => (this.passing = undefined));
    return this.passing;
  }

  private async enqueueDue(): Promise<string[]> {
    const now = this.clock.now();
    let due: DueRecord[];
    for (;;) {
      // Oldest first, so records that already have a job come first: read past them.
      const limit = this.open.size + this.pageSize;
      due = await this.records.expired(now, limit);
      const fresh = due.filter((d) => !this.open.has(expireJobId(d)));
      if (fresh.length) {
        const jobs = await this.runner.enqueueMany(
          fresh.map((d) => ({ id: expireJobId(d), scope: { projectId: d.projectId }, kind: EXPIRE_JOB_KIND, payload: { kind: d.kind, record: d.record } })),
        );
        // A job that existed already (enqueued before a restart) may have failed for good.
        for (const job of jobs) this.open.set(job.id, job.state === "failed" || job.state === "cancelled" ? { failedAt: job.finishedAt ?? 0 } : {});
      }
      // A full page holds at least pageSize records without a job, so `open` grew: read again.
      if (due.length < limit || fresh.length === 0) break;
    }
    // `due` is now every due record: forget jobs of records that are gone (expired elsewhere).
    const dueIds = new Set(due.map(expireJobId));
    for (const id of this.open.keys()) if (!dueIds.has(id)) this.open.delete(id);
    await this.retryCooledDown();
    return [...dueIds];
  }

  private async retryCooledDown(): Promise<void> {
    const now = this.runner.now();
    for (const [id, entry] of this.open) {
      if (entry.failedAt === undefined || now - entry.failedAt < this.retryFailedAfterMs) continue;
      entry.failedAt = undefined;
      await this.runner.retry(id);
    }
  }

  private async expire(ctx: JobContext<ExpirePayload>): Promise<void> {
    const { kind, record } = ctx.job.payload;
    const scope = ctx.job.scope;
    // A live record under this id with another version is not the one that expired (it was
    // deleted and created again): leave it alone.
    const live = await this.records.collection(kind).get(scope, record.id);
    if (live && (live.createdAt !== record.createdAt || live.version !== record.version)) return;
    await this.handlers.get(kind)?.(scope, record);
    await ctx.complete(undefined, [{ op: "delete", kind, scope, id: record.id }]);
  }

  private onJobFinished(job: Job): void {
    if (job.state === "succeeded") {
      this.open.delete(job.id);
      return;
    }
    const { kind, record } = job.payload as ExpirePayload;
    this.log.error(
      { jobId: job.id, kind, id: record.id, error: job.lastError },
      `expiry handler ${job.state}; retried in ${Math.round(this.retryFailedAfterMs / 1000)} s`,
    );
    this.open.set(job.id, { failedAt: job.finishedAt ?? this.runner.now() });
  }
}

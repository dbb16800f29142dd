// The durable job runner (src/jobs/): states, checkpoints with record writes, cancel, retries,
// leases, concurrency, shutdown, finished-listeners, and the expiry sweeper built on it. Real
// SQLite in a temp dir, real time with short leases and backoffs.
import { describe, expect, it } from "vitest";
import {
  ExpirySweeper,
  JobAborted,
  JobRunner,
  PermanentJobError,
  setTimer,
  SqliteJobStore,
  timerKind,
  type Job,
  type JobContext,
  type JobRunnerOptions,
  type LeaseStatus,
} from "../../src/jobs/index.js";
import { DuplicateRecord, openStorage, type Scope, type SqliteRecordStore, type StoredRecord, type WriteOp } from "../../src/storage/index.js";
import type { Logger } from "pino";
import { sleep } from "../shared/poll.js";
import { undoAfterEach } from "../shared/cleanup.js";

const scope: Scope = { projectId: "proj_jobs" };

const { cleanups, tempDir } = undoAfterEach("atrium-jobs-");

/** A connection to the data dir (a second call on the same dir is what a second process would have). */
async function open(dir: string, now?: () => number): Promise<SqliteRecordStore> {
  const { records } = await openStorage(dir, now ? { now } : undefined);
  cleanups.push(() => records.close());
  return records;
}

function newRunner(records: SqliteRecordStore, opts: JobRunnerOptions = {}, store = new SqliteJobStore(records)): JobRunner {
  const runner = new JobRunner(store, { pollMs: 50, shutdownGraceMs: 2000, ...opts });
  cleanups.push(() => runner.stop());
  return runner;
}

async function setup(opts: JobRunnerOptions = {}) {
  const dir = tempDir();
  const records = await open(dir);
  return { dir, records, runner: newRunner(records, opts) };
}

/** A promise with its resolve, for handlers that wait for the test. */
function gate<T = void>() {
  let open!: (v: T) => void;
  const promise = new Promise<T>((r) => (open = r));
  return { promise, open };
}

const effect = (id: string, data: unknown = {}): WriteOp => ({ op: "insert", kind: "effect", scope, record: { id, createdAt: 0, data } });
const effects = (records: SqliteRecordStore) =>
  records.db.prepare(`SELECT id FROM records WHERE kind = 'effect' ORDER BY id`).pluck().all() as string[];
const untilAborted = (signal: AbortSignal) => new Promise<void>((r) => signal.addEventListener("abort", () => r(), { once: true }));

async function waitFor(check: () => boolean | Promise<boolean>, what: string, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe("jobs: running", () => {
  it("a job runs once and ends succeeded with its result; the row says so", async () => {
    const { runner } = await setup();
    const calls: unknown[] = [];
    runner.register<{ a: number; b: number }, number>("add", async (ctx) => {
      calls.push(ctx.job);
      return ctx.job.payload.a + ctx.job.payload.b;
    });
    const queued = await runner.enqueue(scope, "add", { a: 2, b: 3 });
    expect(queued).toMatchObject({ kind: "add", scope, state: "queued", attempts: 0, payload: { a: 2, b: 3 }, result: null });
    expect(queued.id).toMatch(/^job_/);
    runner.start();
    await runner.drain();
    const job = await runner.get(queued.id);
    expect(job).toMatchObject({ state: "succeeded", result: 5, attempts: 1, leaseOwner: null, leaseExpiresAt: null, lastError: null });
    expect(job!.finishedAt).toBeGreaterThanOrEqual(job!.createdAt);
    expect(calls).toEqual([{ id: queued.id, kind: "add", scope, payload: { a: 2, b: 3 }, attempt: 1, checkpoint: undefined }]);
  });

  it("progress, checkpoint and the checkpoint's record writes are persisted together while the job runs", async () => {
    const { runner, records } = await setup();
    const proceed = gate();
    const saved = gate();
    runner.register("steps", async (ctx) => {
      await ctx.progress({ percent: 50 });
      await ctx.checkpoint({ step: 1 }, [effect("e1")]);
      expect(ctx.job.checkpoint).toEqual({ step: 1 });
      saved.open();
      await proceed.promise;
      return "ok";
    });
    const { id } = await runner.enqueue(scope, "steps", {});
    runner.start();
    await saved.promise;
    expect(await runner.get(id)).toMatchObject({ state: "running", progress: { percent: 50 }, checkpoint: { step: 1 } });
    expect(effects(records)).toEqual(["e1"]);
    proceed.open();
    await runner.drain();
    expect(await runner.get(id)).toMatchObject({ state: "succeeded", progress: { percent: 50 }, checkpoint: { step: 1 }, result: "ok" });
  });

  it("a checkpoint whose record write fails writes nothing, neither the checkpoint nor the other ops", async () => {
    const { runner, records } = await setup();
    await records.atomically([effect("taken")]);
    let error: unknown;
    runner.register("dup", async (ctx) => {
      await ctx.checkpoint({ step: 1 }, [effect("e1")]);
      try {
        await ctx.checkpoint({ step: 2 }, [effect("e2"), effect("taken")]);
      } catch (e) {
        error = e;
      }
    });
    const { id } = await runner.enqueue(scope, "dup", {});
    runner.start();
    await runner.drain();
    expect(error).toBeInstanceOf(DuplicateRecord);
    expect(await runner.get(id)).toMatchObject({ state: "succeeded", checkpoint: { step: 1 } });
    expect(effects(records)).toEqual(["e1", "taken"]);
  });

  it("ctx.complete commits the result and the final record writes in one transaction", async () => {
    const { runner, records } = await setup();
    runner.register("final", async (ctx) => {
      await ctx.complete({ files: 1 }, [effect("final")]);
      return { ignored: true };
    });
    const { id } = await runner.enqueue(scope, "final", {});
    runner.start();
    await runner.drain();
    expect(await runner.get(id)).toMatchObject({ state: "succeeded", result: { files: 1 } });
    expect(effects(records)).toEqual(["final"]);
  });

  it("enqueue with an id is idempotent: the existing job is returned, and it runs once", async () => {
    const { runner } = await setup();
    let runs = 0;
    runner.register("once", async () => ++runs);
    const a = await runner.enqueue(scope, "once", { v: 1 }, { id: "once:1" });
    const b = await runner.enqueue(scope, "once", { v: 2 }, { id: "once:1" });
    expect(b).toEqual(a);
    const [c, d] = await runner.enqueueMany([
      { scope, kind: "once", payload: { v: 3 }, id: "once:1" },
      { scope, kind: "once", payload: { v: 4 }, id: "once:2" },
    ]);
    expect(c).toEqual(a);
    expect(d).toMatchObject({ id: "once:2", payload: { v: 4 }, state: "queued" });
    runner.start();
    await runner.drain();
    expect(runs).toBe(2);
    // Finished jobs are still found by id: enqueueing again does not run it again.
    expect(await runner.enqueue(scope, "once", {}, { id: "once:1" })).toMatchObject({ state: "succeeded", payload: { v: 1 } });
    await runner.drain();
    expect(runs).toBe(2);
    // An id belongs to one kind and project.
    await expect(runner.enqueue(scope, "other", {}, { id: "once:1" })).rejects.toThrow(/already used/);
    await expect(runner.enqueue({ projectId: "proj_other" }, "once", {}, { id: "once:1" })).rejects.toThrow(/already used/);
  });

  it("runAfter delays a job: it is not claimed before, and runs soon after without waiting for a poll", async () => {
    const { runner } = await setup({ pollMs: 10_000 });
    let ranAt = 0;
    runner.register("later", async () => void (ranAt = Date.now()));
    runner.start();
    const enqueuedAt = Date.now();
    await runner.enqueue(scope, "later", {}, { runAfter: enqueuedAt + 150 });
    await runner.idle();
    expect(ranAt).toBe(0);
    await runner.drain();
    expect(ranAt - enqueuedAt).toBeGreaterThanOrEqual(150);
    expect(ranAt - enqueuedAt).toBeLessThan(1000);
  });
});

describe("jobs: cancel", () => {
  it("a queued job is cancelled at once and never runs", async () => {
    const { runner } = await setup();
    let runs = 0;
    const finished: Job[] = [];
    runner.register("c", async () => void runs++);
    runner.onFinished("c", (job) => void finished.push(job));
    const { id } = await runner.enqueue(scope, "c", {});
    const cancelled = await runner.cancel(id);
    expect(cancelled).toMatchObject({ state: "cancelled", cancelRequested: false });
    expect(finished.map((j) => [j.id, j.state])).toEqual([[id, "cancelled"]]);
    runner.start();
    await runner.drain();
    expect(runs).toBe(0);
    expect(await runner.cancel("job_missing")).toBeUndefined();
    // Cancelling a finished job changes nothing.
    expect(await runner.cancel(id)).toMatchObject({ state: "cancelled" });
    expect(finished).toHaveLength(1);
  });

  it("a running job's signal aborts with a cancellation, its later checkpoint writes are refused, and it ends cancelled", async () => {
    const { runner, records } = await setup();
    const started = gate();
    let seen: unknown;
    let lateWrite: unknown;
    runner.register("long", async (ctx) => {
      await ctx.checkpoint({ step: 1 }, [effect("e1")]);
      started.open();
      await untilAborted(ctx.signal);
      seen = ctx.signal.reason;
      // A handler that keeps going anyway cannot record anything more.
      lateWrite = await ctx.checkpoint({ step: 2 }, [effect("e2")]).catch((e) => e);
      return "finished anyway";
    });
    const finished: Job[] = [];
    runner.onFinished("long", (job) => void finished.push(job));
    const { id } = await runner.enqueue(scope, "long", {});
    runner.start();
    await started.promise;
    expect(await runner.cancel(id)).toMatchObject({ state: "running", cancelRequested: true });
    await runner.drain();
    expect(seen).toBeInstanceOf(JobAborted);
    expect((seen as JobAborted).why).toBe("cancelled");
    expect(lateWrite).toBeInstanceOf(JobAborted);
    expect(await runner.get(id)).toMatchObject({ state: "cancelled", checkpoint: { step: 1 }, result: null, leaseOwner: null });
    expect(effects(records)).toEqual(["e1"]);
    expect(finished.map((j) => j.state)).toEqual(["cancelled"]);
  });

  it("a cancel from another process reaches the running handler through the heartbeat", async () => {
    const dir = tempDir();
    const r1 = newRunner(await open(dir));
    const r2 = newRunner(await open(dir));
    const started = gate();
    let seen: unknown;
    r1.register(
      "long",
      async (ctx) => {
        started.open();
        await untilAborted(ctx.signal);
        seen = ctx.signal.reason;
        throw ctx.signal.reason;
      },
      { leaseMs: 150 },
    );
    const { id } = await r1.enqueue(scope, "long", {});
    r1.start();
    await started.promise;
    const t0 = Date.now();
    await r2.cancel(id);
    await waitFor(async () => (await r1.get(id))?.state === "cancelled", "the job to end cancelled");
    expect(Date.now() - t0).toBeLessThan(1000);
    expect((seen as JobAborted).why).toBe("cancelled");
  });
});

describe("jobs: failures and retries", () => {
  it("transient failures are retried with exponential backoff, then the job succeeds", async () => {
    const { runner } = await setup({ pollMs: 10_000 });
    const attempts: Array<{ attempt: number; at: number }> = [];
    runner.register(
      "flaky",
      async (ctx) => {
        attempts.push({ attempt: ctx.job.attempt, at: Date.now() });
        if (ctx.job.attempt < 3) throw new Error(`boom ${ctx.job.attempt}`);
        return "third time";
      },
      { maxAttempts: 5, backoff: { baseMs: 60, maxMs: 10_000 } },
    );
    const { id } = await runner.enqueue(scope, "flaky", {});
    runner.start();
    await runner.drain();
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3]);
    // Equal jitter: at least half of 60 ms, then of 120 ms.
    expect(attempts[1]!.at - attempts[0]!.at).toBeGreaterThanOrEqual(30 - 2);
    expect(attempts[2]!.at - attempts[1]!.at).toBeGreaterThanOrEqual(60 - 2);
    // Retries are woken by a timer, not found by the (here 10 s) poll.
    expect(attempts[2]!.at - attempts[0]!.at).toBeLessThan(2000);
    expect(await runner.get(id)).toMatchObject({ state: "succeeded", attempts: 3, result: "third time", lastError: "boom 2" });
  });

  it("after maxAttempts transient failures the job fails with the last error", async () => {
    const { runner } = await setup();
    let runs = 0;
    const finished: Job[] = [];
    runner.register(
      "broken",
      async () => {
        runs++;
        throw new Error(`failure #${runs}`);
      },
      { maxAttempts: 3, backoff: { baseMs: 5, maxMs: 20 } },
    );
    runner.onFinished("broken", (job) => void finished.push(job));
    const { id } = await runner.enqueue(scope, "broken", {});
    runner.start();
    await runner.drain();
    expect(runs).toBe(3);
    expect(await runner.get(id)).toMatchObject({ state: "failed", attempts: 3, lastError: "failure #3", leaseOwner: null });
    expect(finished.map((j) => [j.state, j.lastError])).toEqual([["failed", "failure #3"]]);
  });

  it("a PermanentJobError fails the job at once; retry() queues it again with fresh attempts", async () => {
    const { runner } = await setup();
    let runs = 0;
    runner.register(
      "bad",
      async () => {
        if (++runs === 1) throw new PermanentJobError("payload is not valid JSONL");
        return "fixed";
      },
      { maxAttempts: 5 },
    );
    const { id } = await runner.enqueue(scope, "bad", {});
    runner.start();
    await runner.drain();
    expect(runs).toBe(1);
    expect(await runner.get(id)).toMatchObject({ state: "failed", attempts: 1, lastError: "payload is not valid JSONL" });
    expect(await runner.retry(id)).toMatchObject({ state: "queued", attempts: 0, finishedAt: null });
    await runner.drain();
    expect(await runner.get(id)).toMatchObject({ state: "succeeded", attempts: 1, result: "fixed" });
  });

  it("a completion whose record writes fail is retried like a failure", async () => {
    const { runner, records } = await setup();
    await records.atomically([effect("taken")]);
    runner.register(
      "final",
      async (ctx) => {
        if (ctx.job.attempt === 1) await ctx.complete("first", [effect("a"), effect("taken")]);
        return "second";
      },
      { backoff: { baseMs: 5, maxMs: 5 } },
    );
    const { id } = await runner.enqueue(scope, "final", {});
    runner.start();
    await runner.drain();
    expect(await runner.get(id)).toMatchObject({ state: "succeeded", attempts: 2, result: "second" });
    expect(effects(records)).toEqual(["taken"]);
  });
});

/** A store whose lease renewals pretend to succeed and write nothing: a runner that has frozen. */
class NoHeartbeatStore extends SqliteJobStore {
  override async renew(): Promise<LeaseStatus> {
    return "held";
  }
}

describe("jobs: leases", () => {
  it("a runner that stops heartbeating loses the job after leaseMs; another takes it over, and the first can no longer write", async () => {
    const dir = tempDir();
    const records1 = await open(dir);
    const records2 = await open(dir);
    const frozen = newRunner(records1, {}, new NoHeartbeatStore(records1));
    const healthy = newRunner(records2);
    const stalled = gate();
    const wake = gate();
    const takenOver = gate();
    const finish = gate();
    let lateWrite: unknown;
    let takenOverAt = 0;
    const handler = (who: string) => async (ctx: JobContext<unknown, { step: number }>) => {
      const from = ctx.job.checkpoint?.step ?? 0;
      if (from < 1) await ctx.checkpoint({ step: 1 }, [effect("step1", { who })]);
      if (who === "frozen") {
        stalled.open();
        await wake.promise;
        lateWrite = await ctx.checkpoint({ step: 2 }, [effect("late")]).catch((e) => e);
        throw lateWrite;
      }
      takenOverAt = Date.now();
      takenOver.open();
      await finish.promise;
      await ctx.checkpoint({ step: 2 }, [effect("step2", { who, attempt: ctx.job.attempt })]);
      return who;
    };
    frozen.register("takeover", handler("frozen"), { leaseMs: 200 });
    const { id } = await frozen.enqueue(scope, "takeover", {});
    frozen.start();
    await stalled.promise;

    const frozenLeaseEnd = (await frozen.get(id))!.leaseExpiresAt!;
    healthy.register("takeover", handler("healthy"), { leaseMs: 200 });
    healthy.start();
    await takenOver.promise;
    expect(takenOverAt).toBeGreaterThanOrEqual(frozenLeaseEnd); // waited for the lease to expire
    expect(await healthy.get(id)).toMatchObject({ state: "running", attempts: 2 });

    // The first run wakes up while the second holds the job: its write is refused.
    wake.open();
    await waitFor(() => lateWrite !== undefined, "the stale run's write");
    expect(lateWrite).toBeInstanceOf(JobAborted);
    expect((lateWrite as JobAborted).why).toBe("lease-lost");
    await frozen.idle();
    expect(await healthy.get(id)).toMatchObject({ state: "running", checkpoint: { step: 1 } });

    finish.open();
    await healthy.drain();
    const job = await healthy.get(id);
    expect(job).toMatchObject({ state: "succeeded", result: "healthy", attempts: 2, checkpoint: { step: 2 } });
    const rows = records2.db.prepare(`SELECT id, data FROM records WHERE kind = 'effect' ORDER BY id`).all() as Array<{ id: string; data: string }>;
    expect(rows.map((r) => [r.id, JSON.parse(r.data)])).toEqual([
      ["step1", { who: "frozen" }],
      ["step2", { who: "healthy", attempt: 2 }],
    ]);
  });

  it("a job whose runners keep dying fails once its attempts are used up, without running again", async () => {
    const dir = tempDir();
    const records = await open(dir);
    let runs = 0;
    // Three runners in a row claim the job and "die" (never heartbeat, never finish).
    for (let i = 0; i < 3; i++) {
      const dying = newRunner(records, {}, new NoHeartbeatStore(records));
      dying.register(
        "poison",
        async (ctx) => {
          runs++;
          await untilAborted(ctx.signal);
          throw new Error("never reached before the lease expires");
        },
        { leaseMs: 60, maxAttempts: 3 },
      );
      if (i === 0) await dying.enqueue(scope, "poison", {}, { id: "poison" });
      dying.start();
      await waitFor(() => runs === i + 1, `run ${i + 1}`);
      await sleep(80); // lease expires
    }
    const last = newRunner(records);
    last.register("poison", async () => void runs++, { leaseMs: 60, maxAttempts: 3 });
    last.start();
    await waitFor(async () => (await last.get("poison"))?.state === "failed", "the job to fail");
    expect(runs).toBe(3);
    expect((await last.get("poison"))!.lastError).toMatch(/gave up after 3 attempts/);
  });

  it("two runners on two connections share 300 jobs: each job runs exactly once", async () => {
    const dir = tempDir();
    const runners = [newRunner(await open(dir)), newRunner(await open(dir))];
    const runsById = new Map<string, number>();
    for (const r of runners) {
      r.register(
        "shared",
        async (ctx) => {
          runsById.set(ctx.job.id, (runsById.get(ctx.job.id) ?? 0) + 1);
          await sleep(Math.random() * 2);
        },
        { concurrency: 4 },
      );
    }
    await runners[0]!.enqueueMany(Array.from({ length: 300 }, () => ({ scope, kind: "shared", payload: {} })));
    for (const r of runners) r.start();
    await Promise.all(runners.map((r) => r.drain()));
    expect(runsById.size).toBe(300);
    expect([...runsById.values()].every((n) => n === 1)).toBe(true);
  });
});

describe("jobs: concurrency", () => {
  it("1,000 queued jobs drain with exactly the configured parallelism, never more", async () => {
    const { runner, records } = await setup();
    let active = 0;
    let maxActive = 0;
    let done = 0;
    runner.register(
      "bulk",
      async () => {
        active++;
        maxActive = Math.max(maxActive, active);
        await sleep(Math.random() < 0.5 ? 0 : 1);
        active--;
        done++;
      },
      { concurrency: 8 },
    );
    runner.register("other", async () => {}, { concurrency: 2 });
    await runner.enqueueMany(Array.from({ length: 1000 }, (_, i) => ({ scope, kind: "bulk", payload: { i } })));
    runner.start();
    await runner.drain();
    expect(done).toBe(1000);
    expect(maxActive).toBe(8);
    expect(records.db.prepare(`SELECT state, COUNT(*) AS n FROM jobs GROUP BY state`).all()).toEqual([{ state: "succeeded", n: 1000 }]);
  });
});

describe("jobs: shutdown", () => {
  it("stop() aborts running handlers with a shutdown reason and leaves their jobs resumable; a new runner finishes them", async () => {
    const dir = tempDir();
    const records = await open(dir);
    const first = newRunner(records);
    const started = gate();
    let seen: unknown;
    first.register("resumable", async (ctx: JobContext<unknown, { step: number }>) => {
      await ctx.checkpoint({ step: 1 }, [effect("step1")]);
      started.open();
      await untilAborted(ctx.signal);
      seen = ctx.signal.reason;
      throw ctx.signal.reason;
    });
    const { id } = await first.enqueue(scope, "resumable", {});
    first.start();
    await started.promise;
    await first.stop();
    expect((seen as JobAborted).why).toBe("shutdown");
    expect(await first.get(id)).toMatchObject({ state: "queued", attempts: 0, leaseOwner: null, checkpoint: { step: 1 }, lastError: null });

    const second = newRunner(records);
    let resumedFrom: unknown;
    second.register("resumable", async (ctx: JobContext<unknown, { step: number }>) => {
      resumedFrom = ctx.job.checkpoint;
      if (ctx.job.checkpoint!.step < 2) await ctx.checkpoint({ step: 2 }, [effect("step2")]);
      return ctx.job.attempt;
    });
    second.start();
    await second.drain();
    expect(resumedFrom).toEqual({ step: 1 });
    expect(await second.get(id)).toMatchObject({ state: "succeeded", result: 1, attempts: 1 });
    expect(effects(records)).toEqual(["step1", "step2"]);
  });

  it("a handler that ignores the shutdown is released after the grace period, and can no longer write", async () => {
    const { runner, records } = await setup({ shutdownGraceMs: 100 });
    const started = gate();
    const wake = gate();
    let lateWrite: unknown;
    runner.register("stubborn", async (ctx) => {
      started.open();
      await wake.promise;
      lateWrite = await ctx.checkpoint({ step: 1 }, [effect("late")]).catch((e) => e);
    });
    const { id } = await runner.enqueue(scope, "stubborn", {});
    runner.start();
    await started.promise;
    const t0 = Date.now();
    await runner.stop();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(90);
    expect(await runner.get(id)).toMatchObject({ state: "queued", attempts: 0, leaseOwner: null });
    wake.open();
    await waitFor(() => lateWrite !== undefined, "the late write");
    expect((lateWrite as JobAborted).why).toBe("lease-lost");
    expect(effects(records)).toEqual([]);
  });
});

describe("jobs: finished-listeners", () => {
  it("a listener that did not complete (crash, or it threw) is called again when a runner starts", async () => {
    const dir = tempDir();
    const records = await open(dir);
    const first = newRunner(records);
    first.register("n", async () => "done");
    first.onFinished("n", () => {
      throw new Error("listener down");
    });
    const { id } = await first.enqueue(scope, "n", {});
    first.start();
    await first.drain();
    await first.stop();

    const second = newRunner(records);
    second.register("n", async () => "done");
    const delivered = gate<Job>();
    second.onFinished("n", (job) => delivered.open(job));
    second.start();
    expect(await delivered.promise).toMatchObject({ id, state: "succeeded", result: "done" });
    await second.stop();
    // Acknowledged: a third runner is not told again.
    const third = newRunner(records);
    let again = 0;
    third.onFinished("n", () => void again++);
    third.register("n", async () => "done");
    third.start();
    await third.drain();
    await sleep(50);
    expect(again).toBe(0);
  });
});

// ---- expiry ----

const silentLog = { error() {}, warn() {}, info() {}, debug() {} } as unknown as Logger;

class ManualSeconds {
  t = 1_700_000_000;
  now = () => this.t;
}

async function expirySetup(dir: string, clock: ManualSeconds, opts: ConstructorParameters<typeof ExpirySweeper>[4] = {}) {
  const records = await open(dir, clock.now);
  const runner = newRunner(records);
  const sweeper = new ExpirySweeper(records, clock, silentLog, runner, { backoff: { baseMs: 10, maxMs: 20 }, ...opts });
  cleanups.push(() => sweeper.stop());
  return { records, runner, sweeper };
}

const expiredIds = async (records: SqliteRecordStore, now: number) => (await records.expired(now, 1000)).map((e) => e.record.id).sort();

describe("jobs: expiry sweeper", () => {
  it("one failing handler does not stop the others; its record stays and is retried, never in a hot loop", async () => {
    const dir = tempDir();
    const clock = new ManualSeconds();
    const { records, runner, sweeper } = await expirySetup(dir, clock, { maxAttempts: 2, retryFailedAfterMs: 300 });
    const things = records.collection<{ n: number }>("thing");
    for (let n = 0; n < 6; n++) await things.insert(scope, { id: `thing-${n}`, createdAt: clock.t, expiresAt: clock.t + 10 + n, data: { n } });
    const handled: string[] = [];
    let broken = true;
    sweeper.on("thing", async (_scope, rec: StoredRecord<unknown>) => {
      handled.push(rec.id);
      if (rec.id === "thing-1" && broken) throw new Error("disk on fire");
    });
    runner.start();

    clock.t += 100;
    await sweeper.runOnce(); // thing-1 fails its first attempt and waits for a retry
    await sweeper.runOnce(); // its last attempt fails: the job fails for good
    await waitFor(async () => (await runner.get(jobIdOf(await records.expired(clock.t, 1))))?.state === "failed", "the job to fail");
    expect(await expiredIds(records, clock.t)).toEqual(["thing-1"]);
    expect(handled.filter((id) => id !== "thing-1").sort()).toEqual(["thing-0", "thing-2", "thing-3", "thing-4", "thing-5"]);
    expect(handled.filter((id) => id === "thing-1")).toHaveLength(2);

    // Failed for good: passes leave it alone until the cool-down has passed.
    for (let i = 0; i < 5; i++) await sweeper.runOnce();
    expect(handled.filter((id) => id === "thing-1")).toHaveLength(2);

    broken = false;
    await sleep(300);
    await sweeper.runOnce();
    expect(handled.filter((id) => id === "thing-1")).toHaveLength(3);
    expect(await expiredIds(records, clock.t)).toEqual([]);
  });

  it("records without a handler are simply deleted; records not yet due are left", async () => {
    const dir = tempDir();
    const clock = new ManualSeconds();
    const { records, runner, sweeper } = await expirySetup(dir, clock);
    const c = records.collection("plain");
    await c.insert(scope, { id: "soon", createdAt: clock.t, expiresAt: clock.t + 10, data: {} });
    await c.insert(scope, { id: "later", createdAt: clock.t, expiresAt: clock.t + 1000, data: {} });
    runner.start();
    clock.t += 10;
    await sweeper.runOnce();
    clock.t += 500;
    expect(await expiredIds(records, clock.t + 1000)).toEqual(["later"]);
  });

  it("more due records than a page, some of them stuck: every record is reached", async () => {
    const dir = tempDir();
    const clock = new ManualSeconds();
    const { records, runner, sweeper } = await expirySetup(dir, clock, { pageSize: 10, maxAttempts: 1, concurrency: 8 });
    const ops: WriteOp[] = [];
    for (let n = 0; n < 45; n++) ops.push({ op: "insert", kind: "bulk", scope, record: { id: `b${String(n).padStart(2, "0")}`, createdAt: clock.t, expiresAt: clock.t + n, data: {} } });
    await records.atomically(ops);
    // The 15 oldest fail for good: they stay at the front of every expired() page.
    sweeper.on("bulk", async (_s, rec) => {
      if (rec.id < "b15") throw new Error("stuck");
    });
    runner.start();
    clock.t += 100;
    await sweeper.runOnce();
    expect(await expiredIds(records, clock.t)).toEqual(Array.from({ length: 15 }, (_, n) => `b${String(n).padStart(2, "0")}`));
  });

  it("timers survive a restart: a new sweeper on the same data finds and fires them", async () => {
    const dir = tempDir();
    const clock = new ManualSeconds();
    {
      const { records } = await openStorage(dir, { now: clock.now });
      await setTimer(records, "upload", scope, "upload_1", clock.t + 3600);
      await records.close();
    }
    const { records, runner, sweeper } = await expirySetup(dir, clock);
    const fired: Array<[Scope, unknown]> = [];
    sweeper.on(timerKind("upload"), async (s, rec) => void fired.push([s, rec.data]));
    runner.start();
    clock.t += 3599;
    await sweeper.runOnce();
    expect(fired).toEqual([]);
    clock.t += 1;
    sweeper.start(20);
    await waitFor(() => fired.length === 1, "the timer to fire");
    expect(fired).toEqual([[scope, { targetId: "upload_1" }]]);
    await runner.idle();
    expect(await expiredIds(records, clock.t)).toEqual([]);
    await sweeper.runOnce();
    expect(fired).toHaveLength(1);
  });
});

function jobIdOf(due: Array<{ kind: string; record: StoredRecord<unknown> }>): string {
  const d = due[0]!;
  return `expire:${d.kind}:${d.record.id}:${d.record.createdAt}:${d.record.version}`;
}

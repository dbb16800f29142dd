// The PostgreSQL job store with several pools (instances) at once: the database clock decides
// leases whatever the runners' clocks say, NOTIFY wakes a runner for another instance's enqueue,
// two runners share jobs exactly once, and a cancel racing a checkpoint never half-applies.
import { describe, expect, it } from "vitest";
import type pg from "pg";
import { JobRunner } from "../../src/jobs/index.js";
import type { JobEvent } from "../../src/jobs/types.js";
import { PostgresJobStore } from "../../src/jobs/postgres-job-store.js";
import { openPostgresRecordStore, type PostgresRecordStore } from "../../src/storage/postgres/index.js";
import type { WriteOp } from "../../src/storage/index.js";
import { undoAfterEach } from "../shared/cleanup.js";
import { hasPostgres, POSTGRES_INSTALL_HINT, testPostgres } from "../shared/postgres.js";

const { cleanups } = undoAfterEach("atrium-pg-jobs-");
const scope = { projectId: "proj_jobs" };
const HOUR = 3_600_000;

async function newDatabase(): Promise<string> {
  const pgs = await testPostgres();
  const url = await pgs.newDatabase("jobs_concurrency");
  cleanups.push(() => pgs.dropDatabase(url));
  return url;
}

async function open(url: string): Promise<PostgresRecordStore> {
  const store = await openPostgresRecordStore(url, { poolSize: 4 });
  cleanups.push(() => store.close());
  return store;
}

function runner(store: PostgresJobStore, opts: { pollMs?: number; now?: () => number } = {}): JobRunner {
  const r = new JobRunner(store, { pollMs: 50, shutdownGraceMs: 2000, ...opts });
  cleanups.push(() => r.stop());
  return r;
}

const effect = (id: string): WriteOp => ({ op: "insert", kind: "effect", scope, record: { id, createdAt: 0, data: {} } });

describe.skipIf(!hasPostgres())(`PostgresJobStore across instances${hasPostgres() ? "" : ` (${POSTGRES_INSTALL_HINT})`}`, () => {
  it("compares leases on the database clock: a runner whose clock is an hour ahead does not take over a live lease", async () => {
    const url = await newDatabase();
    const a = await new PostgresJobStore(await open(url)).open();
    const b = await new PostgresJobStore(await open(url)).open();
    const aNow = Date.now();
    await a.enqueue([{ id: "j", kind: "work", scope, payload: {}, runAfter: aNow }], aNow);
    const [claimed] = (await a.claim("work", "a:1", 1, aNow, aNow + 30_000, false)).claimed;
    // Times come back on the claiming runner's clock.
    expect(Math.abs(claimed!.leaseExpiresAt! - (aNow + 30_000))).toBeLessThan(5_000);
    const bNow = Date.now() + HOUR;
    expect((await b.claim("work", "b:1", 1, bNow, bNow + 30_000, false)).claimed).toEqual([]);
    expect(await a.renew("j", "a:1", Date.now() + 30_000)).toBe("held");

    // On the runners' own clocks (the embedded store's way) the skewed runner would have taken it.
    const skewed = await new PostgresJobStore(await open(url), { clock: "runner" }).open();
    expect((await skewed.claim("work", "b:2", 1, bNow, bNow + 30_000, false)).claimed.map((j) => j.id)).toEqual(["j"]);
  });

  it("a claim that ends a vanished runner's cancelled job tells the other instances it ended, with the claim", async () => {
    const url = await newDatabase();
    const a = await new PostgresJobStore(await open(url), { clock: "runner" }).open();
    const b = await new PostgresJobStore(await open(url), { clock: "runner" }).open();
    const events: JobEvent[] = [];
    const stop = b.watch((e) => events.push(e));
    cleanups.push(stop);
    await b.listening();
    await a.enqueue([{ id: "j", kind: "work", scope, payload: {}, runAfter: 0 }], 0);
    await a.claim("work", "dead", 1, 0, 1_000, false);
    await a.cancel("j", 10, () => false);
    await expect.poll(() => events.some((e) => e.type === "cancel-requested")).toBe(true);
    const { claimed, cancelled } = await a.claim("work", "r", 5, 1_000, 5_000, false);
    expect(claimed).toEqual([]);
    expect(cancelled.map((j) => j.id)).toEqual(["j"]);
    await expect.poll(() => events.filter((e) => e.type === "ended")).toEqual([{ type: "ended", kind: "work", id: "j" }]);
    // A claim that ends nothing tells nothing.
    await a.claim("work", "r", 5, 2_000, 5_000, false);
    await new Promise((r) => setTimeout(r, 200));
    expect(events.filter((e) => e.type === "ended")).toHaveLength(1);
  });

  it("a batch of plain successes ends in one statement and tells the other instances each job ended; a run it did not end tells nothing", async () => {
    const url = await newDatabase();
    const a = await new PostgresJobStore(await open(url), { clock: "runner" }).open();
    const b = await new PostgresJobStore(await open(url), { clock: "runner" }).open();
    const events: JobEvent[] = [];
    cleanups.push(b.watch((e) => events.push(e)));
    await b.listening();
    await a.enqueue(["x", "y", "gone"].map((id) => ({ id, kind: "work", scope, payload: {}, runAfter: 0 })), 0);
    await a.claim("work", "r", 3, 0, 10_000, false);
    // What a's records store is asked while it ends the batch: one statement, no transaction.
    const records = (a as unknown as { records: { pool: pg.Pool; transaction: (...args: unknown[]) => unknown } }).records;
    const sent: string[] = [];
    let transactions = 0;
    const query = records.pool.query.bind(records.pool) as (...args: unknown[]) => unknown;
    const transaction = records.transaction.bind(records);
    Object.assign(records.pool, {
      query: (q: string | { name?: string; text: string }, ...rest: unknown[]) => {
        sent.push(typeof q === "string" ? q : (q.name ?? q.text));
        return query(q, ...rest);
      },
    });
    records.transaction = (...args: unknown[]) => {
      transactions++;
      return transaction(...args);
    };
    const ended = await a.endRuns(
      [
        { id: "x", owner: "r", end: { state: "succeeded", result: 1, ops: [] }, notify: false },
        { id: "y", owner: "r", end: { state: "succeeded", result: 2, ops: [] }, notify: false },
      ],
      100,
    );
    expect(ended).toMatchObject([{ id: "x", state: "succeeded", result: 1 }, { id: "y", state: "succeeded", result: 2 }]);
    expect(sent).toEqual(["atrium_jobs_succeed_many"]);
    expect(transactions).toBe(0);
    await expect.poll(() => events.filter((e) => e.type === "ended").map((e) => (e as { id: string }).id).sort()).toEqual(["x", "y"]);
    // A run whose lease another owner holds is not ended, and nobody is told it ended.
    expect(await a.endRuns([{ id: "gone", owner: "someone-else", end: { state: "succeeded", result: 3, ops: [] }, notify: false }], 200)).toEqual([undefined]);
    await new Promise((r) => setTimeout(r, 200));
    expect(events.filter((e) => e.type === "ended")).toHaveLength(2);
    expect(await b.get("gone")).toMatchObject({ state: "running", leaseOwner: "r" });
  });

  it("when the transaction for the other ends fails, the plain successes already ended stay ended and only the others fail", async () => {
    const url = await newDatabase();
    const a = await new PostgresJobStore(await open(url), { clock: "runner" }).open();
    await a.enqueue(["plain", "failing"].map((id) => ({ id, kind: "work", scope, payload: {}, runAfter: 0 })), 0);
    await a.claim("work", "r", 2, 0, 10_000, false);
    const records = a as unknown as { records: { transaction: (...args: unknown[]) => Promise<unknown> } };
    records.records.transaction = () => Promise.reject(new Error("connection lost"));
    const ended = await a.endRuns(
      [
        { id: "plain", owner: "r", end: { state: "succeeded", result: 1, ops: [] }, notify: false },
        { id: "failing", owner: "r", end: { state: "failed", error: "boom" }, notify: false },
      ],
      100,
    );
    expect(ended[0]).toMatchObject({ id: "plain", state: "succeeded", result: 1 });
    expect(ended[1]).toBeInstanceOf(Error);
    expect((ended[1] as Error).message).toBe("connection lost");
    expect(await a.get("plain")).toMatchObject({ state: "succeeded" });
    expect(await a.get("failing")).toMatchObject({ state: "running", leaseOwner: "r" });
    // A batch with nothing for the one statement fails whole, as before.
    await expect(a.endRuns([{ id: "failing", owner: "r", end: { state: "failed", error: "boom" }, notify: false }], 200)).rejects.toThrow("connection lost");
  });

  it("a large batch's ended wake-ups reach another instance whole, many ids to a notification", async () => {
    // 65 ids of 108–147 characters a kind: over the 8,000-byte payload limit in one notification.
    const url = await newDatabase();
    const a = await new PostgresJobStore(await open(url), { clock: "runner" }).open();
    const b = await new PostgresJobStore(await open(url), { clock: "runner" }).open();
    const ended: string[] = [];
    cleanups.push(b.watch((e) => e.type === "ended" && ended.push(e.id)));
    await b.listening();
    const ids = Array.from({ length: 130 }, (_, i) => `job-${String(i).padStart(3, "0")}-${"x".repeat(100 + (i % 40))}`);
    await a.enqueue(ids.map((id) => ({ id, kind: i2kind(id), scope, payload: {}, runAfter: 0 })), 0);
    for (const kind of ["even", "odd"]) await a.claim(kind, "r", 100, 0, 10_000, false);
    const done = await a.endRuns(ids.map((id) => ({ id, owner: "r", end: { state: "succeeded", result: null, ops: [] }, notify: false })), 100);
    expect(done.every((j) => j !== undefined && !(j instanceof Error) && j.state === "succeeded")).toBe(true);
    await expect.poll(() => [...ended].sort()).toEqual([...ids].sort());
  });

  it("a runner that never polls is woken by NOTIFY for a job another instance enqueues", async () => {
    const url = await newDatabase();
    const here = await new PostgresJobStore(await open(url)).open();
    const elsewhere = await new PostgresJobStore(await open(url)).open();
    const r = runner(here, { pollMs: HOUR });
    const ran: string[] = [];
    r.register("work", async (ctx) => {
      ran.push(ctx.job.id);
      return "done";
    });
    r.start();
    // The first claim round (at start) finds nothing; from then on only a wake-up can start the job.
    await r.idle();
    await here.listening();
    await elsewhere.enqueue([{ id: "from-b", kind: "work", scope, payload: {}, runAfter: 0 }], Date.now());
    const [job] = await r.settled(["from-b"]);
    expect(job).toMatchObject({ state: "succeeded", result: "done" });
    expect(ran).toEqual(["from-b"]);
  });

  it("a cancel on another instance stops the run, and that instance's wait for the job returns, without waiting for a heartbeat", async () => {
    const url = await newDatabase();
    const here = await new PostgresJobStore(await open(url)).open();
    const there = await new PostgresJobStore(await open(url)).open();
    // NOTIFY carries the cancel at once; the 10 s heartbeat (a 30 s lease) and the 10 s poll only
    // bound the wait on a machine so loaded that a notification arrives late.
    const worker = runner(here, { pollMs: 10_000 });
    const started = new Promise<AbortSignal>((resolve) =>
      worker.register(
        "work",
        async (ctx) => {
          resolve(ctx.signal);
          await new Promise<void>((r) => ctx.signal.addEventListener("abort", () => r(), { once: true }));
          throw ctx.signal.reason;
        },
        { leaseMs: 30_000 },
      ),
    );
    worker.start();
    const waiter = runner(there, { pollMs: 10_000 });
    waiter.start();
    await Promise.all([here.listening(), there.listening()]);
    await waiter.enqueue(scope, "work", {}, { id: "long" });
    const signal = await started;
    expect(await waiter.cancel("long")).toMatchObject({ state: "running", cancelRequested: true });
    const [job] = await waiter.settled(["long"]);
    expect(signal.aborted).toBe(true);
    expect(job).toMatchObject({ id: "long", state: "cancelled" });
  });

  it("two runners on two pools share 200 jobs: each runs exactly once, its effect committed with its completion", async () => {
    const url = await newDatabase();
    const storeA = await open(url);
    const jobsA = await new PostgresJobStore(storeA).open();
    const jobsB = await new PostgresJobStore(await open(url)).open();
    const runs = new Map<string, number>();
    for (const [name, store] of [["a", jobsA], ["b", jobsB]] as const) {
      const r = runner(store);
      r.register(
        "work",
        async (ctx) => {
          runs.set(ctx.job.id, (runs.get(ctx.job.id) ?? 0) + 1);
          await ctx.complete(name, [effect(ctx.job.id)]);
        },
        { concurrency: 4 },
      );
      r.start();
    }
    const ids = Array.from({ length: 200 }, (_, i) => `j${i}`);
    await jobsA.enqueue(ids.map((id) => ({ id, kind: "work", scope, payload: {}, runAfter: 0 })), Date.now());
    const checker = runner(jobsA);
    checker.start();
    const done = await checker.settled(ids);
    expect(done.every((j) => j.state === "succeeded")).toBe(true);
    expect([...runs.values()].every((n) => n === 1)).toBe(true);
    expect(runs.size).toBe(200);
    expect(await storeA.collection("effect").count(scope)).toBe(200);
    expect(new Set(done.map((j) => j.result))).toEqual(new Set(["a", "b"]));
  });

  it("a cancel racing a checkpoint: either the checkpoint and its writes commit before the cancel, or nothing is written", async () => {
    const url = await newDatabase();
    const storeA = await open(url);
    const a = await new PostgresJobStore(storeA).open();
    const b = await new PostgresJobStore(await open(url)).open();
    const N = 30;
    await a.enqueue(Array.from({ length: N }, (_, i) => ({ id: `j${i}`, kind: "work", scope, payload: {}, runAfter: 0 })), Date.now());
    await a.claim("work", "r", N, Date.now(), Date.now() + 60_000, false);
    const outcomes = await Promise.all(
      Array.from({ length: N }, async (_, i) => {
        const [status, cancel] = await Promise.all([a.saveCheckpoint(`j${i}`, "r", { step: 1 }, [effect(`e${i}`)], Date.now()), b.cancel(`j${i}`, Date.now(), () => false)]);
        const job = await a.get(`j${i}`);
        const written = (await storeA.collection("effect").get(scope, `e${i}`)) !== undefined;
        // What the cancel saw when it decided: a checkpoint that reports "held" committed before it.
        return { status, checkpoint: job!.checkpoint, cancelRequested: job!.cancelRequested, written, cancelSaw: cancel!.job.checkpoint };
      }),
    );
    for (const o of outcomes) {
      expect(o.cancelRequested).toBe(true);
      if (o.status === "held") expect(o).toMatchObject({ checkpoint: { step: 1 }, written: true, cancelSaw: { step: 1 } });
      else expect(o).toMatchObject({ status: "cancel-requested", checkpoint: null, written: false });
    }
  });
});

/** Two kinds, so a batch's wake-ups are grouped by kind as well as chunked. */
function i2kind(id: string): string {
  return Number(id.slice(4, 7)) % 2 === 0 ? "even" : "odd";
}

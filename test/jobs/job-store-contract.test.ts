// The JobStore contract: the same cases against the embedded store (SQLite) and the scale-out one
// (PostgreSQL, on the runner's clock so the cases can name times). What the runner relies on:
// idempotent enqueue, claims in due order that never hand one job out twice, fencing by lease,
// checkpoints and completions committed with their record writes, cancel, retry, the finished-
// listener bookkeeping and purging.
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { SqliteJobStore, type Job, type JobStore } from "../../src/jobs/index.js";
import { PostgresJobStore } from "../../src/jobs/postgres-job-store.js";
import { openSqliteRecordStore, type RecordStore, type Scope, type WriteOp } from "../../src/storage/index.js";
import { openPostgresRecordStore } from "../../src/storage/postgres/index.js";
import { undoAfterEach } from "../shared/cleanup.js";
import { hasPostgres, POSTGRES_INSTALL_HINT, testPostgres } from "../shared/postgres.js";

const { cleanups, tempDir } = undoAfterEach("atrium-job-contract-");
const scope: Scope = { projectId: "proj_jobs" };

interface Backend {
  name: string;
  available: boolean;
  open(): Promise<{ jobs: JobStore; records: RecordStore }>;
}

const backends: Backend[] = [
  {
    name: "SQLite",
    available: true,
    async open() {
      const records = openSqliteRecordStore(path.join(tempDir(), "atrium.db"));
      cleanups.push(() => records.close());
      return { jobs: new SqliteJobStore(records), records };
    },
  },
  {
    name: "PostgreSQL",
    available: hasPostgres(),
    async open() {
      const pg = await testPostgres();
      const url = await pg.newDatabase("jobs_contract");
      cleanups.push(() => pg.dropDatabase(url));
      const records = await openPostgresRecordStore(url, { poolSize: 4 });
      cleanups.push(() => records.close());
      return { jobs: await new PostgresJobStore(records, { clock: "runner" }).open(), records };
    },
  },
];

const effect = (id: string): WriteOp => ({ op: "insert", kind: "effect", scope, record: { id, createdAt: 0, data: { id } } });
const newJob = (id: string, runAfter = 0, kind = "work") => ({ id, kind, scope, payload: { id }, runAfter });
const ids = (jobs: Job[]) => jobs.map((j) => j.id);

describe.each(backends)("JobStore contract on $name", (backend) => {
  if (!backend.available) {
    it.skip(`needs PostgreSQL: ${POSTGRES_INSTALL_HINT}`, () => {});
    return;
  }

  it("enqueue is idempotent by id and refuses an id of another kind; get returns the row", async () => {
    const { jobs } = await backend.open();
    const [first] = await jobs.enqueue([newJob("j1", 5)], 1_000);
    expect(first).toMatchObject({ id: "j1", kind: "work", scope, payload: { id: "j1" }, state: "queued", attempts: 0, runAfter: 5, createdAt: 1_000, leaseOwner: null, cancelRequested: false });
    const [again] = await jobs.enqueue([{ ...newJob("j1", 99), payload: { other: true } }], 2_000);
    expect(again).toEqual(first);
    await expect(jobs.enqueue([newJob("j1", 0, "other")], 2_000)).rejects.toThrow(/already used/);
    expect(await jobs.get("j1")).toEqual(first);
    expect(await jobs.get("nope")).toBeUndefined();
  });

  it("claims due jobs in due order up to the limit, leaves future ones, and never hands a job out twice", async () => {
    const { jobs } = await backend.open();
    await jobs.enqueue([newJob("late", 50), newJob("a", 10), newJob("b", 10), newJob("future", 5_000), newJob("other", 0, "other-kind")], 0);
    const first = await jobs.claim("work", "r1:1", 2, 100, 10_100, false);
    expect(ids(first.claimed)).toEqual(["a", "b"]);
    expect(first.claimed[0]).toMatchObject({ state: "running", attempts: 1, leaseOwner: "r1:1", leaseExpiresAt: 10_100 });
    expect(ids((await jobs.claim("work", "r2:1", 10, 100, 10_100, false)).claimed)).toEqual(["late"]);
    expect((await jobs.claim("work", "r2:2", 10, 100, 10_100, false)).claimed).toEqual([]);

    // Concurrent claimers split 40 jobs between them with no overlap.
    await jobs.enqueue(Array.from({ length: 40 }, (_, i) => newJob(`c${i}`, 1)), 0);
    const rounds = await Promise.all([1, 2, 3, 4].map((n) => jobs.claim("work", `c:${n}`, 15, 100, 10_100, false)));
    const all = rounds.flatMap((r) => ids(r.claimed));
    expect(all).toHaveLength(40);
    expect(new Set(all).size).toBe(40);
  });

  it("fences writes by lease: an expired lease is claimed again and the old owner's writes change nothing", async () => {
    const { jobs, records } = await backend.open();
    await jobs.enqueue([newJob("j")], 0);
    await jobs.claim("work", "old", 1, 0, 1_000, false);
    expect(await jobs.renew("j", "old", 1_500)).toBe("held");
    expect(await jobs.saveProgress("j", "old", { p: 1 }, 100)).toBe("held");
    // Not expired yet at 1_499; expired at 1_500.
    expect((await jobs.claim("work", "new", 1, 1_499, 3_000, false)).claimed).toEqual([]);
    const taken = (await jobs.claim("work", "new", 1, 1_500, 3_000, false)).claimed;
    expect(taken).toMatchObject([{ id: "j", attempts: 2, leaseOwner: "new", progress: { p: 1 } }]);

    expect(await jobs.renew("j", "old", 9_000)).toBe("lost");
    expect(await jobs.saveProgress("j", "old", { p: 2 }, 1_600)).toBe("lost");
    expect(await jobs.saveCheckpoint("j", "old", { step: 9 }, [effect("e-old")], 1_600)).toBe("lost");
    expect(await jobs.endRuns([{ id: "j", owner: "old", end: { state: "succeeded", result: 1, ops: [effect("e-old2")] }, notify: false }], 1_600)).toEqual([undefined]);
    expect(await jobs.get("j")).toMatchObject({ state: "running", leaseOwner: "new", leaseExpiresAt: 3_000, progress: { p: 1 }, checkpoint: null });
    expect(await records.collection("effect").count(scope)).toBe(0);
  });

  it("commits a checkpoint with its record writes, or neither when a write fails", async () => {
    const { jobs, records } = await backend.open();
    await jobs.enqueue([newJob("j")], 0);
    await jobs.claim("work", "r", 1, 0, 10_000, false);
    expect(await jobs.saveCheckpoint("j", "r", { step: 1 }, [effect("e1")], 10)).toBe("held");
    expect((await jobs.get("j"))!.checkpoint).toEqual({ step: 1 });
    await expect(jobs.saveCheckpoint("j", "r", { step: 2 }, [effect("e2"), effect("e1")], 20)).rejects.toThrow();
    expect((await jobs.get("j"))!.checkpoint).toEqual({ step: 1 });
    expect((await records.collection("effect").list(scope, { limit: 10, order: "asc" })).records.map((r) => r.id)).toEqual(["e1"]);
  });

  it("ends runs in one batch: a failing completion is that run's error only; a lost lease is undefined", async () => {
    const { jobs, records } = await backend.open();
    await jobs.enqueue([newJob("ok"), newJob("bad"), newJob("failed"), newJob("retry"), newJob("released"), newJob("lost")], 0);
    await jobs.claim("work", "r", 10, 0, 10_000, true);
    const ended = await jobs.endRuns(
      [
        { id: "ok", owner: "r", end: { state: "succeeded", result: { n: 1 }, ops: [effect("e-ok")] }, notify: true },
        { id: "bad", owner: "r", end: { state: "succeeded", result: 2, ops: [effect("e-bad"), effect("e-ok")] }, notify: true },
        { id: "failed", owner: "r", end: { state: "failed", error: "boom" }, notify: false },
        { id: "retry", owner: "r", end: { state: "retry", error: "again", runAfter: 500 }, notify: false },
        { id: "released", owner: "r", end: { state: "released" }, notify: false },
        { id: "lost", owner: "someone-else", end: { state: "failed", error: "x" }, notify: false },
      ],
      100,
    );
    expect(ended[0]).toMatchObject({ id: "ok", state: "succeeded", result: { n: 1 }, finishedAt: 100, leaseOwner: null });
    expect(ended[1]).toBeInstanceOf(Error);
    expect(ended[2]).toMatchObject({ state: "failed", lastError: "boom", finishedAt: 100 });
    expect(ended[3]).toMatchObject({ state: "queued", lastError: "again", runAfter: 500, attempts: 1 });
    expect(ended[4]).toMatchObject({ state: "queued", attempts: 0, runAfter: 100 });
    expect(ended[5]).toBeUndefined();
    expect(await jobs.get("bad")).toMatchObject({ state: "running", leaseOwner: "r" });
    expect((await records.collection("effect").list(scope, { limit: 10, order: "asc" })).records.map((r) => r.id)).toEqual(["e-ok"]);
    expect(ids(await jobs.pendingNotifications(["work"], 10))).toEqual(["ok"]);
    await jobs.ackNotification("ok");
    expect(await jobs.pendingNotifications(["work"], 10)).toEqual([]);
  });

  it("ends a batch of plain successes, each with its own result and notify flag, except a cancelled run, a lost lease and a repeat", async () => {
    const { jobs } = await backend.open();
    await jobs.enqueue(["a", "b", "c", "cancel", "lost", "d"].map((id) => newJob(id)), 0);
    await jobs.claim("work", "r", 10, 0, 10_000, false);
    await jobs.cancel("cancel", 50, () => true);
    const ended = await jobs.endRuns(
      [
        { id: "a", owner: "r", end: { state: "succeeded", result: { n: 1 }, ops: [] }, notify: true },
        { id: "cancel", owner: "r", end: { state: "succeeded", result: 9, ops: [] }, notify: true },
        { id: "b", owner: "r", end: { state: "succeeded", result: null, ops: [] }, notify: false },
        { id: "lost", owner: "someone-else", end: { state: "succeeded", result: 9, ops: [] }, notify: false },
        { id: "c", owner: "r", end: { state: "succeeded", result: "three", ops: [] }, notify: true },
        { id: "c", owner: "r", end: { state: "succeeded", result: "again", ops: [] }, notify: true },
        { id: "d", owner: "r", end: { state: "failed", error: "boom" }, notify: false },
      ],
      100,
    );
    expect(ended[0]).toMatchObject({ id: "a", state: "succeeded", result: { n: 1 }, finishedAt: 100, leaseOwner: null, leaseExpiresAt: null });
    expect(ended[1]).toMatchObject({ id: "cancel", state: "cancelled", finishedAt: 100, leaseOwner: null });
    expect(ended[2]).toMatchObject({ id: "b", state: "succeeded", result: null });
    expect(ended[3]).toBeUndefined();
    expect(ended[4]).toMatchObject({ id: "c", state: "succeeded", result: "three" });
    expect(ended[5]).toBeUndefined();
    expect(ended[6]).toMatchObject({ id: "d", state: "failed", lastError: "boom" });
    expect(await jobs.get("lost")).toMatchObject({ state: "running", leaseOwner: "r" });
    expect(await jobs.get("c")).toMatchObject({ result: "three" });
    expect(ids(await jobs.pendingNotifications(["work"], 10)).sort()).toEqual(["a", "c", "cancel"]);
  });

  it("cancels a queued job at once, requests cancel of a running one (its writes then refused), and leaves a finished one", async () => {
    const { jobs, records } = await backend.open();
    await jobs.enqueue([newJob("running"), newJob("queued", 1_000)], 0);
    await jobs.claim("work", "r", 1, 0, 10_000, false);
    expect(await jobs.cancel("queued", 10, () => true)).toMatchObject({ effect: "cancelled", job: { state: "cancelled", finishedAt: 10 } });
    expect(ids(await jobs.pendingNotifications(["work"], 10))).toEqual(["queued"]);
    expect(await jobs.cancel("running", 20, () => true)).toMatchObject({ effect: "requested", job: { state: "running", cancelRequested: true } });
    expect(await jobs.cancel("running", 21, () => true)).toMatchObject({ effect: "none" });
    expect(await jobs.renew("running", "r", 20_000)).toBe("cancel-requested");
    expect(await jobs.saveProgress("running", "r", { p: 1 }, 30)).toBe("cancel-requested");
    expect(await jobs.saveCheckpoint("running", "r", { s: 1 }, [effect("e")], 30)).toBe("cancel-requested");
    const [end] = await jobs.endRuns([{ id: "running", owner: "r", end: { state: "succeeded", result: 1, ops: [effect("e")] }, notify: false }], 40);
    expect(end).toMatchObject({ state: "cancelled", result: null, finishedAt: 40 });
    expect(await records.collection("effect").count(scope)).toBe(0);
    expect(await jobs.cancel("running", 50, () => true)).toMatchObject({ effect: "none", job: { state: "cancelled" } });
    expect(await jobs.cancel("missing", 50, () => true)).toBeUndefined();
  });

  it("a claim ends a cancelled job whose runner vanished as cancelled instead of running it", async () => {
    const { jobs } = await backend.open();
    await jobs.enqueue([newJob("j")], 0);
    await jobs.claim("work", "dead", 1, 0, 1_000, false);
    await jobs.cancel("j", 10, () => false);
    const { claimed, cancelled } = await jobs.claim("work", "r", 5, 1_000, 5_000, true);
    expect(claimed).toEqual([]);
    expect(cancelled).toMatchObject([{ id: "j", state: "cancelled", finishedAt: 1_000, leaseOwner: null }]);
    expect(ids(await jobs.pendingNotifications(["work"], 10))).toEqual(["j"]);
  });

  it("one claim takes expired leases before queued jobs, within the limit, and ends a vanished cancelled run beside them", async () => {
    const { jobs } = await backend.open();
    await jobs.enqueue([newJob("x1"), newJob("x2"), newJob("gone")], 0);
    await jobs.claim("work", "dead:1", 1, 0, 900, false); // x1, lease until 900
    await jobs.claim("work", "dead:2", 2, 0, 800, false); // x2 and gone, until 800
    await jobs.cancel("gone", 10, () => true);
    await jobs.enqueue([newJob("q2", 20), newJob("q1", 10), newJob("q3", 30)], 0);
    const { claimed, cancelled } = await jobs.claim("work", "r", 3, 1_000, 5_000, true);
    expect(ids(claimed).slice(0, 2).sort()).toEqual(["x1", "x2"]);
    expect(ids(claimed).slice(2)).toEqual(["q1"]);
    expect(claimed.map((j) => [j.attempts, j.leaseOwner, j.leaseExpiresAt])).toEqual([[2, "r", 5_000], [2, "r", 5_000], [1, "r", 5_000]]);
    expect(cancelled).toMatchObject([{ id: "gone", state: "cancelled", finishedAt: 1_000 }]);
    expect(ids((await jobs.claim("work", "r2", 10, 1_000, 5_000, false)).claimed)).toEqual(["q2", "q3"]);
    // A limit the expired leases fill leaves the queue alone.
    await jobs.enqueue([newJob("q4")], 0);
    expect((await jobs.claim("work", "r3", 2, 6_000, 9_000, false)).claimed.map((j) => [j.attempts > 1, j.leaseOwner])).toEqual([[true, "r3"], [true, "r3"]]);
    expect(await jobs.get("q4")).toMatchObject({ state: "queued", leaseOwner: null });
  });

  it("retries a failed or cancelled job with fresh attempts, and leaves others alone", async () => {
    const { jobs } = await backend.open();
    await jobs.enqueue([newJob("j"), newJob("q", 7)], 0);
    await jobs.claim("work", "r", 1, 0, 1_000, false);
    await jobs.endRuns([{ id: "j", owner: "r", end: { state: "failed", error: "x" }, notify: true }], 5);
    expect(await jobs.retry("j", 50)).toMatchObject({ state: "queued", attempts: 0, runAfter: 50, finishedAt: null, cancelRequested: false });
    expect(await jobs.pendingNotifications(["work"], 10)).toEqual([]);
    expect(await jobs.retry("q", 50)).toMatchObject({ state: "queued", runAfter: 7 });
    expect(await jobs.retry("missing", 50)).toBeUndefined();
  });

  it("reports unfinished and runnable work, counts it, and purges finished notified jobs", async () => {
    const { jobs } = await backend.open();
    expect(await jobs.hasUnfinished(["work"])).toBe(false);
    await jobs.enqueue([newJob("soon", 100), newJob("now", 0), newJob("x", 0, "other")], 0);
    expect(await jobs.hasUnfinished(["work"])).toBe(true);
    expect(await jobs.hasUnfinished(["none"])).toBe(false);
    await jobs.claim("work", "r", 1, 10, 1_000, false);
    expect(await jobs.hasUnfinished(["work"], 50)).toBe(false); // "now" runs under a live lease; "soon" is not due
    expect(await jobs.hasUnfinished(["work"], 100)).toBe(true);
    expect(await jobs.hasUnfinished(["work"], 1_000)).toBe(true);
    const counts = await jobs.unfinishedCounts();
    expect(counts.sort((a, b) => (a.kind + a.state).localeCompare(b.kind + b.state))).toEqual([
      { kind: "other", state: "queued", n: 1 },
      { kind: "work", state: "queued", n: 1 },
      { kind: "work", state: "running", n: 1 },
    ]);
    await jobs.endRuns([{ id: "now", owner: "r", end: { state: "succeeded", result: null, ops: [] }, notify: true }], 200);
    expect(await jobs.purgeFinished(1_000, 10)).toBe(0); // awaiting its finished-listeners
    await jobs.ackNotification("now");
    expect(await jobs.purgeFinished(200, 10)).toBe(0); // finished at 200, not before
    expect(await jobs.purgeFinished(201, 10)).toBe(1);
    expect(await jobs.get("now")).toBeUndefined();
  });
});

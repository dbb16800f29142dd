// The generic worker pool under the sentence encoder (src/engines/pool), driven with a fixture
// worker (test/fixtures/pool-worker.ts, started from its TypeScript source through tsx):
// replies, transfers, queueing, task errors, crashes and replacement, cancellation, close().
import { getPriority } from "node:os";
import { afterEach, describe, expect, it, vi } from "vitest";
import { PoolClosedError, WorkerCrashedError, WorkerPool, WorkerTaskError, recycleFromEnv, workerScript } from "../../../src/engines/pool/index.js";
import type { FixtureTask } from "../../fixtures/pool-worker.js";

const script = workerScript(new URL("../../fixtures/", import.meta.url).href, "pool-worker");
const pools: WorkerPool<FixtureTask, any>[] = [];

function pool(size = 1, host?: Record<string, (...args: any[]) => unknown>, nice?: number): WorkerPool<FixtureTask, any> {
  const p = new WorkerPool<FixtureTask, any>({ script, size, name: "fixture", host, nice });
  pools.push(p);
  return p;
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

describe("worker pool", () => {
  it("starts from the .ts source through a data: bootstrap when no compiled .js is beside it", () => {
    expect(script.protocol).toBe("data:");
    expect(decodeURIComponent(script.href)).toContain("pool-worker.ts");
  });

  it("runs tasks and answers each caller with its own result", async () => {
    const p = pool(2);
    const results = await Promise.all([1, 2, 3, 4, 5].map((n) => p.run({ op: "echo", value: { n } })));
    expect(results.map((r) => r.value.n)).toEqual([1, 2, 3, 4, 5]);
    expect(p.stats()).toMatchObject({ workers: 2, busy: 0, queued: 0 });
  });

  it("starts no thread before the first task, and at most `size`", async () => {
    const p = pool(2);
    expect(p.stats().workers).toBe(0);
    const running = [p.run({ op: "sleep", ms: 150 }), p.run({ op: "sleep", ms: 150 }), p.run({ op: "sleep", ms: 150 })];
    await new Promise((r) => setTimeout(r, 20));
    expect(p.stats()).toMatchObject({ workers: 2, busy: 2, queued: 1 });
    const done = await Promise.all(running);
    expect(new Set(done.map((d) => d.threadId)).size).toBe(2);
  });

  it("moves typed arrays both ways instead of copying them", async () => {
    const p = pool();
    const input = new Float32Array([1, 2, 3]);
    const out: Float32Array = await p.run({ op: "double", values: input }, { transfer: [input.buffer] });
    expect(input.byteLength).toBe(0); // detached: it went to the worker
    expect(out).toBeInstanceOf(Float32Array);
    expect(Array.from(out)).toEqual([2, 4, 6]);
  });

  it("a worker calls the parent's host functions by name: results, errors and unknown names come back", async () => {
    const seen: unknown[] = [];
    const p = pool(2, {
      add: (a: number, b: number) => a + b,
      later: async (s: string) => {
        await new Promise((r) => setTimeout(r, 10));
        seen.push(s);
        return { bytes: new Uint8Array([1, 2, 3]), s };
      },
      unclonable: () => ({ f: () => 1 }),
      fails: () => {
        const e = new TypeError("no such thing") as TypeError & { code: string };
        e.code = "host_code";
        throw e;
      },
    });
    const [a, b, c] = await Promise.all([
      p.run({ op: "host", method: "add", args: [2, 3] }),
      p.run({ op: "host", method: "later", args: ["x"] }),
      p.run({ op: "host", method: "later", args: ["y"] }),
    ]);
    expect(a).toEqual({ ok: 5 });
    expect(b.ok.s).toBe("x");
    expect(Array.from(b.ok.bytes)).toEqual([1, 2, 3]);
    expect(c.ok.s).toBe("y");
    expect(seen.sort()).toEqual(["x", "y"]);
    expect(await p.run({ op: "host", method: "fails", args: [] })).toEqual({ error: { name: "TypeError", message: "no such thing", code: "host_code" } });
    const unclonable = await p.run({ op: "host", method: "unclonable", args: [] });
    expect(unclonable.error.name).toBe("DataCloneError");
    expect((await p.run({ op: "host", method: "add", args: [1, 2] })).ok).toBe(3); // the worker lives on
    const unknown = await p.run({ op: "host", method: "toString", args: [] });
    expect(unknown.error.message).toContain("no host function 'toString'");
    expect((await pool(1).run({ op: "host", method: "add", args: [1, 1] })).error.message).toContain("no host function 'add'");
  });

  it("a task's own error comes back with its name, message and code; the worker lives on", async () => {
    const p = pool();
    const before = (await p.run({ op: "echo", value: 0 })).threadId;
    const err = await p.run({ op: "throw", message: "bad input" }).catch((e) => e);
    expect(err).toBeInstanceOf(WorkerTaskError);
    expect(err).toMatchObject({ name: "RangeError", message: "bad input", code: "fixture_error" });
    expect((await p.run({ op: "echo", value: 0 })).threadId).toBe(before);
  });

  for (const op of ["crash", "exit"] as const) {
    it(`a worker that dies (${op}) fails its task and is replaced; queued tasks still run`, async () => {
      const p = pool();
      const before = (await p.run({ op: "echo", value: 0 })).threadId;
      const dying = p.run(op === "crash" ? { op } : { op, code: 3 });
      const queued = p.run({ op: "echo", value: "after" });
      const err = await dying.catch((e) => e);
      expect(err).toBeInstanceOf(WorkerCrashedError);
      const next = await queued;
      expect(next.value).toBe("after");
      expect(next.threadId).not.toBe(before);
      expect(p.stats()).toMatchObject({ workers: 1, crashes: 1 });
    });
  }

  it("an aborted queued task leaves the queue; an aborted running task is cancelled in the worker", async () => {
    const p = pool();
    const running = new AbortController();
    const queued = new AbortController();
    const a = p.run({ op: "sleep", ms: 5_000 }, { signal: running.signal });
    const b = p.run({ op: "sleep", ms: 5_000 }, { signal: queued.signal });
    queued.abort(new Error("queued abort"));
    await expect(b).rejects.toThrow("queued abort");
    let abortedAt = 0;
    setTimeout(() => {
      abortedAt = performance.now();
      running.abort(new Error("running abort"));
    }, 50);
    await expect(a).rejects.toThrow("running abort");
    // The worker stopped sleeping at the cancel message and takes the next task (the pool has one
    // worker): had it slept on, the echo would wait out the 5 s sleep, ≥ ~4.9 s after the abort
    // however long the worker took to start.
    expect((await p.run({ op: "echo", value: 1 })).value).toBe(1);
    expect(performance.now() - abortedAt).toBeLessThan(4_000);
  });

  it("an already aborted signal never reaches a worker", async () => {
    const p = pool();
    await expect(p.run({ op: "echo", value: 1 }, { signal: AbortSignal.abort(new Error("too late")) })).rejects.toThrow("too late");
    expect(p.stats().workers).toBe(0);
  });

  it("close() fails running and queued tasks and refuses new ones", async () => {
    const p = pool();
    const a = p.run({ op: "sleep", ms: 5_000 }).catch((e) => e);
    const b = p.run({ op: "echo", value: 1 }).catch((e) => e);
    await new Promise((r) => setTimeout(r, 20));
    await p.close();
    expect(await a).toBeInstanceOf(PoolClosedError);
    expect(await b).toBeInstanceOf(PoolClosedError);
    await expect(p.run({ op: "echo", value: 1 })).rejects.toBeInstanceOf(PoolClosedError);
    expect(p.stats().workers).toBe(0);
  });

  it("a payload or a result that cannot be cloned fails only that task", async () => {
    const p = pool();
    await expect(p.run({ op: "echo", value: () => 1 })).rejects.toThrow(/could not be cloned/);
    const before = (await p.run({ op: "echo", value: 2 })).threadId;
    const err = await p.run({ op: "unclonable" }).catch((e) => e);
    expect(err).toBeInstanceOf(WorkerTaskError);
    expect(err.name).toBe("DataCloneError");
    expect((await p.run({ op: "echo", value: 3 })).threadId).toBe(before);
  });
});

describe("worker recycling (issue 22, defect 10)", () => {
  const recycling = (recycle: { afterTasks?: number; aboveMb?: number }) => {
    const p = new WorkerPool<FixtureTask, any>({ script, size: 1, name: "fixture", recycle });
    pools.push(p);
    return p;
  };

  it("replaces a worker whose memory passed the bound, and keeps one under it", async () => {
    const p = recycling({ aboveMb: 64 });
    const grown = await p.run({ op: "grow", mb: 80 });
    expect(p.stats().recycled).toBe(1);
    const next = await p.run({ op: "echo", value: 1 });
    expect(next.threadId).not.toBe(grown.threadId);
    expect(p.stats().workerMemoryMb).toBeLessThan(64);

    const q = recycling({ aboveMb: 256 });
    const small = await q.run({ op: "grow", mb: 16 });
    expect((await q.run({ op: "echo", value: 1 })).threadId).toBe(small.threadId);
    expect(q.stats().recycled).toBe(0);
    expect(q.stats().workerMemoryMb).toBeGreaterThanOrEqual(16);
  });

  it("replaces a worker after its task budget", async () => {
    const p = recycling({ afterTasks: 3 });
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push((await p.run({ op: "echo", value: i })).threadId);
    expect(new Set(ids.slice(0, 3)).size).toBe(1);
    expect(ids[3]).not.toBe(ids[0]);
    expect(p.stats()).toMatchObject({ recycled: 1, workers: 1 });
  });

  it("with a warm-up task, a worker due for recycling serves until its replacement has run it, then leaves", async () => {
    // The warm-up takes 300 ms (a model loading); tasks sent meanwhile go to the old worker, not to a queue.
    const p = new WorkerPool<FixtureTask, any>({ script, size: 1, name: "fixture", recycle: { afterTasks: 2 }, warmUp: { op: "sleep", ms: 300 } });
    pools.push(p);
    const first = (await p.run({ op: "echo", value: 1 })).threadId;
    expect((await p.run({ op: "echo", value: 2 })).threadId).toBe(first); // its second task: due now
    expect(p.stats()).toMatchObject({ workers: 2, recycled: 0 });
    const t0 = performance.now();
    const during = await p.run({ op: "echo", value: 3 });
    expect(during.threadId).toBe(first);
    expect(performance.now() - t0).toBeLessThan(250);
    // Once warm (its thread's start-up included), the replacement takes over and the old worker is gone.
    await vi.waitFor(() => expect(p.stats()).toMatchObject({ workers: 1, recycled: 1 }), { timeout: 10_000, interval: 20 });
    const after = await p.run({ op: "echo", value: 4 });
    expect(after.threadId).not.toBe(first);
    expect(p.threads).toHaveLength(1);
  });

  it("with a warm-up task, a busy old worker leaves after its task; a crashing warm-up falls back to a fresh start", async () => {
    const p = new WorkerPool<FixtureTask, any>({ script, size: 1, name: "fixture", recycle: { afterTasks: 1 }, warmUp: { op: "sleep", ms: 100 } });
    pools.push(p);
    const old = (await p.run({ op: "echo", value: 1 })).threadId;
    const long = await p.run({ op: "sleep", ms: 2000 }); // still the old worker, busy while the replacement warms up
    expect(long.threadId).toBe(old);
    await vi.waitFor(() => expect(p.stats()).toMatchObject({ workers: 1, recycled: 1 }), { timeout: 10_000, interval: 20 });
    expect((await p.run({ op: "echo", value: 2 })).threadId).not.toBe(old);

    const q = new WorkerPool<FixtureTask, any>({ script, size: 1, name: "fixture", recycle: { afterTasks: 1 }, warmUp: { op: "crash" } });
    pools.push(q);
    const before = (await q.run({ op: "echo", value: 1 })).threadId;
    await vi.waitFor(() => expect(q.stats()).toMatchObject({ recycled: 1, crashes: 1 }), { timeout: 10_000, interval: 20 });
    const next = await q.run({ op: "echo", value: 2 });
    expect(next.threadId).not.toBe(before);
  });

  it("is configured from the environment, 0 turning a bound off, nonsense refused", () => {
    expect(recycleFromEnv({})).toEqual({ afterTasks: 10_000, aboveMb: 256 });
    expect(recycleFromEnv({ ATRIUM_WORKER_RECYCLE_TASKS: "0", ATRIUM_WORKER_RECYCLE_MB: "128" })).toEqual({ afterTasks: undefined, aboveMb: 128 });
    expect(() => recycleFromEnv({ ATRIUM_WORKER_RECYCLE_MB: "lots" })).toThrow(/ATRIUM_WORKER_RECYCLE_MB/);
  });

  it.runIf(process.platform === "linux")("lowers its workers' priority by `nice`, each thread's own, and not the process's", async () => {
    const base = getPriority(0);
    const niced = pool(2, undefined, 7);
    const plain = pool(1);
    const [a, b] = await Promise.all([niced.run({ op: "nice" }), niced.run({ op: "nice" })]);
    expect(a.threadId).not.toBe(b.threadId);
    for (const r of [a, b]) expect(r).toMatchObject({ stat: Math.min(19, base + 7), uv: Math.min(19, base + 7) });
    expect(await plain.run({ op: "nice" })).toMatchObject({ stat: base, uv: base });
    expect(getPriority(0)).toBe(base);
    expect(getPriority(process.pid)).toBe(base);
    expect(() => pool(1, undefined, 20)).toThrow(/nice must be an integer from 0 to 19/);
  });
});

// The lane scheduler in front of the shared encoder (src/engines/pool/lanes.ts), driven by a fake
// runner whose units finish when the test says: interactive work ahead of bulk, turns between
// projects, the bounded queue and its wait estimate, cancellation and failures.
import { describe, expect, it } from "vitest";
import { bulkEveryFromEnv, EngineBusyError, LaneScheduler, laneLimitsFromEnv, type LaneLimits } from "../../../src/engines/pool/index.js";

type Unit = string;

/** A scheduler whose units wait until finish(name) (or fail(name)); `started` lists them in start order. */
function harness(opts: { slots?: number | Record<"interactive" | "bulk", number>; limits?: Partial<Record<"interactive" | "bulk", Partial<LaneLimits>>>; initialUnitMs?: number; bulkEvery?: number } = {}) {
  const started: Unit[] = [];
  /** The lane each unit was run for, as the scheduler told run(). */
  const lanes = new Map<Unit, string>();
  const pending = new Map<Unit, { resolve(v: string): void; reject(e: unknown): void }>();
  const limits = {
    interactive: { maxRequests: 100, maxWaitMs: 0, ...opts.limits?.interactive },
    bulk: { maxRequests: 100, maxWaitMs: 0, ...opts.limits?.bulk },
  };
  const scheduler = new LaneScheduler<Unit, string>({
    slots: opts.slots ?? 1,
    limits,
    name: "The test engine",
    initialUnitMs: opts.initialUnitMs,
    bulkEvery: opts.bulkEvery,
    run: (unit, signal, lane) =>
      new Promise<string>((resolve, reject) => {
        started.push(unit);
        lanes.set(unit, lane);
        pending.set(unit, { resolve, reject });
        signal?.addEventListener("abort", () => reject(signal.reason), { once: true });
      }),
  });
  const settle = async () => {
    for (let i = 0; i < 5; i++) await Promise.resolve();
  };
  return {
    scheduler,
    started,
    lanes,
    async finish(unit: Unit) {
      const p = pending.get(unit);
      if (!p) throw new Error(`unit ${unit} is not running (started: ${started.join(" ")})`);
      pending.delete(unit);
      p.resolve(`done ${unit}`);
      await settle();
    },
    async fail(unit: Unit, e: Error) {
      pending.get(unit)!.reject(e);
      pending.delete(unit);
      await settle();
    },
    /** Finishes whatever runs, oldest first, until nothing does. */
    async drain() {
      while (pending.size > 0) await this.finish(pending.keys().next().value!);
    },
  };
}

const units = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

describe("lane scheduler", () => {
  it("runs an interactive request ahead of a bulk one already queued: it waits for the running unit only", async () => {
    const h = harness();
    const ingestion = h.scheduler.submit(units("bulk", 20), { lane: "bulk", project: "p1" });
    expect(h.started).toEqual(["bulk0"]);
    let searchDone = false;
    const search = h.scheduler.submit(units("search", 2), { lane: "interactive", project: "p2" }).then((r) => ((searchDone = true), r));
    await h.finish("bulk0");
    await h.finish("search0");
    await h.finish("search1");
    expect(searchDone).toBe(true);
    expect(await search).toEqual(["done search0", "done search1"]);
    // The search started after one bulk unit of twenty; the ingestion goes on after it.
    expect(h.started.slice(0, 4)).toEqual(["bulk0", "search0", "search1", "bulk1"]);
    expect(h.scheduler.stats().lanes.bulk.queuedUnits).toBe(18);
    await h.drain();
    expect(await ingestion).toHaveLength(20);
  });

  it("gives bulk work one unit after `bulkEvery` interactive units in a row, so ingestion never stops", async () => {
    const h = harness({ bulkEvery: 2 });
    const ingestion = h.scheduler.submit(units("b", 5), { lane: "bulk", project: "p1" });
    const searches = h.scheduler.submit(units("i", 6), { project: "p2" });
    await h.drain();
    await Promise.all([ingestion, searches]);
    expect(h.started).toEqual(["b0", "i0", "i1", "b1", "i2", "i3", "b2", "i4", "i5", "b3", "b4"]);
  });

  it("takes turns between projects inside a lane, first come first served within a project", async () => {
    const h = harness();
    const a = h.scheduler.submit(units("a", 4), { project: "A" });
    const a2 = h.scheduler.submit(units("A", 1), { project: "A" });
    const b = h.scheduler.submit(units("b", 2), { project: "B" });
    const c = h.scheduler.submit(units("c", 2), { project: "C" });
    await h.drain();
    await Promise.all([a, a2, b, c]);
    expect(h.started).toEqual(["a0", "a1", "b0", "c0", "a2", "b1", "c1", "a3", "A0"]);
  });

  it("keeps `slots` units running at once, and an interactive unit takes the first free slot", async () => {
    const h = harness({ slots: 2 });
    void h.scheduler.submit(units("bulk", 6), { lane: "bulk" });
    expect(h.started).toEqual(["bulk0", "bulk1"]);
    const moderation = h.scheduler.submit(["mod0"], { lane: "interactive", project: "p" });
    await h.finish("bulk1");
    expect(h.started).toEqual(["bulk0", "bulk1", "mod0"]);
    await h.finish("mod0");
    expect(await moderation).toEqual(["done mod0"]);
    await h.drain();
  });

  it("refuses a request at once when its lane holds maxRequests: EngineBusyError with a retry-after", async () => {
    const h = harness({ limits: { interactive: { maxRequests: 2 } } });
    const first = h.scheduler.submit(["x0"], { project: "A" });
    const second = h.scheduler.submit(["y0"], { project: "B" });
    const third = h.scheduler.submit(["z0"], { project: "C" });
    await expect(third).rejects.toBeInstanceOf(EngineBusyError);
    const e = (await third.catch((x: unknown) => x)) as EngineBusyError;
    expect(e.lane).toBe("interactive");
    expect(e.retryAfterMs).toBeGreaterThanOrEqual(1000);
    expect(e.message).toMatch(/2 interactive requests/);
    // The bulk lane has its own bound.
    const bulk = h.scheduler.submit(["w0"], { lane: "bulk" });
    await h.drain();
    await expect(Promise.all([first, second, bulk])).resolves.toHaveLength(3);
    expect(h.started).not.toContain("z0");
  });

  it("refuses a request whose first unit would start later than maxWaitMs; other projects still get in", async () => {
    const h = harness({ limits: { interactive: { maxWaitMs: 1000 } }, initialUnitMs: 200 });
    const big = h.scheduler.submit(units("big", 10), { project: "A" });
    // Project A's next request waits behind its own 9 queued units: ~1.9 s.
    expect(h.scheduler.unitsAhead("interactive", "A")).toBe(9);
    const again = h.scheduler.submit(["more0"], { project: "A" });
    const refused = (await again.catch((x: unknown) => x)) as EngineBusyError;
    expect(refused).toBeInstanceOf(EngineBusyError);
    expect(refused.retryAfterMs).toBeGreaterThan(1000);
    // Project B's request is next in turn: one unit of A at most before it.
    expect(h.scheduler.unitsAhead("interactive", "B")).toBe(1);
    const other = h.scheduler.submit(["b0"], { project: "B" });
    await h.finish("big0");
    await h.finish("big1");
    expect(h.started.slice(0, 3)).toEqual(["big0", "big1", "b0"]);
    await h.drain();
    await Promise.all([big, other]);
  });

  it("counts the interactive lane's queue ahead of a bulk request", async () => {
    const h = harness();
    void h.scheduler.submit(units("i", 5), { project: "A" });
    expect(h.scheduler.unitsAhead("bulk", "B")).toBe(4);
    expect(h.scheduler.estimatedWaitMs("bulk", "B")).toBeGreaterThan(0);
    await h.drain();
  });

  it("drops a request's queued units when its caller gives up, and its running unit is told to stop", async () => {
    const h = harness();
    const stop = new AbortController();
    const gone = h.scheduler.submit(units("gone", 5), { project: "A", signal: stop.signal });
    const stays = h.scheduler.submit(units("stays", 2), { project: "B" });
    stop.abort(new Error("client went away"));
    await expect(gone).rejects.toThrow("client went away");
    await h.drain();
    expect(await stays).toHaveLength(2);
    expect(h.started).toEqual(["gone0", "stays0", "stays1"]);
    expect(h.scheduler.stats().lanes.interactive).toEqual({ requests: 0, queuedUnits: 0, projects: 0, unitsDone: 2 });
  });

  it("fails only the request whose unit failed; the others carry on", async () => {
    const h = harness();
    const bad = h.scheduler.submit(units("bad", 3), { project: "A" });
    const good = h.scheduler.submit(units("good", 2), { project: "B" });
    await h.fail("bad0", new Error("worker crashed"));
    await expect(bad).rejects.toThrow("worker crashed");
    await h.drain();
    expect(await good).toHaveLength(2);
    expect(h.started).toEqual(["bad0", "good0", "good1"]);
  });

  it("reads its bounds from the environment and refuses bad values", () => {
    expect(bulkEveryFromEnv({})).toBe(8);
    expect(bulkEveryFromEnv({ ATRIUM_ENCODER_BULK_EVERY: "0" })).toBe(0);
    expect(() => bulkEveryFromEnv({ ATRIUM_ENCODER_BULK_EVERY: "-1" })).toThrow(/ATRIUM_ENCODER_BULK_EVERY/);
    expect(laneLimitsFromEnv({})).toEqual({ interactive: { maxRequests: 256, maxWaitMs: 5000 }, bulk: { maxRequests: 1024, maxWaitMs: 0 } });
    expect(laneLimitsFromEnv({ ATRIUM_ENCODER_INTERACTIVE_MAX_REQUESTS: "8", ATRIUM_ENCODER_BULK_MAX_WAIT_MS: "60000" })).toEqual({
      interactive: { maxRequests: 8, maxWaitMs: 5000 },
      bulk: { maxRequests: 1024, maxWaitMs: 60000 },
    });
    expect(() => laneLimitsFromEnv({ ATRIUM_ENCODER_INTERACTIVE_MAX_REQUESTS: "0" })).toThrow(/ATRIUM_ENCODER_INTERACTIVE_MAX_REQUESTS/);
    expect(() => laneLimitsFromEnv({ ATRIUM_ENCODER_INTERACTIVE_MAX_WAIT_MS: "soon" })).toThrow(/ATRIUM_ENCODER_INTERACTIVE_MAX_WAIT_MS/);
  });

  describe("lanes with workers of their own", () => {
    it("runs interactive and bulk units at once, each in its own slots, telling run() the lane", async () => {
      const h = harness({ slots: { interactive: 1, bulk: 1 }, bulkEvery: 2 });
      const ingestion = h.scheduler.submit(units("b", 3), { lane: "bulk", project: "p1" });
      const searches = h.scheduler.submit(units("i", 3), { project: "p2" });
      // Neither waits for the other: one unit of each runs.
      expect(h.started).toEqual(["b0", "i0"]);
      expect(h.scheduler.stats().running).toBe(2);
      await h.finish("i0");
      await h.finish("i1");
      // A free interactive slot never takes bulk work, and bulkEvery does not apply.
      expect(h.started).toEqual(["b0", "i0", "i1", "i2"]);
      await h.finish("i2");
      expect(await searches).toEqual(["done i0", "done i1", "done i2"]);
      expect(h.started).toEqual(["b0", "i0", "i1", "i2"]);
      await h.drain();
      expect(await ingestion).toHaveLength(3);
      expect([...h.lanes]).toEqual([
        ["b0", "bulk"],
        ["i0", "interactive"],
        ["i1", "interactive"],
        ["i2", "interactive"],
        ["b1", "bulk"],
        ["b2", "bulk"],
      ]);
    });

    it("estimates a lane's wait from its own queue and slots only", async () => {
      const h = harness({ slots: { interactive: 1, bulk: 2 }, initialUnitMs: 100 });
      void h.scheduler.submit(units("b", 10), { lane: "bulk", project: "A" });
      expect(h.scheduler.unitsAhead("interactive", "B")).toBe(0);
      expect(h.scheduler.estimatedWaitMs("interactive", "B")).toBe(0);
      // Two bulk units run, eight queued: a new project waits for one of them, then its turn.
      expect(h.scheduler.unitsAhead("bulk", "B")).toBe(1);
      expect(h.scheduler.estimatedWaitMs("bulk", "B")).toBe(100);
      void h.scheduler.submit(units("i", 3), { project: "A" });
      expect(h.scheduler.unitsAhead("interactive", "B")).toBe(1);
      expect(h.scheduler.estimatedWaitMs("interactive", "B")).toBe(150);
      await h.drain();
    });

    it("refuses a slot count that is not a positive integer", () => {
      expect(() => harness({ slots: { interactive: 1, bulk: 0 } })).toThrow(/slots must be positive integers/);
      expect(() => harness({ slots: 0 })).toThrow(/slots must be positive integers/);
    });
  });
});

// The local sentence encoder under shared load (src/engines/embeddings/provider.ts, units.ts, with
// src/engines/pool/lanes.ts): on shared workers, a query embedded while a large ingestion batch
// runs starts after at most the unit already running; with the bulk lane's own niced worker (the
// default), it runs beside the batch on a worker of its own; a request larger than the time limit
// is served, since the limit is per unit; a long input cut across units gives the vector it gives alone.
import { readdirSync, readFileSync } from "node:fs";
import { getPriority } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bulkNiceFromEnv, bulkWorkersFromEnv, LOCAL_EMBEDDING_MODEL, LocalSentenceEncoder } from "../../../src/engines/embeddings/index.js";
import { cutIntoUnits, UNIT_MAX_WINDOWS } from "../../../src/engines/embeddings/units.js";

const model = LOCAL_EMBEDDING_MODEL;
const TIMEOUT_MS = 4000;
const LIMITS = { interactive: { maxRequests: 64, maxWaitMs: 0 }, bulk: { maxRequests: 64, maxWaitMs: 0 } };

/** Prose of about `chars` characters, different for each `seed`. */
function prose(seed: number, chars: number): string {
  const words = ["river", "library", "engine", "harvest", "orbit", "signal", "garden", "ledger", "canyon", "violin", "market", "glacier"];
  let out = "";
  for (let i = 0; out.length < chars; i++) out += `The ${words[(seed + i) % words.length]} near ${words[(seed * 7 + i * 3) % words.length]} number ${seed}-${i} was quiet. `;
  return out.slice(0, chars);
}

const dot = (a: Float32Array, b: Float32Array) => a.reduce((s, x, i) => s + x * b[i]!, 0);

let encoder: LocalSentenceEncoder;

beforeAll(async () => {
  // The limit is per unit: 4 s is several times a unit's time even with four test files sharing
  // two cores (a unit of 16 windows has been seen to take 1.5 s then), and far less than a large request's.
  encoder = new LocalSentenceEncoder({ workers: 1, bulkWorkers: 0, timeoutMs: TIMEOUT_MS, unitChars: 2000, limits: LIMITS });
  // The first unit loads the model in the worker, which may take longer than the limit on a busy
  // machine; the model stays loaded even if that unit is cut short.
  for (let i = 0; i < 3; i++) if (await encoder.embed(["warm up"], { model }).then(() => true, () => false)) break;
});
afterAll(async () => encoder?.close());

describe("local sentence encoder: lanes and units", () => {
  it("cuts inputs into units of at most unitChars and UNIT_MAX_WINDOWS windows, a long input over several", async () => {
    const units = await cutIntoUnits([prose(1, 5000), "short", ...Array.from({ length: 40 }, (_, i) => `sentence ${i}`)], 2000);
    for (const u of units) {
      expect(u.texts.length).toBeLessThanOrEqual(UNIT_MAX_WINDOWS);
      if (u.texts.length > 1) expect(u.texts.reduce((n, t) => n + t.length, 0)).toBeLessThanOrEqual(2000);
    }
    const windowsOfFirst = units.flatMap((u) => u.owners.filter((o) => o === 0));
    expect(windowsOfFirst.length).toBeGreaterThanOrEqual(5);
    expect(new Set(units.flatMap((u, k) => (u.owners.includes(0) ? [k] : []))).size).toBeGreaterThan(1);
  });

  it("on shared workers, a query embedded during a large ingestion batch starts after the unit already running, not after the batch", async () => {
    const stop = new AbortController();
    let ingestionDone = false;
    // Two stores ingesting at once, as the ingestion jobs do.
    const ingestion = Promise.all(
      ["proj_a", "proj_b"].map((project, k) =>
        encoder.embed(Array.from({ length: 20 }, (_, i) => prose(k * 100 + i, 1800)), { model, lane: "bulk", project, signal: stop.signal }),
      ),
    ).then(() => (ingestionDone = true), () => undefined);
    while (encoder.scheduler.stats().lanes.bulk.requests < 2 || encoder.scheduler.stats().running === 0) await new Promise((r) => setImmediate(r));
    const before = encoder.scheduler.stats().lanes.bulk.queuedUnits;
    expect(before).toBeGreaterThan(20);
    const query = await encoder.embed(["where is the quiet library?"], { model, lane: "interactive", project: "proj_search" });
    const after = encoder.scheduler.stats().lanes.bulk.queuedUnits;
    expect(query.vectors).toHaveLength(1);
    expect(ingestionDone).toBe(false);
    // One worker: the running bulk unit finishes, then the query runs; in arrival order it would
    // wait for every queued unit. (A busy machine may let a unit or two start before the query is
    // cut into its unit, so the bound is half the queue, not exactly one.)
    expect(before - after).toBeLessThan(before / 2);
    stop.abort(new Error("test over"));
    await ingestion;
  });

  it("spreads a small request over `spread` units of about equal size, a larger one by maxChars as before", async () => {
    const eight = Array.from({ length: 8 }, (_, i) => `sentence number ${i} about the quiet library`);
    expect(await cutIntoUnits(eight, 1000)).toHaveLength(1);
    const two = await cutIntoUnits(eight, 1000, 2);
    expect(two.map((u) => u.texts.length)).toEqual([4, 4]);
    expect(two.flatMap((u) => u.owners).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await cutIntoUnits(["one"], 1000, 2)).toHaveLength(1);
    const big = await cutIntoUnits([prose(9, 9000)], 2000, 2);
    expect(big.length).toBeGreaterThanOrEqual(5);
  });

  it("serves a request that takes longer than the time limit in all: the limit is per unit", async () => {
    const inputs = Array.from({ length: 800 }, (_, i) => `Note ${i}: the ${["red", "green", "blue", "grey"][i % 4]} door opens at ${i % 24} o'clock.`);
    // Dozens of units, each far below the limit; together (~130 ms a unit on an idle machine) well above it.
    expect((await cutIntoUnits(inputs, 2000)).length).toBeGreaterThanOrEqual(40);
    const started = performance.now();
    const res = await encoder.embed(inputs, { model });
    const ms = performance.now() - started;
    expect(res.vectors).toHaveLength(800);
    for (const v of res.vectors as Float32Array[]) expect(Math.abs(dot(v, v) - 1)).toBeLessThan(1e-4);
    console.log(`[lanes] 800 inputs in ${Math.round(ms)} ms with a ${TIMEOUT_MS} ms limit per unit`);
  }, 180_000);

  it("a long input's windows spread over units give the vector it gets when embedded with others", async () => {
    const long = prose(3, 6000);
    const alone = (await encoder.embed([long], { model, dimensions: 128 })).vectors[0] as Float32Array;
    const mixed = (await encoder.embed(["a", prose(4, 3000), long, "b"], { model, dimensions: 128 })).vectors[2] as Float32Array;
    expect(alone).toHaveLength(128);
    expect(dot(alone, mixed)).toBeGreaterThan(1 - 1e-5);
  });
});

/** Nice values of this process's threads, from /proc (each thread's own on Linux). */
function threadNices(): number[] {
  return readdirSync("/proc/self/task").map((tid) => Number(readFileSync(`/proc/self/task/${tid}/stat`, "utf8").split(") ")[1]!.split(" ")[16]));
}

describe("local sentence encoder: the bulk lane's own worker (the default)", () => {
  it("is on by default, niced by 10; the environment sets both and nonsense is refused", () => {
    expect(bulkWorkersFromEnv({})).toBe(1);
    expect(bulkWorkersFromEnv({ ATRIUM_EMBED_BULK_WORKERS: "0" })).toBe(0);
    expect(() => bulkWorkersFromEnv({ ATRIUM_EMBED_BULK_WORKERS: "-1" })).toThrow(/ATRIUM_EMBED_BULK_WORKERS must be an integer from 0 to 64/);
    expect(bulkNiceFromEnv({})).toBe(10);
    expect(bulkNiceFromEnv({ ATRIUM_EMBED_BULK_NICE: "0" })).toBe(0);
    expect(() => bulkNiceFromEnv({ ATRIUM_EMBED_BULK_NICE: "20" })).toThrow(/ATRIUM_EMBED_BULK_NICE must be an integer from 0 to 19/);
    expect(() => new LocalSentenceEncoder({ bulkNice: 25 })).toThrow(/nice must be an integer from 0 to 19/);
  });

  it.runIf(process.platform === "linux")("runs ingestion on its own lower-priority thread while a query runs on the interactive one, with the same vectors", async () => {
    const own = new LocalSentenceEncoder({ workers: 1, unitChars: 2000, limits: LIMITS });
    try {
      expect(own.bulkPool?.size).toBe(1);
      const stop = new AbortController();
      let ingestionDone = false;
      const texts = Array.from({ length: 30 }, (_, i) => prose(500 + i, 1800));
      const ingestion = own.embed(texts, { model, lane: "bulk", project: "proj_a", signal: stop.signal }).then(
        (r) => ((ingestionDone = true), r),
        () => undefined,
      );
      while (own.bulkPool!.stats().busy === 0) await new Promise((r) => setImmediate(r));
      expect(own.pool.stats().workers).toBe(0);
      // The new thread lowers its own priority as it starts; no other thread of the process is niced.
      const base = getPriority(0);
      const niced = () => threadNices().filter((n) => n !== base);
      for (let i = 0; i < 500 && niced().length === 0; i++) await new Promise((r) => setTimeout(r, 10));
      expect(niced()).toEqual([Math.min(19, base + 10)]);
      const query = await own.embed(["where is the quiet library?"], { model, project: "proj_search" });
      expect(query.vectors).toHaveLength(1);
      // The query had a worker of its own: the batch is still running, in its own pool only.
      expect(ingestionDone).toBe(false);
      expect(own.pool.stats().workers).toBe(1);
      expect(own.bulkPool!.stats().workers).toBe(1);
      expect(own.scheduler.stats().lanes.bulk.queuedUnits).toBeGreaterThan(0);
      // Either thread gives the same vector for the same text.
      const shared = (await encoder.embed([texts[0]!], { model })).vectors[0] as Float32Array;
      stop.abort(new Error("test over"));
      await ingestion;
      const bulk = (await own.embed([texts[0]!], { model, lane: "bulk" })).vectors[0] as Float32Array;
      expect(dot(shared, bulk)).toBeGreaterThan(1 - 1e-5);
    } finally {
      await own.close();
    }
  }, 120_000);

  it("shares one request between the request workers, with the vectors it gets on one", async () => {
    const two = new LocalSentenceEncoder({ workers: 2, bulkWorkers: 0 });
    try {
      const inputs = Array.from({ length: 8 }, (_, i) => `sentence number ${i} about the quiet library and its garden`);
      const res = await two.embed(inputs, { model, project: "p" });
      // Both workers started for it: its two units ran at once.
      expect(two.pool.stats().workers).toBe(2);
      expect(two.scheduler.stats().lanes.interactive.unitsDone).toBe(2);
      const alone = await encoder.embed(inputs, { model });
      res.vectors.forEach((v, i) => expect(dot(v as Float32Array, alone.vectors[i] as Float32Array)).toBeGreaterThan(1 - 1e-5));
    } finally {
      await two.close();
    }
  }, 120_000);
});

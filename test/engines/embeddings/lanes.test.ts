// The local sentence encoder under shared load (src/engines/embeddings/provider.ts, units.ts, with
// src/engines/pool/lanes.ts): a query embedded while a large ingestion batch runs starts after at
// most the unit already running; a request larger than the time limit is served, since the limit
// is per unit; a long input cut across units gives the vector it gives alone.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LOCAL_EMBEDDING_MODEL, LocalSentenceEncoder } from "../../../src/engines/embeddings/index.js";
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
  encoder = new LocalSentenceEncoder({ workers: 1, timeoutMs: TIMEOUT_MS, unitChars: 2000, limits: LIMITS });
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

  it("a query embedded during a large ingestion batch starts after the unit already running, not after the batch", async () => {
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

/**
 * The dense engine's own parts: the shared vector slab and its WebAssembly dot product
 * (src/engines/search/vector-slab.ts), the HNSW graph over it (hnsw.ts), the graph file
 * (hnsw-files.ts), and the dense store holding every vector once (dense.ts).
 *
 * Vectors are synthetic and clustered (a few hundred topic centres plus noise, normalised), the
 * shape of real embeddings; recall is measured against the exact scan on the same vectors.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, describe, expect, it } from "vitest";
import { DenseStore, type DenseOptions } from "../../../src/engines/search/dense.js";
import { readGraphFile, sweepGraphFiles, writeGraphFile } from "../../../src/engines/search/hnsw-files.js";
import { HnswGraph } from "../../../src/engines/search/hnsw.js";
import { dotAt } from "../../../src/engines/search/vector-math.js";
import { VectorSlab } from "../../../src/engines/search/vector-slab.js";
import { mulberry32 } from "../../shared/search-fixtures.js";

const tmpRoot = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-hnsw-"));
afterAll(() => fs.rmSync(tmpRoot, { recursive: true, force: true }));

/** `n` normalised vectors around `topics` centres, and a generator of queries like them. */
function clustered(n: number, dim: number, seed = 1, topics = 200) {
  const rnd = mulberry32(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
  const centres = Array.from({ length: topics }, () => Float32Array.from({ length: dim }, gauss));
  const one = () => {
    const c = centres[Math.floor(rnd() * topics)]!;
    const v = Float32Array.from(c, (x) => x + 0.8 * gauss());
    const norm = Math.hypot(...v);
    return v.map((x) => x / norm);
  };
  return { vectors: Array.from({ length: n }, one), query: one };
}

function exactTop(vectors: Float32Array[], q: Float32Array, k: number, keep: (i: number) => boolean = () => true): number[] {
  return vectors
    .map((v, i) => [dotAt(q, 0, v, 0, v.length), i] as const)
    .filter(([, i]) => keep(i))
    .sort((a, b) => b[0] - a[0])
    .slice(0, k)
    .map(([, i]) => i);
}

function graphOver(vectors: Float32Array[], m = 16, efConstruction = 100) {
  const dim = vectors[0]!.length;
  const slab = VectorSlab.create(dim, vectors.length);
  vectors.forEach((v, i) => slab.vectors.set(v, i * dim));
  const graph = new HnswGraph(slab, { m, efConstruction });
  vectors.forEach((_, i) => graph.insert(i, 1000 + i)); // labels ≠ slots
  return { slab, graph };
}

describe("VectorSlab: a shared WebAssembly memory and its SIMD dot product", () => {
  it("computes the dot product the JavaScript loop does, for widths that are and are not multiples of 8", () => {
    const rnd = mulberry32(3);
    for (const dim of [1, 3, 7, 8, 9, 16, 100, 512, 1536]) {
      const slab = VectorSlab.create(dim, 4);
      for (let i = 0; i < 4 * dim; i++) slab.vectors[i] = rnd() * 2 - 1;
      for (const [a, b] of [[0, 1], [2, 3], [1, 1]] as const) {
        const js = dotAt(slab.vectors, a * dim, slab.vectors, b * dim, dim);
        // f32 sums against the loop's f64: equal to a few parts in a million.
        expect(Math.abs(slab.dot(slab.address(a), slab.address(b), dim) - js)).toBeLessThanOrEqual(1e-5 * Math.max(1, Math.abs(js)));
      }
    }
  });

  it("grows in place: the vectors already there stay, at the same addresses", () => {
    const slab = VectorSlab.create(64, 10);
    slab.vectors.fill(0.5, 0, 640);
    const before = slab.capacity;
    slab.reserve(100_000);
    expect(slab.capacity).toBeGreaterThanOrEqual(100_000);
    expect(before).toBeLessThan(100_000);
    expect(slab.vectors[639]).toBe(0.5);
    expect(slab.dot(slab.address(0), slab.address(9), 64)).toBeCloseTo(64 * 0.25, 5);
    expect(() => VectorSlab.create(4096, 300_000)).toThrow(RangeError); // 4.9 GB: beyond 32-bit addresses
  });

  it("is the same memory in a worker thread: what the worker writes, this thread reads", async () => {
    const slab = VectorSlab.create(8, 4);
    const worker = new Worker(
      `const { parentPort, workerData } = require("node:worker_threads");
       const v = new Float32Array(workerData.memory.buffer, workerData.at, 8);
       v.fill(2);
       parentPort.postMessage("done");`,
      { eval: true, workerData: { memory: slab.handle.memory, at: slab.address(3) } },
    );
    await new Promise((resolve, reject) => {
      worker.once("message", resolve);
      worker.once("error", reject);
    });
    await worker.terminate();
    expect([...slab.vectors.subarray(24, 32)]).toEqual(new Array(8).fill(2));
  });
});

describe("HnswGraph over the slab", () => {
  const { vectors, query } = clustered(3000, 64);
  const { slab, graph } = graphOver(vectors);

  it("finds the exact top 10 for ≥ 95 % of the ids, and holds links only (no copy of the vectors)", () => {
    let found = 0;
    for (let t = 0; t < 100; t++) {
      const q = query();
      const truth = new Set(exactTop(vectors, q, 10));
      const { nodes, distances } = graph.search(q, 10, 64);
      expect(nodes).toHaveLength(10);
      for (let i = 1; i < distances.length; i++) expect(distances[i]).toBeGreaterThanOrEqual(distances[i - 1]!);
      found += nodes.filter((n) => truth.has(n)).length;
    }
    expect(found / 1000).toBeGreaterThanOrEqual(0.95);
    expect(graph.labels[5]).toBe(1005);
    expect(graph.bytes).toBeLessThan(vectors.length * 64 * 4); // links, slots and labels: less than the vectors
  });

  it("admits only what the filter accepts, still walking through the rest", () => {
    const even = (node: number) => node % 2 === 0;
    let found = 0;
    for (let t = 0; t < 50; t++) {
      const q = query();
      const truth = new Set(exactTop(vectors, q, 10, even));
      const { nodes } = graph.search(q, 10, 64, even);
      expect(nodes).toHaveLength(10);
      expect(nodes.every(even)).toBe(true);
      found += nodes.filter((n) => truth.has(n)).length;
    }
    expect(found / 500).toBeGreaterThanOrEqual(0.95);
  });

  it("steps over nodes whose vector is gone", () => {
    const q = query();
    const best = graph.search(q, 5, 64).nodes;
    const parts = graph.toParts();
    const copy = HnswGraph.fromParts(slab, { m: 16, efConstruction: 100 }, parts);
    for (let node = 0; node < parts.count; node++) copy.nodeSlot[node] = node === best[0] && node !== parts.entry ? -1 : node;
    const again = copy.search(q, 5, 64).nodes;
    expect(again).not.toContain(best[0]);
    expect(again.slice(0, 3)).toEqual(best.filter((n) => n !== best[0]).slice(0, 3));
  });

  it("builds the same graph from the same inserts (a seeded level generator)", () => {
    const again = graphOver(vectors.slice(0, 500)).graph.toParts();
    const first = graphOver(vectors.slice(0, 500)).graph.toParts();
    expect(Buffer.from(again.links0.buffer)).toEqual(Buffer.from(first.links0.buffer));
    expect([...again.levels]).toEqual([...first.levels]);
  });
});

describe("the graph file", () => {
  const { vectors, query } = clustered(600, 32, 5);
  const { slab, graph } = graphOver(vectors, 8, 64);
  const file = path.join(tmpRoot, "7.graph");

  it("reads back what was written: the same answers from the reloaded graph", async () => {
    writeGraphFile(file, graph.toParts());
    const parts = await readGraphFile(file);
    expect(parts).toMatchObject({ dim: 32, m: 8, count: 600 });
    const loaded = HnswGraph.fromParts(slab, { m: 8, efConstruction: 64 }, parts);
    for (let node = 0; node < parts.count; node++) loaded.nodeSlot[node] = node;
    for (let t = 0; t < 20; t++) {
      const q = query();
      expect(loaded.search(q, 10, 32)).toEqual(graph.search(q, 10, 32));
    }
  });

  it("refuses a torn file, a foreign one and one whose links point outside the graph", async () => {
    const good = fs.readFileSync(file);
    const torn = path.join(tmpRoot, "torn.graph");
    fs.writeFileSync(torn, good.subarray(0, good.length - 100));
    await expect(readGraphFile(torn)).rejects.toThrow(/bytes where the header says/);
    fs.writeFileSync(torn, Buffer.concat([Buffer.from("HNSWLIB!"), good.subarray(8)]));
    await expect(readGraphFile(torn)).rejects.toThrow(/not a graph file/);
    const bent = Buffer.from(good);
    const links0At = 40 + 600 * 8 + 600; // header, labels, levels (600: already a multiple of 4)
    bent.writeInt32LE(1, links0At); // node 0: one link…
    bent.writeInt32LE(600, links0At + 4); // …to a node that does not exist
    fs.writeFileSync(torn, bent);
    await expect(readGraphFile(torn)).rejects.toThrow(/link out of range/);
  });

  it("the start-up sweep keeps live stores' graphs, removes dropped stores', stale build files and hnswlib's files", () => {
    const dir = path.join(tmpRoot, "sweep");
    fs.mkdirSync(dir);
    for (const name of ["1.graph", "2.graph", "3.hnsw", "1.graph.tmp-1-a", "1.graph.tmp-1-b", "notes.txt"]) fs.writeFileSync(path.join(dir, name), "x");
    const old = (Date.now() - 2 * 3600_000) / 1000;
    fs.utimesSync(path.join(dir, "1.graph.tmp-1-a"), old, old);
    sweepGraphFiles(dir, () => new Set([1, 3]));
    expect(fs.readdirSync(dir).sort()).toEqual(["1.graph", "1.graph.tmp-1-b", "notes.txt"]);
  });
});

describe("DenseStore: every vector once, graph or not", () => {
  const opts = (dir: string | null): DenseOptions => ({ annThreshold: 500, m: 16, efConstruction: 100, efSearch: 128, indexDir: dir, cacheBytes: 1 << 30 });

  it("after a build holds the vectors once plus links; removed graph nodes keep their slot until the next build, then free it", async () => {
    const dim = 256; // ~150 bytes of links and slot data per node: a small share of 1 KiB vectors
    const { vectors, query } = clustered(2000, dim, 9);
    const store = new DenseStore(1, 0, opts(path.join(tmpRoot, "dense")));
    vectors.forEach((v, i) => store.add(i + 1, `file-${i % 100}`, v));
    store.loading = false;
    store.maintain();
    await store.settle();
    expect(store.annState).toBe("ready");
    const vectorBytes = 2000 * dim * 4;
    expect(store.bytes).toBeGreaterThan(vectorBytes);
    expect(store.bytes).toBeLessThan(vectorBytes * 1.25); // a copy of the vectors would double it

    // Remove 55 files' chunks (1,100 graph nodes): tombstones, slots kept; searches never return them.
    for (let i = 0; i < 2000; i++) if (i % 100 < 55) store.remove(i + 1);
    expect(store.size).toBe(900);
    expect(store.backlog.tombstones).toBe(1100);
    expect(store.bytes).toBeGreaterThan(vectorBytes); // still held: the graph walks through them
    const live = (i: number) => i % 100 >= 55;
    for (let t = 0; t < 20; t++) {
      const q = query();
      const hits = store.search(q, 10);
      expect(hits).toHaveLength(10);
      for (const h of hits) expect(live(h.label - 1)).toBe(true);
      const truth = exactTop(vectors, q, 10, live);
      expect(hits[0]!.label - 1).toBe(truth[0]);
      expect(hits[0]!.sim).toBe(store.similarity(hits[0]!.label, q)); // rescored exactly
    }
    // Past max(1,000, a quarter of the graph) tombstones the graph is rebuilt and the dead slots freed.
    store.maintain();
    await store.settle();
    expect(store.backlog.tombstones).toBe(0);
    expect(store.bytes).toBeLessThan(900 * dim * 4 * 1.25);
    const q = query();
    expect(store.search(q, 1)[0]!.label - 1).toBe(exactTop(vectors, q, 1, live)[0]);
    store.close(true);
  });

  it("chunks added during a build are pending, then drained into the graph; removals during a build wait for it", async () => {
    const { vectors, query } = clustered(1500, 32, 11);
    const store = new DenseStore(2, 0, opts(null));
    vectors.slice(0, 1000).forEach((v, i) => store.add(i + 1, "f", v));
    store.loading = false;
    store.maintain();
    expect(store.annState).toBe("building");
    vectors.slice(1000).forEach((v, i) => store.add(1001 + i, "g", v));
    for (let label = 1; label <= 50; label++) store.remove(label); // nodes of the graph being built
    await store.settle();
    expect(store.annState).toBe("ready");
    expect(store.size).toBe(1450);
    store.maintain(); // 500 pending ≤ max(1000, …): drained, not rebuilt
    await store.settle();
    expect(store.backlog).toEqual({ pending: 0, tombstones: 50 });
    const live = (i: number) => i >= 50;
    let found = 0;
    for (let t = 0; t < 30; t++) {
      const q = query();
      const truth = new Set(exactTop(vectors, q, 10, live).map((i) => i + 1));
      const hits = store.search(q, 10);
      found += hits.filter((h) => truth.has(h.label)).length;
      for (const h of hits) expect(h.label).toBeGreaterThan(50);
    }
    expect(found / 300).toBeGreaterThanOrEqual(0.95);
    store.close();
  });
});

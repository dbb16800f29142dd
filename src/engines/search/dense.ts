/**
 * The dense retriever of one vector store: its vectors in memory, an exact scan, and past a size
 * threshold an HNSW graph (hnswlib-node, inner-product space over L2-normalised vectors).
 *
 * SQLite stays the source of truth; everything here is a cache rebuilt from its BLOBs:
 * - `vectors` holds every live vector (Float32, `dim` per slot). The exact scan reads it, and it is
 *   what fresh chunks are scored from before the graph has them. Removal swaps the last slot in.
 * - Labels are SQLite rowids of `search_chunks` (AUTOINCREMENT: never reused), so a label names
 *   one immutable chunk for ever: re-adding a chunk id is a delete plus an insert with a new rowid.
 * - The graph is built in a worker thread (building 100k vectors takes about a minute; the event
 *   loop must not stall), written to `<indexDir>/<store ord>.hnsw` and loaded from that file.
 *   Chunks added after the build are `pending`: scanned exactly at search time and drained into
 *   the graph in ≤ 8 ms slices; removals are tombstones (`markDelete`). Too many of either and the
 *   graph is rebuilt in the worker. The file is only ever written by a build, then renamed into
 *   place; at start-up it is loaded and reconciled with SQLite (tombstones for rows gone, pending
 *   for rows added), so a stale or missing file costs time, never correctness.
 */
import { createRequire } from "node:module";
import { existsSync, mkdirSync, renameSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import hnswlib from "hnswlib-node";
import type { HierarchicalNSW } from "hnswlib-node";

export interface DenseOptions {
  /** The graph serves a search once it would scan more than this many vectors exactly. */
  annThreshold: number;
  /** HNSW graph degree. */
  m: number;
  efConstruction: number;
  /** HNSW search breadth (raised to k when k is larger). */
  efSearch: number;
  /** Where built graphs are kept; null: a temporary file per build, deleted once loaded. */
  indexDir: string | null;
  /**
   * Bytes the loaded stores' vectors and graphs may take together; past it the stores searched
   * least recently are unloaded (reloaded from SQLite and the graph file on their next search).
   */
  cacheBytes: number;
}

/** A ranked candidate: rowid and cosine similarity (dot product of normalised vectors). */
export interface DenseHit {
  label: number;
  sim: number;
}

const require = createRequire(import.meta.url);
const HNSWLIB_PATH = require.resolve("hnswlib-node");
const DRAIN_SLICE_MS = 8;

/** Dot product with four accumulators (measurably faster in V8 than one). */
export function dot(q: Float32Array, m: Float32Array, off: number, dim: number): number {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  let j = 0;
  for (; j + 3 < dim; j += 4) {
    s0 += q[j]! * m[off + j]!;
    s1 += q[j + 1]! * m[off + j + 1]!;
    s2 += q[j + 2]! * m[off + j + 2]!;
    s3 += q[j + 3]! * m[off + j + 3]!;
  }
  for (; j < dim; j++) s0 += q[j]! * m[off + j]!;
  return s0 + s1 + s2 + s3;
}

/** The best k by similarity, best first (k ≤ a few hundred: insertion into a sorted array). */
class TopK {
  readonly labels: number[] = [];
  readonly sims: number[] = [];
  constructor(private readonly k: number) {}

  /** Smallest similarity that can still enter. */
  get floor(): number {
    return this.sims.length < this.k ? -Infinity : this.sims[this.k - 1]!;
  }

  push(label: number, sim: number): void {
    if (this.k <= 0 || sim <= this.floor) return;
    let i = this.sims.length;
    while (i > 0 && this.sims[i - 1]! < sim) i--;
    this.sims.splice(i, 0, sim);
    this.labels.splice(i, 0, label);
    if (this.sims.length > this.k) {
      this.sims.pop();
      this.labels.pop();
    }
  }

  hits(): DenseHit[] {
    return this.labels.map((label, i) => ({ label, sim: this.sims[i]! }));
  }
}

/** Runs one HNSW build in a worker thread; the worker writes the graph to `file`. */
function buildInWorker(
  vectors: Float32Array,
  labels: Float64Array,
  dim: number,
  opts: DenseOptions,
  file: string,
  onWorker: (w: Worker) => void,
): Promise<void> {
  // Plain CommonJS, evaluated: works the same under tsx, vitest and the compiled server.
  const source = `
    const { parentPort, workerData: w } = require("node:worker_threads");
    try {
      const { HierarchicalNSW } = require(w.modulePath);
      const vectors = new Float32Array(w.vectors);
      const index = new HierarchicalNSW("ip", w.dim);
      index.initIndex({ maxElements: Math.max(1, w.labels.length), m: w.m, efConstruction: w.efConstruction, randomSeed: 100 });
      const row = new Array(w.dim);
      for (let i = 0; i < w.labels.length; i++) {
        for (let j = 0; j < w.dim; j++) row[j] = vectors[i * w.dim + j];
        index.addPoint(row, w.labels[i]);
      }
      index.writeIndexSync(w.file);
      parentPort.postMessage({ ok: true });
    } catch (err) {
      parentPort.postMessage({ ok: false, error: String(err && err.stack || err) });
    }
  `;
  return new Promise((resolve, reject) => {
    const worker = new Worker(source, {
      eval: true,
      workerData: { modulePath: HNSWLIB_PATH, vectors: vectors.buffer, labels, dim, m: opts.m, efConstruction: opts.efConstruction, file },
      transferList: [vectors.buffer as ArrayBuffer],
    });
    onWorker(worker);
    let settled = false;
    worker.once("message", (msg: { ok: boolean; error?: string }) => {
      settled = true;
      if (msg.ok) resolve();
      else reject(new Error(`HNSW build failed: ${msg.error}`));
    });
    worker.once("error", (err) => {
      settled = true;
      reject(err);
    });
    worker.once("exit", (code) => {
      if (!settled) reject(new Error(`HNSW build worker exited with code ${code}`));
    });
  });
}

function unlinkQuietly(file: string): void {
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

export type AnnState = "none" | "building" | "ready";

export class DenseStore {
  dim = 0;
  /** Live vectors. */
  size = 0;
  /** SQLite's `search_stores.version` this cache reflects. */
  version: number;
  /** True while the initial load from SQLite is still filling the cache. */
  loading = true;

  private vectors = new Float32Array(0);
  private labels = new Float64Array(0);
  private fileOrds = new Int32Array(0);
  private readonly slotOf = new Map<number, number>();
  // Files get small integer ordinals, so a filter's allowed set is a byte per file.
  private readonly fileOrdOf = new Map<string, number>();
  private readonly fileChunks: number[] = [];

  private ann: HierarchicalNSW | null = null;
  private annEf = 0;
  private tombstones = 0;
  private pending = new Set<number>();
  private building: Promise<void> | null = null;
  private buildWorker: Worker | null = null;
  private draining = false;
  private retryBuildAt = 0;
  private closed = false;
  /** Last build failure, for diagnostics (the exact scan keeps serving). */
  lastError: Error | null = null;
  /** Searches served by the exact scan, by the graph, and graph answers that fell back to exact. */
  readonly counters = { exact: 0, ann: 0, fallback: 0 };

  constructor(
    readonly ord: number,
    version: number,
    private readonly opts: DenseOptions,
  ) {
    this.version = version;
  }

  /** Memory this cache holds: the vectors (4 bytes a dimension) and, with a graph, its copy and links. */
  get bytes(): number {
    return this.size * this.dim * 4 * (this.ann ? 2 : 1) + (this.ann ? this.size * this.opts.m * 2 * 4 : 0);
  }

  get annState(): AnnState {
    return this.building ? "building" : this.ann ? "ready" : "none";
  }

  /** Labels scanned exactly because the graph does not have them yet, and tombstones in the graph. */
  get backlog(): { pending: number; tombstones: number } {
    return { pending: this.ann ? this.pending.size : 0, tombstones: this.tombstones };
  }

  /** Resolves when no build or drain is running (tests and benchmarks). */
  async settle(): Promise<void> {
    while (!this.closed && (this.building || this.draining)) {
      if (this.building) await this.building;
      else await new Promise((r) => setTimeout(r, 5));
    }
  }

  /** Adds one vector (already normalised; a Float32Array or its little-endian bytes). Idempotent. */
  add(label: number, fileId: string, data: Float32Array | Uint8Array): void {
    if (this.slotOf.has(label)) return;
    const dim = data instanceof Float32Array ? data.length : data.byteLength / 4;
    if (this.dim === 0) this.dim = dim;
    else if (dim !== this.dim) throw new RangeError(`vector has ${dim} dimensions; the store's have ${this.dim}`);
    if (this.size === this.labels.length) this.grow();
    const slot = this.size++;
    if (data instanceof Float32Array) this.vectors.set(data, slot * dim);
    // BLOBs may sit at any byte offset: copy the bytes, never view them as floats in place.
    else new Uint8Array(this.vectors.buffer, slot * dim * 4, dim * 4).set(data);
    this.labels[slot] = label;
    let ord = this.fileOrdOf.get(fileId);
    if (ord === undefined) {
      ord = this.fileChunks.length;
      this.fileOrdOf.set(fileId, ord);
      this.fileChunks.push(0);
    }
    this.fileOrds[slot] = ord;
    this.fileChunks[ord]!++;
    this.slotOf.set(label, slot);
    if (this.ann || this.building) this.pending.add(label);
  }

  /** Removes one vector. Idempotent. */
  remove(label: number): void {
    const slot = this.slotOf.get(label);
    if (slot === undefined) return;
    this.slotOf.delete(label);
    this.fileChunks[this.fileOrds[slot]!]!--;
    const last = --this.size;
    if (slot !== last) {
      const dim = this.dim;
      this.vectors.copyWithin(slot * dim, last * dim, (last + 1) * dim);
      this.labels[slot] = this.labels[last]!;
      this.fileOrds[slot] = this.fileOrds[last]!;
      this.slotOf.set(this.labels[slot]!, slot);
    }
    if (this.pending.delete(label)) return;
    // In the graph: tombstone. (A build in flight gets its tombstones when it is swapped in.)
    if (this.ann) this.markDeleted(this.ann, label);
  }

  private grow(): void {
    const cap = Math.max(1024, this.labels.length * 2);
    const vectors = new Float32Array(cap * this.dim);
    vectors.set(this.vectors.subarray(0, this.size * this.dim));
    const labels = new Float64Array(cap);
    labels.set(this.labels.subarray(0, this.size));
    const fileOrds = new Int32Array(cap);
    fileOrds.set(this.fileOrds.subarray(0, this.size));
    this.vectors = vectors;
    this.labels = labels;
    this.fileOrds = fileOrds;
  }

  private markDeleted(ann: HierarchicalNSW, label: number): void {
    try {
      ann.markDelete(label);
      this.tombstones++;
    } catch {
      // already a tombstone (a reloaded file keeps them)
    }
  }

  /** Cosine similarity of a stored chunk to a normalised query, or undefined without a vector. */
  similarity(label: number, q: Float32Array): number | undefined {
    const slot = this.slotOf.get(label);
    return slot === undefined ? undefined : dot(q, this.vectors, slot * this.dim, this.dim);
  }

  /**
   * Which file ordinals a filter allows (one byte each) and how many live vectors they hold.
   * Files the cache has no vector of are simply absent.
   */
  allow(fileIds: Iterable<string>): { allowed: Uint8Array; count: number } {
    const allowed = new Uint8Array(this.fileChunks.length);
    let count = 0;
    for (const id of fileIds) {
      const ord = this.fileOrdOf.get(id);
      if (ord !== undefined && !allowed[ord]) {
        allowed[ord] = 1;
        count += this.fileChunks[ord]!;
      }
    }
    return { allowed, count };
  }

  /**
   * The k nearest live vectors to `q` (normalised), restricted to `allow` when given, best first.
   * Exact when at most `annThreshold` vectors are candidates or no graph is ready; otherwise the
   * graph (with the filter as its admission callback, so a filter never cuts a top-k short), plus
   * an exact scan of the pending vectors. A graph answer shorter than it must be falls back to
   * the exact scan.
   */
  search(q: Float32Array, k: number, allow?: { allowed: Uint8Array; count: number }): DenseHit[] {
    if (q.length !== this.dim) throw new RangeError(`query vector has ${q.length} dimensions; the store's have ${this.dim}`);
    const candidates = allow ? allow.count : this.size;
    if (k <= 0 || candidates === 0) return [];
    const ann = this.ann;
    if (!ann || candidates <= this.opts.annThreshold) {
      this.counters.exact++;
      return this.exact(q, k, allow?.allowed);
    }
    this.counters.ann++;

    const allowed = allow?.allowed;
    const top = new TopK(k);
    let pendingAllowed = 0;
    for (const label of this.pending) {
      const slot = this.slotOf.get(label)!;
      if (allowed && !allowed[this.fileOrds[slot]!]) continue;
      pendingAllowed++;
      top.push(label, dot(q, this.vectors, slot * this.dim, this.dim));
    }
    const want = Math.min(k, candidates - pendingAllowed);
    if (want > 0) {
      const ef = Math.max(this.opts.efSearch, want);
      if (ef !== this.annEf) {
        ann.setEf(ef);
        this.annEf = ef;
      }
      const filter = allowed
        ? (label: number) => {
            const slot = this.slotOf.get(label);
            return slot !== undefined && allowed[this.fileOrds[slot]!] === 1;
          }
        : undefined;
      const res = ann.searchKnn(Array.from(q), want, filter);
      if (res.neighbors.length < want) {
        this.counters.fallback++;
        return this.exact(q, k, allowed);
      }
      for (let i = 0; i < res.neighbors.length; i++) top.push(res.neighbors[i]!, 1 - res.distances[i]!);
    }
    return top.hits();
  }

  /** Exact scan, restricted to the allowed file ordinals when given. */
  exact(q: Float32Array, k: number, allowed?: Uint8Array): DenseHit[] {
    const top = new TopK(k);
    const { dim, vectors, labels, fileOrds } = this;
    for (let slot = 0; slot < this.size; slot++) {
      if (allowed && !allowed[fileOrds[slot]!]) continue;
      const sim = dot(q, vectors, slot * dim, dim);
      if (sim > top.floor) top.push(labels[slot]!, sim);
    }
    return top.hits();
  }

  /**
   * Keeps the graph in line with the size: build it past the threshold, drop it well below
   * (hysteresis: half the threshold), rebuild it when pending or tombstones pile up, otherwise
   * drain pending vectors into it. Called after each batch of changes.
   */
  maintain(): void {
    if (this.closed || this.loading || this.building) return;
    const { annThreshold } = this.opts;
    if (!this.ann) {
      if (this.size > annThreshold && Date.now() >= this.retryBuildAt) this.startBuild();
      return;
    }
    if (this.size <= annThreshold / 2) {
      this.ann = null;
      this.pending.clear();
      this.tombstones = 0;
      if (this.opts.indexDir) unlinkQuietly(this.indexFile());
      return;
    }
    const inGraph = this.size - this.pending.size;
    if (this.pending.size > Math.max(1000, inGraph / 4) || this.tombstones > Math.max(1000, inGraph)) {
      if (Date.now() >= this.retryBuildAt) this.startBuild();
    } else if (this.pending.size > 0) {
      this.scheduleDrain();
    }
  }

  /** Loads the graph kept by an earlier build, if any, and reconciles it. False when there is none. */
  async loadIndexFile(): Promise<boolean> {
    if (!this.opts.indexDir || this.dim === 0) return false;
    const file = this.indexFile();
    if (!existsSync(file)) return false;
    const ann = new hnswlib.HierarchicalNSW("ip", this.dim);
    try {
      await ann.readIndex(file);
      if (ann.getNumDimensions() !== this.dim) throw new Error("dimension mismatch");
    } catch {
      unlinkQuietly(file); // unreadable: rebuild
      return false;
    }
    if (this.closed) return false;
    this.swapIn(ann, ann.getIdsList());
    return true;
  }

  /** Stops background work and forgets the graph (the file stays unless `deleteFile`). */
  close(deleteFile = false): void {
    this.closed = true;
    this.ann = null;
    this.pending.clear();
    void this.buildWorker?.terminate();
    if (deleteFile && this.opts.indexDir) unlinkQuietly(this.indexFile());
  }

  private indexFile(): string {
    return join(this.opts.indexDir!, `${this.ord}.hnsw`);
  }

  private startBuild(): void {
    const n = this.size;
    const dim = this.dim;
    // A snapshot for the worker (transferred, so copied once); labels kept to diff at swap time.
    const vectors = this.vectors.slice(0, n * dim);
    const labels = this.labels.slice(0, n);
    const dir = this.opts.indexDir ?? tmpdir();
    mkdirSync(dir, { recursive: true });
    const tmp = join(dir, `${this.ord}.hnsw.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`);
    this.building = (async () => {
      try {
        await buildInWorker(vectors, labels, dim, this.opts, tmp, (w) => (this.buildWorker = w));
        if (this.closed) return;
        const ann = new hnswlib.HierarchicalNSW("ip", dim);
        await ann.readIndex(tmp);
        if (this.closed) return;
        if (this.opts.indexDir) renameSync(tmp, this.indexFile());
        this.swapIn(ann, labels);
        this.lastError = null;
      } catch (err) {
        this.lastError = err as Error;
        this.retryBuildAt = Date.now() + 60_000;
      } finally {
        unlinkQuietly(tmp);
        this.buildWorker = null;
      }
    })().finally(() => {
      this.building = null;
      this.maintain();
    });
  }

  /** Makes `ann` (holding `labels`) the graph: tombstones for what went away, pending for what came. */
  private swapIn(ann: HierarchicalNSW, labels: ArrayLike<number>): void {
    this.tombstones = 0;
    const inGraph = new Set<number>();
    for (let i = 0; i < labels.length; i++) {
      const label = labels[i]!;
      inGraph.add(label);
      if (!this.slotOf.has(label)) this.markDeleted(ann, label);
    }
    const pending = new Set<number>();
    for (let slot = 0; slot < this.size; slot++) {
      const label = this.labels[slot]!;
      if (!inGraph.has(label)) pending.add(label);
    }
    this.ann = ann;
    this.annEf = 0;
    this.pending = pending;
  }

  private scheduleDrain(): void {
    if (this.draining) return;
    this.draining = true;
    const step = () => {
      const ann = this.ann;
      if (this.closed || !ann || this.building) {
        this.draining = false;
        return;
      }
      const start = performance.now();
      const row = new Array<number>(this.dim);
      for (const label of this.pending) {
        const slot = this.slotOf.get(label)!;
        for (let j = 0, off = slot * this.dim; j < this.dim; j++) row[j] = this.vectors[off + j]!;
        if (ann.getCurrentCount() >= ann.getMaxElements()) ann.resizeIndex(Math.ceil(ann.getMaxElements() * 1.5) + 16);
        ann.addPoint(row, label);
        this.pending.delete(label);
        if (performance.now() - start > DRAIN_SLICE_MS) break;
      }
      if (this.pending.size > 0) setImmediate(step);
      else this.draining = false;
    };
    setImmediate(step);
  }
}

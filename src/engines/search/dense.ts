/**
 * The dense retriever of one vector store: its vectors in memory, an exact scan, and past a size
 * threshold an HNSW graph (hnsw.ts, inner-product space over L2-normalised vectors).
 *
 * SQLite stays the source of truth; everything here is a cache rebuilt from its BLOBs:
 * - The vectors live in one `VectorSlab` (a shared WebAssembly memory), `dim` floats per slot. The
 *   exact scan reads them, fresh chunks are scored from them before the graph has them, and the
 *   graph reads them too: it holds links and slot numbers only, so a store's vectors are in memory
 *   once, whatever the graph does.
 * - Labels are SQLite rowids of `search_chunks` (AUTOINCREMENT: never reused), so a label names
 *   one immutable chunk for ever: re-adding a chunk id is a delete plus an insert with a new rowid.
 * - A slot is stable while a graph node or a build uses it: removing such a chunk leaves its slot
 *   dead (skipped by scans, walked through by the graph: a tombstone) until the next build; any
 *   other removal moves the last slot into the hole.
 * - The graph is built in a worker thread over the same memory (building 100k vectors takes about
 *   a minute; the event loop must not stall), written to `<indexDir>/<store ord>.graph`. Chunks
 *   added after the build are `pending`: scanned exactly at search time and drained into the graph
 *   in ≤ 8 ms slices. Too many pending or dead and the graph is rebuilt in the worker. The file is
 *   only ever written by a build, then renamed into place; at start-up it is loaded and reconciled
 *   with SQLite (nodes whose chunk is gone keep no vector, rows added become pending), so a stale
 *   or missing file costs time, never correctness.
 */
import { existsSync, mkdirSync, renameSync, unlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Worker } from "node:worker_threads";
import { workerScript } from "../pool/script.js";
import { graphFileName, readGraphFile } from "./hnsw-files.js";
import { HnswGraph, type GraphParts } from "./hnsw.js";
import { dotAt } from "./vector-math.js";
import { VectorSlab, type SlabHandle } from "./vector-slab.js";

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

const DRAIN_SLICE_MS = 8;
/** Candidates the exact scan rescores beyond k (f32 ranking errors are ~1e-7; this is plenty). */
const EXACT_SLACK = 8;

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

/** What a build worker is given: the slab, the slots to insert (node i is `slots[i]`) and their labels. */
export interface GraphBuildTask {
  slab: SlabHandle;
  slots: Int32Array;
  labels: Float64Array;
  m: number;
  efConstruction: number;
  /** Where the worker writes the graph file (a temporary name, renamed by the caller). */
  file: string;
}

export type GraphBuildReply = { ok: true; parts: GraphParts } | { ok: false; error: string };

/** Runs one graph build in a worker thread; the worker writes `task.file` and sends the graph back. */
function buildInWorker(task: GraphBuildTask, onWorker: (w: Worker) => void): Promise<GraphParts> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(workerScript(import.meta.url, "hnsw-build-worker"), { workerData: task });
    onWorker(worker);
    let settled = false;
    worker.once("message", (msg: GraphBuildReply) => {
      settled = true;
      if (msg.ok) resolve(msg.parts);
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

  private slab: VectorSlab | null = null;
  /** Slots in use: the live ones and the dead ones a graph or a build still needs. */
  private used = 0;
  // Per slot: its label (NaN: dead), its file's ordinal (−1: dead), its graph node (−1: none).
  private labels = new Float64Array(0);
  private fileOrds = new Int32Array(0);
  private slotNode = new Int32Array(0);
  private readonly slotOf = new Map<number, number>();
  // Files get small integer ordinals, so a filter's allowed set is a byte per file.
  private readonly fileOrdOf = new Map<string, number>();
  private readonly fileChunks: number[] = [];

  private ann: HnswGraph | null = null;
  /** Graph nodes whose chunk is gone (their slot dead, or their vector never found). */
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

  /** Memory this cache holds: the slots in use (4 bytes a dimension) and the graph's links. */
  get bytes(): number {
    return this.used * this.dim * 4 + (this.ann ? this.ann.bytes : 0);
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
    if (this.used === this.labels.length) this.grow();
    const slab = this.slab!;
    const slot = this.used++;
    this.size++;
    if (data instanceof Float32Array) slab.vectors.set(data, slot * dim);
    // BLOBs may sit at any byte offset: copy the bytes, never view them as floats in place.
    else new Uint8Array(slab.vectors.buffer, slab.address(slot), dim * 4).set(data);
    this.labels[slot] = label;
    let ord = this.fileOrdOf.get(fileId);
    if (ord === undefined) {
      ord = this.fileChunks.length;
      this.fileOrdOf.set(fileId, ord);
      this.fileChunks.push(0);
    }
    this.fileOrds[slot] = ord;
    this.slotNode[slot] = -1;
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
    this.size--;
    this.pending.delete(label);
    this.labels[slot] = NaN;
    this.fileOrds[slot] = -1;
    if (this.slotNode[slot]! >= 0) this.tombstones++;
    // A slot a graph node or a running build reads stays until the next build.
    if (this.slotNode[slot]! < 0 && !this.building) this.release(slot);
  }

  /** Frees a dead slot no graph node needs: the last slot moves into it. */
  private release(slot: number): void {
    const last = --this.used;
    if (slot === last) return;
    const dim = this.dim;
    const vectors = this.slab!.vectors;
    vectors.copyWithin(slot * dim, last * dim, (last + 1) * dim);
    const label = this.labels[last]!;
    this.labels[slot] = label;
    this.fileOrds[slot] = this.fileOrds[last]!;
    const node = this.slotNode[last]!;
    this.slotNode[slot] = node;
    if (node >= 0) this.ann!.nodeSlot[node] = slot;
    if (!Number.isNaN(label)) this.slotOf.set(label, slot);
  }

  /** Frees every dead slot no graph node needs (after a build, or when the graph is dropped). */
  private releaseDead(): void {
    for (let slot = this.used - 1; slot >= 0; slot--) {
      if (Number.isNaN(this.labels[slot]!) && this.slotNode[slot]! < 0) this.release(slot);
    }
  }

  private grow(): void {
    const cap = Math.max(1024, Math.ceil(this.labels.length * 1.5));
    if (!this.slab) this.slab = VectorSlab.create(this.dim, cap);
    else this.slab.reserve(cap); // in place: a shared memory grows without moving
    const labels = new Float64Array(cap);
    labels.set(this.labels.subarray(0, this.used));
    const fileOrds = new Int32Array(cap);
    fileOrds.set(this.fileOrds.subarray(0, this.used));
    const slotNode = new Int32Array(cap);
    slotNode.set(this.slotNode.subarray(0, this.used));
    this.labels = labels;
    this.fileOrds = fileOrds;
    this.slotNode = slotNode;
  }

  /** Cosine similarity of a stored chunk to a normalised query, or undefined without a vector. */
  similarity(label: number, q: Float32Array): number | undefined {
    const slot = this.slotOf.get(label);
    return slot === undefined ? undefined : this.exactSimilarity(q, slot);
  }

  /** `q`'s similarity to the vector in `slot`, in double precision: the score a hit is given. */
  private exactSimilarity(q: Float32Array, slot: number): number {
    return dotAt(q, 0, this.slab!.vectors, slot * this.dim, this.dim);
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
   * graph (with the filter as its admission test, so a filter never cuts a top-k short), plus an
   * exact scan of the pending vectors. A graph answer shorter than it must be falls back to the
   * exact scan. Similarities are exact either way (the graph's hits are rescored).
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
    const { fileOrds } = this;
    const top = new TopK(k);
    let pendingAllowed = 0;
    for (const label of this.pending) {
      const slot = this.slotOf.get(label)!;
      if (allowed && !allowed[fileOrds[slot]!]) continue;
      pendingAllowed++;
      top.push(label, this.exactSimilarity(q, slot));
    }
    const want = Math.min(k, candidates - pendingAllowed);
    if (want > 0) {
      const nodeSlot = ann.nodeSlot;
      const accept = (node: number) => {
        const ord = fileOrds[nodeSlot[node]!]!;
        return ord >= 0 && (!allowed || allowed[ord] === 1);
      };
      const res = ann.search(q, want, Math.max(this.opts.efSearch, want), accept);
      if (res.nodes.length < want) {
        this.counters.fallback++;
        return this.exact(q, k, allowed);
      }
      for (const node of res.nodes) {
        const slot = nodeSlot[node]!;
        top.push(this.labels[slot]!, this.exactSimilarity(q, slot));
      }
    }
    return top.hits();
  }

  /**
   * Exact scan, restricted to the allowed file ordinals when given. The slab's f32 kernel ranks
   * every candidate (several times faster than a JavaScript loop: this runs on the event loop); the
   * best few more than k are then rescored in double precision, so scores are the exact ones and
   * a near tie at the cut is settled as a full double-precision scan would.
   */
  exact(q: Float32Array, k: number, allowed?: Uint8Array): DenseHit[] {
    const slab = this.slab;
    if (!slab || k <= 0) return [];
    const { dim, labels, fileOrds } = this;
    slab.scratch.set(q);
    const rough = new TopK(k + EXACT_SLACK);
    for (let slot = 0; slot < this.used; slot++) {
      const ord = fileOrds[slot]!;
      if (ord < 0 || (allowed && !allowed[ord])) continue;
      const sim = slab.dot(0, slab.address(slot), dim);
      if (sim > rough.floor) rough.push(slot, sim);
    }
    const top = new TopK(k);
    for (const slot of rough.labels) top.push(labels[slot]!, this.exactSimilarity(q, slot));
    return top.hits();
  }

  /**
   * Keeps the graph in line with the size: build it past the threshold, drop it well below
   * (hysteresis: half the threshold), rebuild it when pending or tombstones pile up (a quarter of
   * the graph: the dead slots a tombstone keeps are memory), otherwise drain pending vectors into
   * it. Called after each batch of changes.
   */
  maintain(): void {
    if (this.closed || this.loading || this.building) return;
    const { annThreshold } = this.opts;
    if (!this.ann) {
      if (this.size > annThreshold && Date.now() >= this.retryBuildAt) this.startBuild();
      return;
    }
    if (this.size <= annThreshold / 2) {
      this.dropGraph();
      if (this.opts.indexDir) unlinkQuietly(this.indexFile());
      return;
    }
    const inGraph = this.ann.count;
    if (this.pending.size > Math.max(1000, inGraph / 4) || this.tombstones > Math.max(1000, inGraph / 4)) {
      if (Date.now() >= this.retryBuildAt) this.startBuild();
    } else if (this.pending.size > 0) {
      this.scheduleDrain();
    }
  }

  private dropGraph(): void {
    this.ann = null;
    this.pending.clear();
    this.tombstones = 0;
    this.slotNode.fill(-1, 0, this.used);
    if (!this.building) this.releaseDead();
  }

  /** Loads the graph kept by an earlier build, if any, and reconciles it. False when there is none. */
  async loadIndexFile(): Promise<boolean> {
    if (!this.opts.indexDir || this.dim === 0) return false;
    const file = this.indexFile();
    if (!existsSync(file)) return false;
    let parts: GraphParts;
    try {
      parts = await readGraphFile(file);
      if (parts.dim !== this.dim || parts.m !== this.opts.m) throw new Error("another shape");
    } catch {
      unlinkQuietly(file); // unreadable or built for another shape: rebuild
      return false;
    }
    if (this.closed) return false;
    this.swapIn(parts, null);
    return this.ann !== null;
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
    return join(this.opts.indexDir!, graphFileName(this.ord));
  }

  private startBuild(): void {
    // The live slots, in slot order: node i of the new graph is slots[i].
    const slots = new Int32Array(this.size);
    const labels = new Float64Array(this.size);
    for (let slot = 0, i = 0; slot < this.used; slot++) {
      if (this.fileOrds[slot]! < 0) continue;
      slots[i] = slot;
      labels[i++] = this.labels[slot]!;
    }
    const dir = this.opts.indexDir ?? tmpdir();
    mkdirSync(dir, { recursive: true });
    const tmp = join(dir, `${graphFileName(this.ord)}.tmp-${process.pid}-${Math.random().toString(36).slice(2)}`);
    const task: GraphBuildTask = { slab: this.slab!.handle, slots, labels, m: this.opts.m, efConstruction: this.opts.efConstruction, file: tmp };
    this.building = (async () => {
      try {
        const parts = await buildInWorker(task, (w) => (this.buildWorker = w));
        if (this.closed) return;
        if (this.opts.indexDir) renameSync(tmp, this.indexFile());
        this.swapIn(parts, slots);
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
      if (!this.closed) this.releaseDead();
      this.maintain();
    });
  }

  /**
   * Makes the graph in `parts` the store's: each node finds its slot (`slots` when the build's
   * slots are still where they were, else by label: a reloaded file), nodes whose chunk is gone
   * become tombstones, and live labels the graph lacks become pending. The previous graph's
   * tombstones that the new one does not have are released.
   */
  private swapIn(parts: GraphParts, slots: Int32Array | null): void {
    const ann = HnswGraph.fromParts(this.slab!, { m: this.opts.m, efConstruction: this.opts.efConstruction }, parts);
    this.slotNode.fill(-1, 0, this.used);
    let tombstones = 0;
    for (let node = 0; node < parts.count; node++) {
      const slot = slots ? slots[node]! : this.slotOf.get(parts.labels[node]!);
      if (slot === undefined) {
        tombstones++; // its chunk went while no process had the store loaded: no vector to walk through
        continue;
      }
      ann.nodeSlot[node] = slot;
      this.slotNode[slot] = node;
      if (Number.isNaN(this.labels[slot]!)) tombstones++;
    }
    // A graph whose entry point has no vector cannot be searched: serve exactly and rebuild.
    if (ann.entry >= 0 && ann.nodeSlot[ann.entry]! < 0) {
      this.dropGraph();
      this.tombstones = Math.max(1001, parts.count);
      return;
    }
    const pending = new Set<number>();
    for (let slot = 0; slot < this.used; slot++) {
      if (this.slotNode[slot]! < 0 && this.fileOrds[slot]! >= 0) pending.add(this.labels[slot]!);
    }
    this.ann = ann;
    this.tombstones = tombstones;
    this.pending = pending;
    if (!this.building) this.releaseDead();
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
      for (const label of this.pending) {
        const slot = this.slotOf.get(label)!;
        this.slotNode[slot] = ann.insert(slot, label);
        this.pending.delete(label);
        if (performance.now() - start > DRAIN_SLICE_MS) break;
      }
      if (this.pending.size > 0) setImmediate(step);
      else this.draining = false;
    };
    setImmediate(step);
  }
}

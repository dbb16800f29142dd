/**
 * A hierarchical navigable small world graph (Malkov & Yashunin) over vectors it does not own.
 *
 * The vectors stay in the dense store's one shared memory (`VectorSlab`); the graph keeps only
 * links and, per node, the slot its vector sits in. That is why it is ours rather than a library's:
 * a library graph copies every vector into itself, doubling the store's largest cost (100k × 512
 * dimensions: 205 MB of vectors, against ~15 MB of links). A build in a worker thread reads the
 * same memory (a SharedArrayBuffer), so it copies nothing either.
 *
 * Similarity is the dot product of L2-normalised vectors; the graph works with the distance
 * 1 − similarity. Construction follows the paper's algorithms 1, 2 and 4 (the neighbour-selection
 * heuristic, M links per upper level, 2·M at level 0), with a seeded level generator so that the
 * same inserts build the same graph. A node whose vector is gone (a graph file reloaded after its
 * chunk was deleted) has slot −1: searches step over it.
 */
import type { VectorSlab } from "./vector-slab.js";

export interface GraphParams {
  /** Links per node on the upper levels; 2·m on level 0. */
  m: number;
  efConstruction: number;
}

/** A graph as plain arrays: what a build worker sends back and what the graph file holds. */
export interface GraphParts {
  dim: number;
  m: number;
  count: number;
  entry: number;
  maxLevel: number;
  /** Node → label (the chunk's rowid). */
  labels: Float64Array;
  /** Node → its top level. */
  levels: Uint8Array;
  /** Node → level-0 links: `[n, link × 2m]` per node. */
  links0: Int32Array;
  /** The upper levels' links of the nodes above level 0, in node order: `[n, link × m]` per level. */
  upper: Int32Array;
}

const MAX_LEVEL = 16;

function trim<T extends Float64Array | Uint8Array | Int32Array>(a: T, n: number): T {
  return (a.length === n ? a : a.slice(0, n)) as T;
}

/** A binary heap of (distance, node), smallest distance on top. */
class MinHeap {
  keys = new Float64Array(64);
  ids = new Int32Array(64);
  size = 0;

  clear(): void {
    this.size = 0;
  }

  push(key: number, id: number): void {
    if (this.size === this.keys.length) {
      const keys = new Float64Array(this.size * 2);
      keys.set(this.keys);
      const ids = new Int32Array(this.size * 2);
      ids.set(this.ids);
      this.keys = keys;
      this.ids = ids;
    }
    let i = this.size++;
    const { keys, ids } = this;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (keys[p]! <= key) break;
      keys[i] = keys[p]!;
      ids[i] = ids[p]!;
      i = p;
    }
    keys[i] = key;
    ids[i] = id;
  }

  /** Removes the top; read `topKey`/`topId` first. */
  pop(): void {
    const n = --this.size;
    if (n === 0) return;
    const { keys, ids } = this;
    const key = keys[n]!;
    const id = ids[n]!;
    let i = 0;
    for (;;) {
      let c = 2 * i + 1;
      if (c >= n) break;
      if (c + 1 < n && keys[c + 1]! < keys[c]!) c++;
      if (keys[c]! >= key) break;
      keys[i] = keys[c]!;
      ids[i] = ids[c]!;
      i = c;
    }
    keys[i] = key;
    ids[i] = id;
  }

  get topKey(): number {
    return this.keys[0]!;
  }

  get topId(): number {
    return this.ids[0]!;
  }
}

/** Deterministic uniform numbers in (0, 1) (mulberry32). */
function seeded(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (((t ^ (t >>> 14)) >>> 0) + 1) / 4294967297;
  };
}

export class HnswGraph {
  readonly m: number;
  readonly m0: number;
  count = 0;
  entry = -1;
  maxLevel = -1;
  /** Node → slot of its vector in the slab, or −1 when the vector is gone. */
  nodeSlot: Int32Array;
  labels: Float64Array;
  levels: Uint8Array;
  links0: Int32Array;
  /** Node → its upper levels' links (levels 1..top, `m + 1` ints each), for nodes above level 0. */
  private readonly upperOf = new Map<number, Int32Array>();

  private visited: Uint32Array;
  private epoch = 0;
  private readonly candidates = new MinHeap();
  /** Results as a max-heap: keys are negated distances. */
  private readonly results = new MinHeap();
  private readonly random: () => number;
  private readonly levelScale: number;

  constructor(
    private readonly slab: VectorSlab,
    private readonly params: GraphParams,
    capacity = 1024,
    seed = 100,
  ) {
    this.m = params.m;
    this.m0 = 2 * params.m;
    capacity = Math.max(16, capacity);
    this.nodeSlot = new Int32Array(capacity);
    this.labels = new Float64Array(capacity);
    this.levels = new Uint8Array(capacity);
    this.links0 = new Int32Array(capacity * (this.m0 + 1));
    this.visited = new Uint32Array(capacity);
    this.random = seeded(seed);
    this.levelScale = 1 / Math.log(Math.max(2, params.m));
  }

  /** A graph from its parts (a build's result or a graph file), over `slab`; slots set by the caller. */
  static fromParts(slab: VectorSlab, params: GraphParams, parts: GraphParts): HnswGraph {
    const g = new HnswGraph(slab, params, 0);
    g.count = parts.count;
    g.entry = parts.entry;
    g.maxLevel = parts.maxLevel;
    g.labels = parts.labels;
    g.levels = parts.levels;
    g.links0 = parts.links0;
    g.nodeSlot = new Int32Array(parts.labels.length).fill(-1);
    g.visited = new Uint32Array(parts.labels.length);
    const per = g.m + 1;
    let off = 0;
    for (let node = 0; node < parts.count; node++) {
      const top = parts.levels[node]!;
      if (top === 0) continue;
      g.upperOf.set(node, parts.upper.subarray(off, off + top * per));
      off += top * per;
    }
    return g;
  }

  /** The graph as plain arrays (trimmed to its nodes). */
  toParts(): GraphParts {
    let upperInts = 0;
    for (const links of this.upperOf.values()) upperInts += links.length;
    const upper = new Int32Array(upperInts);
    let off = 0;
    for (let node = 0; node < this.count; node++) {
      const links = this.upperOf.get(node);
      if (!links) continue;
      upper.set(links, off);
      off += links.length;
    }
    return {
      dim: this.slab.dim,
      m: this.m,
      count: this.count,
      entry: this.entry,
      maxLevel: this.maxLevel,
      // Whole arrays when they are full (a build sized them exactly), so nothing is copied.
      labels: trim(this.labels, this.count),
      levels: trim(this.levels, this.count),
      links0: trim(this.links0, this.count * (this.m0 + 1)),
      upper,
    };
  }

  /** Bytes the graph holds (links, slots, labels, levels, the visited marks). */
  get bytes(): number {
    let upper = 0;
    for (const links of this.upperOf.values()) upper += links.byteLength;
    return this.links0.byteLength + this.nodeSlot.byteLength + this.labels.byteLength + this.levels.byteLength + this.visited.byteLength + upper;
  }

  /** Adds the vector in `slot` as a new node labelled `label`; returns the node. */
  insert(slot: number, label: number): number {
    if (this.count === this.nodeSlot.length) this.grow();
    const node = this.count++;
    const top = Math.min(MAX_LEVEL, Math.floor(-Math.log(this.random()) * this.levelScale));
    this.nodeSlot[node] = slot;
    this.labels[node] = label;
    this.levels[node] = top;
    this.links0[node * (this.m0 + 1)] = 0;
    if (top > 0) this.upperOf.set(node, new Int32Array(top * (this.m + 1)));
    if (this.entry < 0) {
      this.entry = node;
      this.maxLevel = top;
      return node;
    }
    const q = this.slab.address(slot);
    let cur = this.entry;
    for (let level = this.maxLevel; level > top; level--) cur = this.greedy(q, cur, level);
    for (let level = Math.min(top, this.maxLevel); level >= 0; level--) {
      this.searchLayer(q, cur, this.params.efConstruction, level, undefined);
      cur = this.connect(node, level);
    }
    if (top > this.maxLevel) {
      this.entry = node;
      this.maxLevel = top;
    }
    return node;
  }

  /**
   * The `k` nodes nearest to `q` that `accept` admits (all with a vector when absent), nearest first,
   * searching `ef` wide. Nodes `accept` refuses are still walked through. Distances are the f32
   * kernel's: the caller rescores what it returns where exact figures matter.
   */
  search(query: Float32Array, k: number, ef: number, accept?: (node: number) => boolean): { nodes: number[]; distances: number[] } {
    if (this.entry < 0 || this.nodeSlot[this.entry]! < 0) return { nodes: [], distances: [] };
    this.slab.scratch.set(query);
    const q = 0; // the scratch's address
    let cur = this.entry;
    for (let level = this.maxLevel; level > 0; level--) cur = this.greedy(q, cur, level);
    this.searchLayer(q, cur, Math.max(ef, k), 0, accept);
    const found = this.takeResults().slice(0, k);
    return { nodes: found.map(([, node]) => node), distances: found.map(([d]) => d) };
  }

  /** Empties `this.results` into [distance, node] pairs, nearest first. */
  private takeResults(): Array<[number, number]> {
    const res = this.results;
    const found = new Array<[number, number]>(res.size);
    for (let i = res.size - 1; i >= 0; i--) {
      found[i] = [-res.topKey, res.topId];
      res.pop();
    }
    return found;
  }

  /** The array holding `node`'s links on `level` (at `linkOffset`: the count, then the links). */
  private linkArray(node: number, level: number): Int32Array {
    return level === 0 ? this.links0 : this.upperOf.get(node)!;
  }

  private linkOffset(node: number, level: number): number {
    return level === 0 ? node * (this.m0 + 1) : (level - 1) * (this.m + 1);
  }

  /** Distance from the vector at byte address `q` to `node`'s. */
  private distanceTo(q: number, node: number): number {
    const slab = this.slab;
    return 1 - slab.dot(q, slab.address(this.nodeSlot[node]!), slab.dim);
  }

  private distanceBetween(a: number, b: number): number {
    const slab = this.slab;
    return 1 - slab.dot(slab.address(this.nodeSlot[a]!), slab.address(this.nodeSlot[b]!), slab.dim);
  }

  /** Greedy descent on one upper level: the nearest node reachable from `cur`. */
  private greedy(q: number, cur: number, level: number): number {
    let curDist = this.distanceTo(q, cur);
    for (let changed = true; changed; ) {
      changed = false;
      const links = this.linkArray(cur, level);
      const off = this.linkOffset(cur, level);
      const n = links[off]!;
      for (let i = 1; i <= n; i++) {
        const e = links[off + i]!;
        if (this.nodeSlot[e]! < 0) continue;
        const d = this.distanceTo(q, e);
        if (d < curDist) {
          curDist = d;
          cur = e;
          changed = true;
        }
      }
    }
    return cur;
  }

  /** Beam search on `level` from `start`; leaves up to `ef` admitted nodes in `this.results`. */
  private searchLayer(q: number, start: number, ef: number, level: number, accept: ((node: number) => boolean) | undefined): void {
    const visited = this.visited;
    if (++this.epoch === 0xffffffff) {
      visited.fill(0);
      this.epoch = 1;
    }
    const epoch = this.epoch;
    const cand = this.candidates;
    const res = this.results;
    cand.clear();
    res.clear();
    visited[start] = epoch;
    const d0 = this.distanceTo(q, start);
    cand.push(d0, start);
    let bound = Infinity;
    if (!accept || accept(start)) {
      res.push(-d0, start);
      bound = d0;
    }
    while (cand.size > 0) {
      const dc = cand.topKey;
      // Stop once the nearest unexplored node is farther than the worst result and the beam is
      // full (with a filter, until enough admitted nodes are found).
      if (dc > bound && (res.size >= ef || !accept)) break;
      const c = cand.topId;
      cand.pop();
      const links = this.linkArray(c, level);
      const off = this.linkOffset(c, level);
      const n = links[off]!;
      for (let i = 1; i <= n; i++) {
        const e = links[off + i]!;
        if (visited[e] === epoch) continue;
        visited[e] = epoch;
        if (this.nodeSlot[e]! < 0) continue;
        const d = this.distanceTo(q, e);
        if (res.size < ef || d < bound) {
          cand.push(d, e);
          if (!accept || accept(e)) {
            res.push(-d, e);
            if (res.size > ef) res.pop();
            bound = -res.topKey;
          }
        }
      }
    }
  }

  /**
   * Links `node` on `level` to the neighbours the heuristic picks from `this.results`, and each of
   * them back (re-pruning a full list). Returns the nearest of the results: the next level's start.
   */
  private connect(node: number, level: number): number {
    const found = this.takeResults();
    const nearest = found.length ? found[0]![1] : this.entry;
    const chosen = this.select(found, this.m);
    const links = this.linkArray(node, level);
    const off = this.linkOffset(node, level);
    links[off] = chosen.length;
    for (let i = 0; i < chosen.length; i++) links[off + 1 + i] = chosen[i]!;
    const cap = level === 0 ? this.m0 : this.m;
    for (const e of chosen) {
      const el = this.linkArray(e, level);
      const eo = this.linkOffset(e, level);
      const n = el[eo]!;
      if (n < cap) {
        el[eo + 1 + n] = node;
        el[eo] = n + 1;
        continue;
      }
      const pool: Array<[number, number]> = [[this.distanceBetween(e, node), node]];
      for (let i = 1; i <= n; i++) {
        const x = el[eo + i]!;
        if (this.nodeSlot[x]! >= 0) pool.push([this.distanceBetween(e, x), x]);
      }
      pool.sort((a, b) => a[0] - b[0]);
      const kept = this.select(pool, cap);
      el[eo] = kept.length;
      for (let i = 0; i < kept.length; i++) el[eo + 1 + i] = kept[i]!;
    }
    return nearest;
  }

  /**
   * The neighbour-selection heuristic: from candidates nearest first, keep one only if it is nearer
   * to the base than to every one kept already (so links spread in all directions), up to `max`.
   */
  private select(sorted: Array<[number, number]>, max: number): number[] {
    if (sorted.length <= max) return sorted.map(([, id]) => id);
    const kept: number[] = [];
    for (const [d, id] of sorted) {
      if (kept.length >= max) break;
      let good = true;
      for (const k of kept) {
        if (this.distanceBetween(id, k) < d) {
          good = false;
          break;
        }
      }
      if (good) kept.push(id);
    }
    return kept;
  }

  private grow(): void {
    const cap = Math.max(16, Math.ceil(this.nodeSlot.length * 1.5));
    const nodeSlot = new Int32Array(cap);
    nodeSlot.set(this.nodeSlot);
    const labels = new Float64Array(cap);
    labels.set(this.labels);
    const levels = new Uint8Array(cap);
    levels.set(this.levels);
    const links0 = new Int32Array(cap * (this.m0 + 1));
    links0.set(this.links0);
    this.nodeSlot = nodeSlot;
    this.labels = labels;
    this.levels = levels;
    this.links0 = links0;
    this.visited = new Uint32Array(cap);
    this.epoch = 0;
  }
}

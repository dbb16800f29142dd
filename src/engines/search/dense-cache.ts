/**
 * The dense side of both indexes: one `DenseStore` (dense.ts) per searched store, loaded from the
 * store's vectors (paged by label) on its first dense search, then kept in step with this
 * process's committed writes. A store written by someone else (another process on the SQLite
 * file, another instance on PostgreSQL) shows as a version ahead of the cache: the source's
 * change log brings the cache along when it has one (a delta read), otherwise the store reloads.
 * Loaded stores together keep within `cacheBytes`: the least recently searched are unloaded.
 *
 * Where the vectors and changes come from is the engine's part, behind `DenseSource`.
 */
import { DenseStore, type AnnState, type DenseOptions } from "./dense.js";

/** What the dense cache of a store looks like (diagnostics, tests, benchmarks). */
export interface DenseInfo {
  loaded: boolean;
  vectors: number;
  ann: AnnState;
  pending: number;
  tombstones: number;
  lastError: string | null;
  /** Dense searches served by the exact scan, by the graph, and graph answers that fell back to exact. */
  counters: { exact: number; ann: number; fallback: number };
}

/** A change to the dense cache, in commit order (a vector as floats, or as its stored float32 bytes). */
export type DenseOp = { add: number; fileId: string; vector: Float32Array | Uint8Array } | { remove: number };

/** What the cache needs of a store's row: its identity (`ord`, never reused) and its version. */
export interface DenseStoreRow {
  ord: number;
  version: number;
}

/** One stored vector: label, file id, float32 little-endian bytes. */
export type VectorRow = [label: number, fileId: string, vector: Buffer];

/** The changes after a version: their ops in commit order, and the version they bring the cache to. */
export interface DenseChanges {
  ops: DenseOp[];
  version: number;
}

/** Where a store's vectors live (the engine's part). */
export interface DenseSource<Row extends DenseStoreRow> {
  /** Up to `limit` of the store's vectors with a label above `after`, by label. */
  page(row: Row, after: number, limit: number): VectorRow[] | Promise<VectorRow[]>;
  /**
   * The changes after `version` up to (at least) `row`'s, or null when the source cannot tell
   * (no change log, or pruned past `version`): then the store reloads.
   */
  changesSince(row: Row, version: number): Promise<DenseChanges | null>;
  /**
   * Whether each page is read whole at once (a synchronous read): a change this process commits
   * while a store loads can then be applied to the half-loaded cache, since no page read before
   * that commit can arrive after it. With pages read asynchronously such a page could bring back a
   * removed vector, so a loading store takes no changes and catches up once loaded.
   */
  pagesReadAtOnce: boolean;
}

interface DenseEntry {
  state: DenseStore;
  /** The load, then each catch-up, chained: one at a time per store. */
  sync: Promise<void>;
}

/** Vectors read per page while loading. */
const PAGE = 2048;

/** ATRIUM_SEARCH_CACHE_MB (default 1024): memory for the loaded vector stores' vectors and graphs. */
export function denseCacheBytesFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.ATRIUM_SEARCH_CACHE_MB;
  if (raw === undefined || raw === "") return 1024 * 2 ** 20;
  const mb = Number(raw);
  if (!Number.isFinite(mb) || mb <= 0) throw new RangeError(`ATRIUM_SEARCH_CACHE_MB must be a positive number of MiB, got '${raw}'`);
  return mb * 2 ** 20;
}

export class DenseCache<Row extends DenseStoreRow> {
  private readonly entries = new Map<string, DenseEntry>();
  private closed = false;
  /** Full loads and change reads done (diagnostics, tests). */
  readonly reads = { full: 0, delta: 0 };
  /** Stores unloaded to keep within `cacheBytes`, since this cache was made. */
  evictions = 0;

  constructor(
    private readonly source: DenseSource<Row>,
    private readonly opts: DenseOptions,
  ) {}

  /**
   * Applies a change this process committed to the store's loaded cache when the cache is exactly
   * one version behind; otherwise someone else wrote too, and the next search catches up.
   */
  apply(storeId: string, ord: number, version: number, ops: DenseOp[]): void {
    const entry = this.entries.get(storeId);
    if (!entry) return;
    const state = entry.state;
    if (state.loading && !this.source.pagesReadAtOnce) return;
    if (state.ord !== ord || state.version !== version - 1) return;
    state.version = version;
    for (const op of ops) {
      if ("add" in op) state.add(op.add, op.fileId, op.vector);
      else state.remove(op.remove);
    }
    state.maintain();
  }

  /** Forgets a store's cache, keeping its graph file. */
  discard(storeId: string): void {
    this.entries.get(storeId)?.state.close(false);
    this.entries.delete(storeId);
  }

  /** Forgets a dropped store's cache, deleting its graph file. */
  drop(storeId: string): void {
    this.entries.get(storeId)?.state.close(true);
    this.entries.delete(storeId);
  }

  /**
   * The store's cache, loaded on first use and brought to (at least) the version of `row`, then
   * marked most recently used.
   */
  async get(storeId: string, row: Row): Promise<DenseStore> {
    let entry = this.entries.get(storeId);
    if (entry && entry.state.ord !== row.ord) {
      this.discard(storeId); // the store was dropped and made again: another store
      entry = undefined;
    }
    if (!entry) entry = this.load(storeId, row);
    const e = entry;
    await e.sync;
    if (e.state.version < row.version) {
      e.sync = e.sync.then(() => this.catchUp(storeId, e, row)).catch((err) => {
        // Not kept half caught up: the next search loads the store afresh.
        if (this.entries.get(storeId) === e) this.discard(storeId);
        throw err;
      });
      await e.sync;
    }
    const now = this.entries.get(storeId);
    // The catch-up could not read the changes and swapped in a fresh load: serve that.
    if (now && now !== e && now.state.ord === row.ord) {
      await now.sync;
      this.touch(storeId, now);
      return now.state;
    }
    this.touch(storeId, e);
    return e.state;
  }

  /**
   * Marks the store most recently used (the map keeps insertion order), then unloads the least
   * recently used loaded stores while all of them together hold more than `cacheBytes`. The store
   * just used stays, whatever its size; a search still running on an unloaded store finishes on
   * its vectors (without the graph, by the exact scan).
   */
  private touch(storeId: string, entry: DenseEntry): void {
    if (this.entries.get(storeId) !== entry) return;
    this.entries.delete(storeId);
    this.entries.set(storeId, entry);
    let total = 0;
    for (const e of this.entries.values()) total += e.state.bytes;
    for (const [id, e] of this.entries) {
      if (total <= this.opts.cacheBytes) break;
      if (id === storeId || e.state.loading) continue;
      total -= e.state.bytes;
      this.discard(id);
      this.evictions++;
    }
  }

  private load(storeId: string, row: Row): DenseEntry {
    this.reads.full++;
    const state = new DenseStore(row.ord, row.version, this.opts);
    const entry: DenseEntry = { state, sync: Promise.resolve() };
    this.entries.set(storeId, entry);
    // Paged by label with a yield between pages: a 100k-chunk store (200 MB of vectors) must not
    // stall the event loop. add/remove are idempotent by label, so a row seen twice is harmless.
    entry.sync = (async () => {
      let after = 0;
      for (;;) {
        if (this.closed || this.entries.get(storeId) !== entry) return;
        const rows = await this.source.page(row, after, PAGE);
        for (const [label, fileId, vector] of rows) state.add(label, fileId, vector);
        if (rows.length < PAGE) break;
        after = rows[rows.length - 1]![0];
        await new Promise((r) => setImmediate(r));
      }
      if (state.size > this.opts.annThreshold) await state.loadIndexFile();
      state.loading = false;
      state.maintain();
    })().catch((err) => {
      // Not cached half-loaded: the next search tries again.
      if (this.entries.get(storeId) === entry) this.discard(storeId);
      throw err;
    });
    return entry;
  }

  /** Applies the changes after the cache's version; reloads the store when the source cannot read them. */
  private async catchUp(storeId: string, entry: DenseEntry, row: Row): Promise<void> {
    const state = entry.state;
    if (this.closed || this.entries.get(storeId) !== entry || state.version >= row.version) return;
    const changes = await this.source.changesSince(row, state.version);
    if (this.closed || this.entries.get(storeId) !== entry) return;
    if (!changes) {
      this.discard(storeId);
      await this.load(storeId, row).sync;
      return;
    }
    this.reads.delta++;
    for (const op of changes.ops) {
      if ("add" in op) state.add(op.add, op.fileId, op.vector);
      else state.remove(op.remove);
    }
    state.version = Math.max(state.version, changes.version);
    state.maintain();
  }

  /** The dense cache of a store, as it stands. */
  inspect(storeId: string): DenseInfo {
    const s = this.entries.get(storeId)?.state;
    return {
      loaded: !!s && !s.loading,
      vectors: s?.size ?? 0,
      ann: s?.annState ?? "none",
      pending: s?.backlog.pending ?? 0,
      tombstones: s?.backlog.tombstones ?? 0,
      lastError: s?.lastError?.message ?? null,
      counters: { ...(s?.counters ?? { exact: 0, ann: 0, fallback: 0 }) },
    };
  }

  /** Waits for every loaded store's load, catch-up and background graph work (builds, drains). */
  async settle(): Promise<void> {
    for (const entry of [...this.entries.values()]) {
      await entry.sync;
      await entry.state.settle();
    }
  }

  /** Stops loads under way and releases every store's cache. */
  close(): void {
    this.closed = true;
    for (const id of [...this.entries.keys()]) this.discard(id);
  }
}

/**
 * What an index built on a DenseCache tells about it (tests, benchmarks, /debug): the same for
 * every index, so each extends this rather than passing the calls through itself.
 */
export abstract class DenseCachedIndex<Row extends DenseStoreRow> {
  protected abstract readonly dense: DenseCache<Row>;

  /** The dense cache of a store, as it stands. */
  inspect(storeId: string): DenseInfo {
    return this.dense.inspect(storeId);
  }

  /** Stores unloaded from memory to keep within the dense cache's bytes. */
  get denseEvictions(): number {
    return this.dense.evictions;
  }

  /** Full loads and change reads of the dense caches so far (an index without a change log catches up by full loads only). */
  denseReads(): { full: number; delta: number } {
    return { ...this.dense.reads };
  }
}

/**
 * The dense side of the SQLite index: one `DenseStore` (dense.ts) per store, loaded from the
 * vectors' BLOBs (and the kept HNSW file) on the store's first dense search, then kept in step
 * with this process's committed writes. A write by another process shows as a version this cache
 * did not make: the store's cache is dropped and loaded again.
 */
import type Database from "better-sqlite3";
import { DenseStore, type AnnState, type DenseOptions } from "./dense.js";
import type { StoreRow } from "./schema.js";

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

/** A change to the dense cache, in commit order. */
export type DenseOp = { add: number; fileId: string; vector: Float32Array } | { remove: number };

interface DenseEntry {
  state: DenseStore;
  ready: Promise<void>;
}

/** Vectors read per page while loading. */
const PAGE = 2048;

export class DenseCache {
  private readonly entries = new Map<string, DenseEntry>();
  private readonly sPage: Database.Statement;
  private closed = false;

  constructor(
    db: Database.Database,
    private readonly opts: DenseOptions,
    /** The store's `search_stores` row as it is now. */
    private readonly readStore: (storeId: string) => StoreRow | undefined,
  ) {
    this.sPage = db.prepare(
      `SELECT c.id, c.file_id, v.vector FROM search_chunks c JOIN search_vectors v ON v.id = c.id
       WHERE c.store_id = ? AND c.id > ? ORDER BY c.id LIMIT ${PAGE}`,
    ).raw();
  }

  /**
   * Applies a committed change to the store's loaded dense cache. The cache must be exactly one
   * version behind; otherwise another process wrote too, and the cache is dropped (reloaded by
   * the next dense search).
   */
  apply(storeId: string, ord: number, version: number, ops: DenseOp[]): void {
    const entry = this.entries.get(storeId);
    if (!entry) return;
    const state = entry.state;
    if (state.ord !== ord || state.version !== version - 1) {
      this.discard(storeId);
      return;
    }
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
    const entry = this.entries.get(storeId);
    if (!entry) return;
    entry.state.close(true);
    this.entries.delete(storeId);
  }

  /**
   * The store's dense cache, loaded on first use. When another process changed (or dropped) the
   * store while it loaded, it is loaded once more and that is served as it stands: a search never
   * waits on a store another process keeps writing.
   */
  async get(storeId: string, row: StoreRow): Promise<DenseStore> {
    const entry = await this.ready(storeId, row);
    const now = this.readStore(storeId);
    const current = this.entries.get(storeId) === entry && (!now || now.version === entry.state.version);
    if (current || !now) return entry.state;
    if (this.entries.get(storeId) === entry) this.discard(storeId);
    return (await this.ready(storeId, now)).state;
  }

  private async ready(storeId: string, row: StoreRow): Promise<DenseEntry> {
    let entry = this.entries.get(storeId);
    if (entry && entry.state.ord !== row.ord) {
      this.discard(storeId);
      entry = undefined;
    }
    if (!entry) entry = this.load(storeId, row);
    await entry.ready;
    return entry;
  }

  private load(storeId: string, row: StoreRow): DenseEntry {
    const state = new DenseStore(row.ord, row.version, this.opts);
    const entry: DenseEntry = { state, ready: Promise.resolve() };
    this.entries.set(storeId, entry);
    // Paged by rowid with a yield between pages: a 100k-chunk store (200 MB of vectors) must not
    // stall the event loop. Changes committed meanwhile are applied to the half-loaded cache;
    // add/remove are idempotent by rowid, so a row seen twice is harmless.
    entry.ready = (async () => {
      let after = 0;
      for (;;) {
        if (this.closed || this.entries.get(storeId) !== entry) return;
        const rows = this.sPage.all(storeId, after) as Array<[number, string, Buffer]>;
        for (const [id, fileId, blob] of rows) state.add(id, fileId, blob);
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

  /** Waits for every loaded store's load and background graph work (builds, drains). */
  async settle(): Promise<void> {
    for (const entry of [...this.entries.values()]) {
      await entry.ready;
      await entry.state.settle();
    }
  }

  /** Stops loads under way and releases every store's cache. */
  close(): void {
    this.closed = true;
    for (const id of [...this.entries.keys()]) this.discard(id);
  }
}

/**
 * The SQLite index's writes, each one SQLite transaction: chunks (text, vector, FTS row), file
 * attributes, and the store's counters and version. The checks and the batch's shape are every
 * engine's (writes.ts); each write returns what the façade needs to bring a loaded dense cache
 * along (dense-cache.ts) and to size the FTS merge step that follows.
 */
import type Database from "better-sqlite3";
import type { DenseOp } from "./dense-cache.js";
import type { FtsTables } from "./fts-tables.js";
import type { StoreRow } from "./schema.js";
import { sqlValue, typeTag } from "./sql-filter.js";
import type { Attributes, ChunkInput } from "./types.js";
import { checkAttributes, checkChunks, vectorBytes, type Committed } from "./writes.js";

export type { Committed } from "./writes.js";

export class IndexWrites {
  private readonly sStore: Database.Statement;
  private readonly sEnsureStore: Database.Statement;
  private readonly sSetDim: Database.Statement;
  private readonly sBump: Database.Statement;
  private readonly sDeleteChunk: Database.Statement;
  private readonly sInsertChunk: Database.Statement;
  private readonly sInsertVector: Database.Statement;
  private readonly sDeleteVector: Database.Statement;
  private readonly sDeleteFileChunks: Database.Statement;
  private readonly sUpsertFile: Database.Statement;
  private readonly sDeleteFile: Database.Statement;
  private readonly sDeleteAttrs: Database.Statement;
  private readonly sInsertAttr: Database.Statement;

  constructor(
    private readonly db: Database.Database,
    private readonly fts: FtsTables,
  ) {
    this.sStore = db.prepare(`SELECT ord, dim, version, chunks, bytes FROM search_stores WHERE store_id = ?`);
    this.sEnsureStore = db.prepare(`INSERT INTO search_stores (store_id) VALUES (?) ON CONFLICT (store_id) DO NOTHING`);
    this.sSetDim = db.prepare(`UPDATE search_stores SET dim = ? WHERE store_id = ? AND dim IS NULL`);
    this.sBump = db.prepare(
      `UPDATE search_stores SET chunks = chunks + ?, bytes = bytes + ?, version = version + 1 WHERE store_id = ? RETURNING version`,
    ).pluck();
    this.sDeleteChunk = db.prepare(`DELETE FROM search_chunks WHERE store_id = ? AND chunk_id = ? RETURNING id, bytes`).raw();
    this.sInsertChunk = db.prepare(
      `INSERT INTO search_chunks (store_id, chunk_id, file_id, idx, tokens, bytes, text)
       VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id`,
    ).pluck();
    this.sInsertVector = db.prepare(`INSERT INTO search_vectors (id, vector) VALUES (?, ?)`);
    this.sDeleteVector = db.prepare(`DELETE FROM search_vectors WHERE id = ?`);
    this.sDeleteFileChunks = db.prepare(`DELETE FROM search_chunks WHERE store_id = ? AND file_id = ? RETURNING id, bytes`).raw();
    this.sUpsertFile = db.prepare(
      `INSERT INTO search_files (store_id, file_id, attributes) VALUES (?, ?, ?)
       ON CONFLICT (store_id, file_id) DO UPDATE SET attributes = excluded.attributes`,
    );
    this.sDeleteFile = db.prepare(`DELETE FROM search_files WHERE store_id = ? AND file_id = ?`);
    this.sDeleteAttrs = db.prepare(`DELETE FROM search_attrs WHERE store_id = ? AND file_id = ?`);
    this.sInsertAttr = db.prepare(`INSERT INTO search_attrs (store_id, file_id, key, type, value) VALUES (?, ?, ?, ?, ?)`);
  }

  /** Adds (or replaces, by chunk id) chunks; null when there are none. Validates everything before writing anything. */
  addChunks(storeId: string, chunks: ChunkInput[]): Committed | null {
    if (chunks.length === 0) return null;
    const { chunks: rows, dim, fileAttributes, bytes } = checkChunks(chunks);
    const committed = this.db.transaction(() => {
      if (this.sEnsureStore.run(storeId).changes > 0) this.fts.create((this.sStore.get(storeId) as StoreRow).ord);
      const storeOrd = (this.sStore.get(storeId) as StoreRow).ord;
      const fts = this.fts.of(storeOrd);
      this.fts.tune(storeOrd);
      if (dim !== null) {
        this.sSetDim.run(dim, storeId);
        const stored = (this.sStore.get(storeId) as StoreRow).dim;
        if (stored !== dim) throw new RangeError(`chunks: vectors have ${dim} dimensions; the store's have ${stored}`);
      }
      const ops: DenseOp[] = [];
      let dChunks = 0;
      let dBytes = 0;
      for (const r of rows) {
        for (const [id, bytes] of this.sDeleteChunk.all(storeId, r.c.chunkId) as Array<[number, number]>) {
          fts.remove.run(id);
          this.sDeleteVector.run(id);
          ops.push({ remove: id });
          dChunks--;
          dBytes -= bytes;
        }
        const id = this.sInsertChunk.get(
          storeId, r.c.chunkId, r.c.fileId, r.c.index, r.c.tokens, r.bytes, r.c.text,
        ) as number;
        if (r.vector) this.sInsertVector.run(id, vectorBytes(r.vector));
        fts.insert.run(id, r.c.text);
        if (r.vector) ops.push({ add: id, fileId: r.c.fileId, vector: r.vector });
        dChunks++;
        dBytes += r.bytes;
      }
      for (const [fileId, attributes] of fileAttributes) this.writeAttributes(storeId, fileId, attributes);
      const version = this.sBump.get(dChunks, dBytes, storeId) as number;
      const { ord } = this.sStore.get(storeId) as StoreRow;
      return { ord, version, ops };
    }).immediate();
    return { ...committed, bytes };
  }

  /** Removes a file's chunks and attributes; null when the store had no chunk of it. */
  removeFile(storeId: string, fileId: string): Committed | null {
    return this.db.transaction(() => {
      const store = this.sStore.get(storeId) as StoreRow | undefined;
      const removed = this.sDeleteFileChunks.all(storeId, fileId) as Array<[number, number]>;
      this.sDeleteAttrs.run(storeId, fileId);
      this.sDeleteFile.run(storeId, fileId);
      if (!store || removed.length === 0) return null;
      const fts = this.fts.of(store.ord);
      for (const [id] of removed) {
        fts.remove.run(id);
        this.sDeleteVector.run(id);
      }
      const bytes = removed.reduce((s, [, b]) => s + b, 0);
      const version = this.sBump.get(-removed.length, -bytes, storeId) as number;
      return { ord: store.ord, version, ops: removed.map(([id]) => ({ remove: id })), bytes };
    }).immediate();
  }

  updateAttributes(storeId: string, fileId: string, attributes: Attributes): void {
    const attrs = checkAttributes(attributes, "attributes");
    this.db.transaction(() => this.writeAttributes(storeId, fileId, attrs)).immediate();
  }

  /** Deletes everything of a store, its FTS table included: the store's ord, or undefined when it had none. */
  dropStore(storeId: string): number | undefined {
    return this.db.transaction(() => {
      this.db.prepare(`DELETE FROM search_vectors WHERE id IN (SELECT id FROM search_chunks WHERE store_id = ?)`).run(storeId);
      this.db.prepare(`DELETE FROM search_chunks WHERE store_id = ?`).run(storeId);
      this.db.prepare(`DELETE FROM search_attrs WHERE store_id = ?`).run(storeId);
      this.db.prepare(`DELETE FROM search_files WHERE store_id = ?`).run(storeId);
      const ord = this.db.prepare(`DELETE FROM search_stores WHERE store_id = ? RETURNING ord`).pluck().get(storeId) as number | undefined;
      if (ord !== undefined) this.fts.drop(ord);
      return ord;
    }).immediate();
  }

  private writeAttributes(storeId: string, fileId: string, attributes: Attributes): void {
    this.sUpsertFile.run(storeId, fileId, JSON.stringify(attributes));
    this.sDeleteAttrs.run(storeId, fileId);
    for (const [key, value] of Object.entries(attributes)) {
      this.sInsertAttr.run(storeId, fileId, key, typeTag(value), sqlValue(value));
    }
  }
}

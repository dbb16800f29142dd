/**
 * The index's writes on PostgreSQL (the checks and the batch's shape are every engine's: ../writes.ts),
 * each one transaction through the record store's
 * `transaction`: chunks (text and tsvector, vector), file attributes, the store's counters and
 * version, and the store's change log (schema.ts), which other instances' dense caches follow.
 * Every write locks the store's row first (`FOR UPDATE`), so writes to one store are serialised
 * and their versions commit in order: a reader that sees version v has seen every change ≤ v.
 */
import type pg from "pg";
import type { DenseOp } from "../dense-cache.js";
import type { Attributes, ChunkInput } from "../types.js";
import { checkAttributes, checkChunks, vectorBytes, type CheckedChunk, type Committed } from "../writes.js";
import { attrColumns, typeTag } from "./filter-sql.js";
import { lexicalText } from "./lexical.js";

/** Versions of history the change log keeps by default: a cache further behind reloads in full. */
export const LOG_KEEP = 4096;


type Tx = <T>(f: (client: pg.PoolClient) => Promise<T>) => Promise<T>;

interface LockedStore {
  ord: number;
  dim: number | null;
  version: number;
}

async function lockStore(c: pg.PoolClient, storeId: string, create: boolean): Promise<LockedStore | undefined> {
  if (create) await c.query(`INSERT INTO search_stores (store_id) VALUES ($1) ON CONFLICT (store_id) DO NOTHING`, [storeId]);
  const { rows } = await c.query<LockedStore>(
    `SELECT ord, dim, version::float8 AS version FROM search_stores WHERE store_id = $1 FOR UPDATE`,
    [storeId],
  );
  return rows[0];
}

/** Bumps the store's counters and version, logs the change, and prunes the log now and then. */
async function commitChange(c: pg.PoolClient, store: LockedStore, change: { dChunks: number; dBytes: number; ops: DenseOp[]; fileOf: Map<number, string> }, keep: number): Promise<number> {
  const { dChunks, dBytes, ops, fileOf } = change;
  const version = store.version + 1;
  await c.query(`UPDATE search_stores SET chunks = chunks + $2, bytes = bytes + $3, version = $4 WHERE ord = $1`, [store.ord, dChunks, dBytes, version]);
  const labels = ops.map((o) => ("add" in o ? o.add : o.remove));
  await c.query(
    `INSERT INTO search_changes (store_ord, version, label, added, file_id)
     SELECT $1, $2, l, a, f FROM unnest($3::bigint[], $4::bool[], $5::text[]) AS u(l, a, f)
     ON CONFLICT DO NOTHING`,
    [store.ord, version, labels, ops.map((o) => "add" in o), labels.map((l) => fileOf.get(l) ?? "")],
  );
  // Pruned every keep/16 versions, so the log holds at most about 1/16 more than it keeps.
  if (version % Math.max(1, Math.floor(keep / 16)) === 0 && version > keep) {
    const floor = version - keep;
    await c.query(`DELETE FROM search_changes WHERE store_ord = $1 AND version <= $2`, [store.ord, floor]);
    await c.query(`UPDATE search_stores SET log_floor = $2 WHERE ord = $1`, [store.ord, floor]);
  }
  return version;
}

export class PgIndexWrites {
  constructor(
    private readonly tx: Tx,
    /** Versions of history the change log keeps. */
    private readonly logKeep = LOG_KEEP,
  ) {}

  /** Adds (or replaces, by chunk id) chunks; null when there are none. Validates everything before writing anything. */
  async addChunks(storeId: string, chunks: ChunkInput[]): Promise<Committed | null> {
    if (chunks.length === 0) return null;
    // A chunk id twice in one batch: the later one replaces the earlier, as two writes would.
    const { chunks: last, dim, fileAttributes, bytes } = checkChunks(chunks);
    return this.tx(async (c) => {
      const store = (await lockStore(c, storeId, true))!;
      if (dim !== null) {
        if (store.dim === null) await c.query(`UPDATE search_stores SET dim = $2 WHERE ord = $1`, [store.ord, dim]);
        else if (store.dim !== dim) throw new RangeError(`chunks: vectors have ${dim} dimensions; the store's have ${store.dim}`);
      }
      const removed = await deleteChunks<{ id: string; bytes: number; file_id: string }>(c, `chunk_id = ANY($2::text[])`, [store.ord, last.map((r) => r.c.chunkId)]);
      const ops: DenseOp[] = [];
      const fileOf = new Map<number, string>();
      for (const r of removed.rows) {
        ops.push({ remove: Number(r.id) });
        fileOf.set(Number(r.id), r.file_id);
      }
      if (removed.rows.length) await c.query(`DELETE FROM search_vectors WHERE id = ANY($1::bigint[])`, [removed.rows.map((r) => r.id)]);
      const inserted = await c.query<{ id: string; chunk_id: string }>(
        `WITH added AS (
           INSERT INTO search_chunks (store_ord, chunk_id, file_id, idx, tokens, bytes, text, tsv)
           SELECT $1, u.chunk_id, u.file_id, u.idx, u.tokens, u.bytes, u.text, to_tsvector('atrium_search', u.lex)
           FROM unnest($2::text[], $3::text[], $4::int[], $5::int[], $6::int[], $7::text[], $8::text[])
             AS u(chunk_id, file_id, idx, tokens, bytes, text, lex)
           RETURNING id, chunk_id, tsv
         ), counted AS (
           INSERT INTO search_terms (store_ord, lexeme, df)
           SELECT $1, t.lexeme, count(*) FROM added, unnest(added.tsv) AS t GROUP BY t.lexeme
           ON CONFLICT (store_ord, lexeme) DO UPDATE SET df = search_terms.df + excluded.df
         )
         SELECT id, chunk_id FROM added`,
        [store.ord, ...columns(last)],
      );
      const idOf = new Map(inserted.rows.map((r) => [r.chunk_id, Number(r.id)]));
      const withVectors = last.filter((r) => r.vector);
      if (withVectors.length) {
        await c.query(`INSERT INTO search_vectors (id, vector) SELECT * FROM unnest($1::bigint[], $2::bytea[])`, [
          withVectors.map((r) => idOf.get(r.c.chunkId)!),
          withVectors.map((r) => vectorBytes(r.vector!)),
        ]);
      }
      for (const r of last) {
        const id = idOf.get(r.c.chunkId)!;
        fileOf.set(id, r.c.fileId);
        if (r.vector) ops.push({ add: id, fileId: r.c.fileId, vector: r.vector });
      }
      for (const [fileId, attributes] of fileAttributes) await writeAttributes(c, store.ord, fileId, attributes);
      const dBytes = bytes - removed.rows.reduce((n, r) => n + r.bytes, 0);
      const version = await commitChange(c, store, { dChunks: last.length - removed.rows.length, dBytes, ops, fileOf }, this.logKeep);
      return { ord: store.ord, version, ops, bytes };
    });
  }

  /** Removes a file's chunks and attributes; null when the store had no chunk of it. */
  async removeFile(storeId: string, fileId: string): Promise<Committed | null> {
    return this.tx(async (c) => {
      const store = await lockStore(c, storeId, false);
      if (!store) return null;
      const removed = await deleteChunks<{ id: string; bytes: number }>(c, `file_id = $2`, [store.ord, fileId]);
      await c.query(`DELETE FROM search_attrs WHERE store_ord = $1 AND file_id = $2`, [store.ord, fileId]);
      await c.query(`DELETE FROM search_files WHERE store_ord = $1 AND file_id = $2`, [store.ord, fileId]);
      if (removed.rows.length === 0) return null;
      const ids = removed.rows.map((r) => Number(r.id));
      await c.query(`DELETE FROM search_vectors WHERE id = ANY($1::bigint[])`, [ids]);
      const ops: DenseOp[] = ids.map((id) => ({ remove: id }));
      const bytes = removed.rows.reduce((n, r) => n + r.bytes, 0);
      const version = await commitChange(c, store, { dChunks: -ids.length, dBytes: -bytes, ops, fileOf: new Map(ids.map((id) => [id, fileId])) }, this.logKeep);
      return { ord: store.ord, version, ops, bytes };
    });
  }

  async updateAttributes(storeId: string, fileId: string, attributes: Attributes): Promise<void> {
    const attrs = checkAttributes(attributes, "attributes");
    await this.tx(async (c) => {
      const store = await lockStore(c, storeId, true);
      await writeAttributes(c, store!.ord, fileId, attrs);
    });
  }

  /** Deletes everything of a store; its ord, or undefined when it had none. */
  async dropStore(storeId: string): Promise<number | undefined> {
    return this.tx(async (c) => {
      const store = await lockStore(c, storeId, false);
      if (!store) return undefined;
      await c.query(`DELETE FROM search_vectors WHERE id IN (SELECT id FROM search_chunks WHERE store_ord = $1)`, [store.ord]);
      for (const table of ["search_chunks", "search_terms", "search_attrs", "search_files", "search_changes"]) {
        await c.query(`DELETE FROM ${table} WHERE store_ord = $1`, [store.ord]);
      }
      await c.query(`DELETE FROM search_stores WHERE ord = $1`, [store.ord]);
      return store.ord;
    });
  }
}

/** Deletes the store's chunks matching `where` ($1 is the store's ord), taking their lexemes off `search_terms`. */
async function deleteChunks<R extends pg.QueryResultRow>(c: pg.PoolClient, where: string, params: unknown[]): Promise<pg.QueryResult<R>> {
  return c.query<R>(
    `WITH gone AS (
       DELETE FROM search_chunks WHERE store_ord = $1 AND ${where} RETURNING id, bytes, file_id, tsv
     ), uncounted AS (
       UPDATE search_terms s SET df = s.df - g.n
       FROM (SELECT t.lexeme, count(*) AS n FROM gone, unnest(gone.tsv) AS t GROUP BY t.lexeme) g
       WHERE s.store_ord = $1 AND s.lexeme = g.lexeme
     )
     SELECT id, bytes, file_id FROM gone`,
    params,
  );
}

function columns(rows: CheckedChunk[]): unknown[][] {
  return [
    rows.map((r) => r.c.chunkId),
    rows.map((r) => r.c.fileId),
    rows.map((r) => r.c.index),
    rows.map((r) => r.c.tokens),
    rows.map((r) => r.bytes),
    // PostgreSQL text cannot hold NUL; it is no word anyway.
    rows.map((r) => r.c.text.replaceAll("\0", "\uFFFD")),
    rows.map((r) => lexicalText(r.c.text)),
  ];
}

async function writeAttributes(c: pg.PoolClient, ord: number, fileId: string, attributes: Attributes): Promise<void> {
  await c.query(
    `INSERT INTO search_files (store_ord, file_id, attributes) VALUES ($1, $2, $3)
     ON CONFLICT (store_ord, file_id) DO UPDATE SET attributes = excluded.attributes`,
    [ord, fileId, JSON.stringify(attributes)],
  );
  await c.query(`DELETE FROM search_attrs WHERE store_ord = $1 AND file_id = $2`, [ord, fileId]);
  const entries = Object.entries(attributes);
  if (entries.length === 0) return;
  const cols = entries.map(([, v]) => attrColumns(v));
  await c.query(
    `INSERT INTO search_attrs (store_ord, file_id, key, type, value_text, value_num)
     SELECT $1, $2, k, t::"char", s, n FROM unnest($3::text[], $4::text[], $5::text[], $6::float8[]) AS u(k, t, s, n)`,
    [ord, fileId, entries.map(([k]) => k), entries.map(([, v]) => typeTag(v)), cols.map((x) => x[0]), cols.map((x) => x[1])],
  );
}

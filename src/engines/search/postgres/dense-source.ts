/**
 * Where the dense cache (../dense-cache.ts) reads a store's vectors on PostgreSQL: in full once
 * (paged by id), then the store's change log (`search_changes`): when a search finds the store's
 * version ahead of the cache (another instance wrote), only the changes since are read (a delta
 * read), never the whole store again. A cache behind the log's floor (the log was pruned past it)
 * reloads in full. Graphs are built in a worker into a temporary file deleted once loaded:
 * nothing is kept on disk.
 */
import type pg from "pg";
import type { DenseChanges, DenseOp, DenseSource, VectorRow } from "../dense-cache.js";
import type { PgStoreRow } from "./schema.js";

export function pgDenseSource(pool: pg.Pool): DenseSource<PgStoreRow> {
  return {
    // Pages arrive asynchronously: a loading store catches up by the log once loaded.
    pagesReadAtOnce: false,

    async page(row: PgStoreRow, after: number, limit: number): Promise<VectorRow[]> {
      const { rows } = await pool.query<{ id: string; file_id: string; vector: Buffer }>(
        `SELECT c.id, c.file_id, v.vector FROM search_chunks c JOIN search_vectors v ON v.id = c.id
         WHERE c.store_ord = $1 AND c.id > $2 ORDER BY c.id LIMIT ${limit}`,
        [row.ord, after],
      );
      return rows.map((r) => [Number(r.id), r.file_id, r.vector]);
    },

    async changesSince(row: PgStoreRow, version: number): Promise<DenseChanges | null> {
      if (version < row.logFloor) return null;
      const { rows } = await pool.query<{ version: number; label: string; added: boolean; file_id: string; vector: Buffer | null }>(
        `SELECT ch.version::float8 AS version, ch.label, ch.added, ch.file_id, v.vector
         FROM search_changes ch LEFT JOIN search_vectors v ON ch.added AND v.id = ch.label
         WHERE ch.store_ord = $1 AND ch.version > $2 ORDER BY ch.version, ch.label`,
        [row.ord, version],
      );
      const ops: DenseOp[] = [];
      let upTo = row.version;
      for (const r of rows) {
        // An added chunk whose vector is gone was removed later: that removal follows in the log.
        if (r.added && r.vector) ops.push({ add: Number(r.label), fileId: r.file_id, vector: r.vector });
        else if (!r.added) ops.push({ remove: Number(r.label) });
        upTo = Math.max(upTo, r.version);
      }
      return { ops, version: upTo };
    },
  };
}

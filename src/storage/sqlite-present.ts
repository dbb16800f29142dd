// RecordStore.present for the SQLite store: which of many ids a record of a kind carries, across
// projects, expired or not. `id` lookups walk the UNIQUE (kind, id) index; `parent_id` ones scan the
// kind's rows of records_by_parent (few: the file shares).
import type Database from "better-sqlite3";

// SQLite's default limit on bound parameters is 32766; statements stay far below it.
const BATCH = 500;

export function presentIds(db: Database.Database, kind: string, ids: string[], field: "id" | "parentId"): Set<string> {
  const found = new Set<string>();
  const column = field === "id" ? "id" : "parent_id";
  for (let i = 0; i < ids.length; i += BATCH) {
    const slice = ids.slice(i, i + BATCH);
    const sql = `SELECT DISTINCT ${column} FROM records WHERE kind = ? AND ${column} IN (${slice.map(() => "?").join(",")})`;
    for (const id of db.prepare(sql).pluck().all(kind, ...slice) as string[]) found.add(id);
  }
  return found;
}

/**
 * The per-store FTS5 tables (schema.ts): their prepared statements, their settings, and the merge
 * upkeep that keeps FTS5's segment merges off the writing transaction.
 *
 * FTS5 merges its segment b-trees inside the writing transaction (automerge), and a merge of the
 * higher levels rewrites megabytes at once: 15-50 ms on the event loop every 16th or 64th write
 * of an ingestion. So the tables run with automerge off and the index merges itself: after each
 * write, once the event loop has had a turn, one bounded step (`'merge', N` pages, N in
 * proportion to what was written: 1-6 ms) in a transaction of its own. The crisis merge (all of
 * a level's segments at once) stays as the backstop, at 64 segments instead of 16.
 */
import type Database from "better-sqlite3";
import { BOUND_LIMIT } from "../../common/sqlite.js";

/** The FTS5 table of one store. */
export const ftsTable = (ord: number) => `search_fts_${ord}`;
const FTS_TOKENIZER = "porter unicode61 remove_diacritics 2";
const FTS_SETTINGS = { automerge: 0, crisismerge: 64 };
/** Merge pages per byte of text written, and the least a step does. */
const MERGE_PAGES_PER_BYTE = 1 / 512;
const MIN_MERGE_PAGES = 64;
/** Stores whose statements stay prepared (one table per store: the cache is bounded). */
const CACHED_TABLES = 64;

/** Prepared statements on one store's FTS table. */
export interface FtsStatements {
  insert: Database.Statement;
  remove: Database.Statement;
  count: Database.Statement;
  search: Database.Statement;
  merge: Database.Statement;
}

export class FtsTables {
  // Statements per store FTS table, most recently used last.
  private readonly statements = new Map<number, FtsStatements>();
  // Tables given FTS_SETTINGS by this process (tables made before them get them at their next write).
  private readonly tuned = new Set<number>();

  constructor(private readonly db: Database.Database) {}

  /** Creates a new store's table (inside the caller's transaction). */
  create(ord: number): void {
    this.db.exec(`CREATE VIRTUAL TABLE ${ftsTable(ord)} USING fts5 (text, content = '', contentless_delete = 1, tokenize = '${FTS_TOKENIZER}')`);
  }

  /** Drops a store's table and forgets its statements (inside the caller's transaction). */
  drop(ord: number): void {
    this.statements.delete(ord);
    this.tuned.delete(ord);
    this.db.exec(`DROP TABLE IF EXISTS ${ftsTable(ord)}`);
  }

  /** The statements on a store's FTS table, prepared on first use. */
  of(ord: number): FtsStatements {
    let st = this.statements.get(ord);
    if (st) {
      this.statements.delete(ord); // re-inserted below: most recently used last
    } else {
      const t = ftsTable(ord);
      st = {
        insert: this.db.prepare(`INSERT INTO ${t} (rowid, text) VALUES (?, ?)`),
        remove: this.db.prepare(`DELETE FROM ${t} WHERE rowid = ?`),
        count: this.db.prepare(`SELECT count(*) FROM (SELECT rowid FROM ${t} WHERE ${t} MATCH ? ${BOUND_LIMIT})`).pluck(),
        // bm25() is negative, best first ascending; ties by rowid (insertion order).
        search: this.db.prepare(`SELECT rowid FROM ${t} WHERE ${t} MATCH ? ORDER BY bm25(${t}), rowid ${BOUND_LIMIT}`).pluck(),
        merge: this.db.prepare(`INSERT INTO ${t} (${t}, rank) VALUES ('merge', ?)`),
      };
      if (this.statements.size >= CACHED_TABLES) this.statements.delete(this.statements.keys().next().value!);
    }
    this.statements.set(ord, st);
    return st;
  }

  /** Gives a table FTS_SETTINGS, once per process (inside the caller's writing transaction). */
  tune(ord: number): void {
    if (this.tuned.has(ord)) return;
    const t = ftsTable(ord);
    // Integers in the SQL text: FTS5 refuses a configuration value bound as a double.
    for (const [key, value] of Object.entries(FTS_SETTINGS)) this.db.exec(`INSERT INTO ${t} (${t}, rank) VALUES ('${key}', ${value})`);
    this.tuned.add(ord);
  }

  /** One bounded merge step after a write of `bytes` of text. */
  mergeStep(ord: number, bytes: number): void {
    try {
      this.of(ord).merge.run(Math.max(MIN_MERGE_PAGES, Math.ceil(bytes * MERGE_PAGES_PER_BYTE)));
    } catch {
      // The store was dropped meanwhile, or another process holds the write lock: the next
      // write's step does this one's work too (and the crisis merge bounds the backlog).
    }
  }
}

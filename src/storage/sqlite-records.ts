// Embedded RecordStore: one SQLite file (WAL), one generic `records` table, prepared statements
// cached for the life of the connection. better-sqlite3 is synchronous; the async methods only wrap
// results in promises so a networked engine fits the same interface.
import Database from "better-sqlite3";
import {
  CursorNotFound,
  DuplicateRecord,
  TotalOverCap,
  VersionConflict,
  type Collection,
  type ListPage,
  type ListQuery,
  type Mutation,
  type NewRecord,
  type RecordStore,
  type Scope,
  type StoredRecord,
  type WriteOp,
} from "./types.js";
import { mutateRecord } from "./mutate.js";
import { presentIds } from "./sqlite-present.js";
import { CORE_MIGRATIONS, registeredMigrations, type Migration } from "./sqlite-migrations.js";
import { BOUND_LIMIT } from "../common/sqlite.js";

export { CursorNotFound, DuplicateRecord, VersionConflict } from "./types.js";

export interface SqliteRecordStoreOptions {
  /** Extra migrations, applied after the core ones and the registered ones. */
  migrations?: Migration[];
  /** Clock in Unix seconds (expiry checks). Tests inject one; default is the wall clock. */
  now?: () => number;
  /** How long a writer waits for a lock held by another connection. */
  busyTimeoutMs?: number;
  /**
   * Called when a write fails with SQLITE_FULL: it frees space if it can (the blob store's
   * reserve) and says whether it did, in which case the write is tried once more.
   */
  onFull?: () => Promise<boolean>;
}

// Record rows are read as arrays (`.raw()`): measurably cheaper than one object per row, and
// reads are the hot path. The order is COLS.
type Row = [
  id: string,
  projectId: string,
  parentId: string,
  createdAt: number,
  expiresAt: number | null,
  tag: string | null,
  version: number,
  data: string,
];

type ExpiredRow = [...Row, kind: string];

const COLS = "id, project_id, parent_id, created_at, expires_at, tag, version, data";
// Same condition everywhere a read must not see an expired record.
const LIVE = "(expires_at IS NULL OR expires_at > ?)";

function toRecord<T>(r: Row | ExpiredRow): StoredRecord<T> {
  return {
    id: r[0],
    projectId: r[1],
    parentId: r[2],
    createdAt: r[3],
    expiresAt: r[4],
    tag: r[5],
    version: r[6],
    data: JSON.parse(r[7]) as T,
  };
}

function encode(data: unknown): string {
  // JSON.stringify(undefined) is undefined, which the NOT NULL column would reject obscurely.
  return JSON.stringify(data) ?? "null";
}

function isUniqueViolation(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "SQLITE_CONSTRAINT_UNIQUE" || code === "SQLITE_CONSTRAINT_PRIMARYKEY";
}

function wallClock(): number {
  return Math.floor(Date.now() / 1000);
}

export class SqliteRecordStore implements RecordStore {
  /** The connection, for modules that keep their own tables in the same file. */
  readonly db: Database.Database;
  private readonly now: () => number;
  private readonly onFull: (() => Promise<boolean>) | undefined;
  private readonly collections = new Map<string, SqliteCollection<unknown>>();
  private readonly listStmts = new Map<string, Database.Statement>();
  private readonly countStmts = new Map<string, Database.Statement>();
  private readonly sumStmts = new Map<string, Database.Statement>();

  // Hot-path statements, prepared once.
  private readonly sInsert: Database.Statement;
  private readonly sGet: Database.Statement;
  private readonly sExists: Database.Statement;
  private readonly sCursor: Database.Statement;
  private readonly sUpdate: Database.Statement;
  private readonly sDelete: Database.Statement;
  private readonly sExpired: Database.Statement;
  private readonly sTotal: Database.Statement;
  private readonly sGetMeta: Database.Statement;
  private readonly sSetMeta: Database.Statement;
  private readonly batch: Database.Transaction<(ops: WriteOp[]) => void>;

  constructor(path: string, opts: SqliteRecordStoreOptions = {}) {
    this.now = opts.now ?? wallClock;
    this.onFull = opts.onFull;
    this.db = new Database(path);
    try {
      this.db.pragma("journal_mode = WAL");
      // In WAL mode NORMAL cannot corrupt the database; a power cut may drop the last commits,
      // an application crash loses nothing.
      this.db.pragma("synchronous = NORMAL");
      this.db.pragma(`busy_timeout = ${Math.max(0, Math.floor(opts.busyTimeoutMs ?? 5000))}`);
      this.db.pragma("foreign_keys = ON");
      this.applyMigrations([...CORE_MIGRATIONS, ...registeredMigrations, ...(opts.migrations ?? [])]);
    } catch (err) {
      this.db.close();
      throw err;
    }

    const db = this.db;
    this.sInsert = db.prepare(
      `INSERT INTO records (kind, id, project_id, parent_id, created_at, expires_at, tag, version, data)
       VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?)`,
    );
    this.sGet = db.prepare(`SELECT ${COLS} FROM records WHERE kind = ? AND id = ? AND project_id = ? AND ${LIVE}`).raw();
    this.sExists = db.prepare(`SELECT version FROM records WHERE kind = ? AND id = ? AND project_id = ? AND ${LIVE}`);
    this.sCursor = db.prepare(`SELECT created_at, seq FROM records WHERE kind = ? AND id = ? AND project_id = ?`);
    // A NULL flag leaves the column alone, so `undefined` (keep) and `null` (clear) stay distinct.
    this.sUpdate = db.prepare(
      `UPDATE records SET
         data = ?,
         version = version + 1,
         expires_at = CASE WHEN ? IS NULL THEN expires_at ELSE ? END,
         tag = CASE WHEN ? IS NULL THEN tag ELSE ? END
       WHERE kind = ? AND id = ? AND project_id = ? AND ${LIVE} AND (? IS NULL OR version = ?)
       RETURNING ${COLS}`,
    ).raw();
    // Deliberately ignores expiry: the sweeper deletes records that get() already hides.
    this.sDelete = db.prepare(
      `DELETE FROM records WHERE kind = ? AND id = ? AND project_id = ? AND (? IS NULL OR version = ?)`,
    );
    this.sExpired = db.prepare(
      `SELECT ${COLS}, kind FROM records
       WHERE expires_at IS NOT NULL AND expires_at <= ?
       ORDER BY expires_at, seq ${BOUND_LIMIT}`,
    ).raw();
    this.sTotal = db.prepare(`SELECT total FROM record_totals WHERE project_id = ? AND name = ?`).pluck();
    this.sGetMeta = db.prepare(`SELECT value FROM meta WHERE key = ?`).pluck();
    this.sSetMeta = db.prepare(
      `INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
    );
    this.batch = db.transaction((ops: WriteOp[]) => this.applyOpsSync(ops));
  }

  /**
   * Applies each migration not yet recorded, in order, each in its own IMMEDIATE transaction with
   * its bookkeeping row (a failing migration leaves no trace and stops the rest).
   */
  applyMigrations(migrations: Migration[]): void {
    const db = this.db;
    db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (id TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`);
    const isApplied = db.prepare(`SELECT 1 FROM schema_migrations WHERE id = ?`).pluck();
    const record = db.prepare(`INSERT INTO schema_migrations (id, applied_at) VALUES (?, ?)`);
    const seen = new Set<string>();
    for (const m of migrations) {
      if (seen.has(m.id)) throw new Error(`migration id ${m.id} listed twice`);
      seen.add(m.id);
      if (isApplied.get(m.id)) continue;
      db.transaction(() => {
        // Re-checked under the write lock: another process may have applied it meanwhile.
        if (isApplied.get(m.id)) return;
        db.exec(m.sql);
        record.run(m.id, wallClock());
      }).immediate();
    }
  }

  /** Ids of the applied migrations, in the order they were applied. */
  appliedMigrations(): string[] {
    return this.db.prepare(`SELECT id FROM schema_migrations ORDER BY rowid`).pluck().all() as string[];
  }

  collection<T>(kind: string): Collection<T> {
    let c = this.collections.get(kind);
    if (!c) {
      c = new SqliteCollection<unknown>(this, kind);
      this.collections.set(kind, c);
    }
    return c as Collection<T>;
  }

  async atomically(ops: WriteOp[]): Promise<void> {
    if (ops.length === 0) return;
    await this.writing(() => this.batch.immediate(ops));
  }

  /** Runs a write; on SQLITE_FULL, once more after onFull freed space (a failed write applied nothing). */
  async writing<R>(write: () => R): Promise<R> {
    try {
      return write();
    } catch (err) {
      if ((err as { code?: unknown }).code !== "SQLITE_FULL" || !this.onFull || !(await this.onFull())) throw err;
      return write();
    }
  }

  async expired(
    now: number,
    limit: number,
  ): Promise<Array<{ kind: string; projectId: string; record: StoredRecord<unknown> }>> {
    if (!Number.isFinite(limit)) throw new RangeError(`invalid limit ${limit}`);
    const rows = this.sExpired.all(now, Math.max(0, Math.floor(limit))) as ExpiredRow[];
    return rows.map((r) => ({ kind: r[8], projectId: r[1], record: toRecord<unknown>(r) }));
  }

  async present(kind: string, ids: string[], field: "id" | "parentId" = "id"): Promise<Set<string>> {
    return presentIds(this.db, kind, ids, field);
  }

  async total(scope: Scope, name: string): Promise<number> {
    return this.totalSync(scope, name);
  }

  /** @internal */
  totalSync(scope: Scope, name: string): number {
    return (this.sTotal.get(scope.projectId, name) as number | undefined) ?? 0;
  }

  async getMeta(key: string): Promise<string | undefined> {
    return this.sGetMeta.get(key) as string | undefined;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.writing(() => this.sSetMeta.run(key, value));
  }

  async close(): Promise<void> {
    if (!this.db.open) return;
    try {
      this.db.pragma("optimize");
    } finally {
      this.db.close();
    }
  }

  // ---- synchronous core, shared by collections and batches ----

  /** @internal */
  insertSync<T>(kind: string, scope: Scope, rec: NewRecord<T>): StoredRecord<T> {
    const parentId = rec.parentId ?? "";
    const expiresAt = rec.expiresAt ?? null;
    const tag = rec.tag ?? null;
    try {
      this.sInsert.run(kind, rec.id, scope.projectId, parentId, rec.createdAt, expiresAt, tag, encode(rec.data));
    } catch (err) {
      if (isUniqueViolation(err)) throw new DuplicateRecord(kind, rec.id);
      throw err;
    }
    return {
      id: rec.id,
      projectId: scope.projectId,
      parentId,
      createdAt: rec.createdAt,
      expiresAt,
      tag,
      version: 1,
      data: rec.data,
    };
  }

  /** @internal */
  getSync<T>(kind: string, scope: Scope, id: string): StoredRecord<T> | undefined {
    const row = this.sGet.get(kind, id, scope.projectId, this.now()) as Row | undefined;
    return row && toRecord<T>(row);
  }

  /** @internal */
  updateSync<T>(
    kind: string,
    scope: Scope,
    id: string,
    data: T,
    opts: { expectVersion?: number; expiresAt?: number | null; tag?: string | null } | undefined,
  ): StoredRecord<T> | undefined {
    const setExp = opts?.expiresAt === undefined ? null : 1;
    const setTag = opts?.tag === undefined ? null : 1;
    const ver = opts?.expectVersion ?? null;
    const now = this.now();
    const row = this.sUpdate.get(
      encode(data),
      setExp,
      opts?.expiresAt ?? null,
      setTag,
      opts?.tag ?? null,
      kind,
      id,
      scope.projectId,
      now,
      ver,
      ver,
    ) as Row | undefined;
    if (row) return toRecord<T>(row);
    if (ver !== null && this.sExists.get(kind, id, scope.projectId, now) !== undefined) {
      throw new VersionConflict(kind, id);
    }
    return undefined;
  }

  /** @internal */
  deleteSync(kind: string, scope: Scope, id: string, expectVersion: number | undefined): boolean {
    const ver = expectVersion ?? null;
    if (this.sDelete.run(kind, id, scope.projectId, ver, ver).changes > 0) return true;
    // Only a conditional delete can fail on a record that exists; the cursor lookup ignores expiry.
    if (ver !== null && this.sCursor.get(kind, id, scope.projectId) !== undefined) {
      throw new VersionConflict(kind, id);
    }
    return false;
  }

  /** @internal */
  listSync<T>(kind: string, scope: Scope, q: ListQuery): ListPage<T> {
    // SQLite reads a negative LIMIT as "no limit" and NaN as an error deep in the binding.
    if (!Number.isFinite(q.limit)) throw new RangeError(`invalid list limit ${q.limit}`);
    const limit = Math.max(0, Math.floor(q.limit));
    const params: unknown[] = [kind, scope.projectId];
    if (q.parentId !== undefined) params.push(q.parentId);
    if (q.tag !== undefined) params.push(q.tag);
    params.push(this.now());

    // Position keys of the cursors, in ascending terms: `lo` excludes everything at or before it,
    // `hi` everything at or after it.
    const asc = q.order !== "desc";
    const afterPos = q.after !== undefined ? this.cursorPos(kind, scope, q.after) : undefined;
    const beforePos = q.before !== undefined ? this.cursorPos(kind, scope, q.before) : undefined;
    const lo = asc ? afterPos : beforePos;
    const hi = asc ? beforePos : afterPos;
    if (lo) params.push(lo.created_at, lo.seq);
    if (hi) params.push(hi.created_at, hi.seq);
    // `before` alone walks backwards from the cursor, so the page is the one right next to it.
    const backwards = q.before !== undefined && q.after === undefined;
    const scanAsc = backwards ? !asc : asc;
    params.push(limit + 1);

    const key = `${scanAsc ? "a" : "d"}${q.parentId !== undefined ? "p" : ""}${q.tag !== undefined ? "t" : ""}${lo ? "l" : ""}${hi ? "h" : ""}`;
    let stmt = this.listStmts.get(key);
    if (!stmt) {
      const dir = scanAsc ? "ASC" : "DESC";
      stmt = this.db.prepare(
        `SELECT ${COLS} FROM records WHERE kind = ? AND project_id = ?` +
          (q.parentId !== undefined ? " AND parent_id = ?" : "") +
          (q.tag !== undefined ? " AND tag = ?" : "") +
          ` AND ${LIVE}` +
          (lo ? " AND (created_at, seq) > (?, ?)" : "") +
          (hi ? " AND (created_at, seq) < (?, ?)" : "") +
          ` ORDER BY created_at ${dir}, seq ${dir} ${BOUND_LIMIT}`,
      ).raw();
      this.listStmts.set(key, stmt);
    }
    const rows = stmt.all(...params) as Row[];
    const hasMore = rows.length > limit;
    if (hasMore) rows.length = limit;
    if (backwards) rows.reverse();
    return { records: rows.map((r) => toRecord<T>(r)), hasMore };
  }

  /** @internal */
  countSync(kind: string, scope: Scope, q: { parentId?: string; tag?: string } | undefined): number {
    const params: unknown[] = [kind, scope.projectId];
    if (q?.parentId !== undefined) params.push(q.parentId);
    if (q?.tag !== undefined) params.push(q.tag);
    params.push(this.now());
    const key = `${q?.parentId !== undefined ? "p" : ""}${q?.tag !== undefined ? "t" : ""}`;
    let stmt = this.countStmts.get(key);
    if (!stmt) {
      stmt = this.db
        .prepare(
          `SELECT COUNT(*) FROM records WHERE kind = ? AND project_id = ?` +
            (q?.parentId !== undefined ? " AND parent_id = ?" : "") +
            (q?.tag !== undefined ? " AND tag = ?" : "") +
            ` AND ${LIVE}`,
        )
        .pluck();
      this.countStmts.set(key, stmt);
    }
    return stmt.get(...params) as number;
  }

  /** @internal */
  sumSync(kind: string, scope: Scope, field: string, q: { parentId?: string; tag?: string } | undefined): number {
    // The field is a JSON path component: a plain name only, never SQL.
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field)) throw new RangeError(`invalid field name ${field}`);
    const params: unknown[] = [`$.${field}`, kind, scope.projectId];
    if (q?.parentId !== undefined) params.push(q.parentId);
    if (q?.tag !== undefined) params.push(q.tag);
    params.push(this.now());
    const key = `${q?.parentId !== undefined ? "p" : ""}${q?.tag !== undefined ? "t" : ""}`;
    let stmt = this.sumStmts.get(key);
    if (!stmt) {
      stmt = this.db
        .prepare(
          `SELECT COALESCE(SUM(json_extract(data, ?)), 0) FROM records WHERE kind = ? AND project_id = ?` +
            (q?.parentId !== undefined ? " AND parent_id = ?" : "") +
            (q?.tag !== undefined ? " AND tag = ?" : "") +
            ` AND ${LIVE}`,
        )
        .pluck();
      this.sumStmts.set(key, stmt);
    }
    return stmt.get(...params) as number;
  }

  private cursorPos(kind: string, scope: Scope, id: string): { created_at: number; seq: number } {
    const pos = this.sCursor.get(kind, id, scope.projectId) as { created_at: number; seq: number } | undefined;
    if (!pos) throw new CursorNotFound(kind, id);
    return pos;
  }

  /**
   * Applies `ops` with atomically()'s semantics inside the CALLER's transaction (the job store
   * commits a job's checkpoint and its record writes together). Any failure throws, so the
   * enclosing transaction rolls everything back.
   */
  applyOpsSync(ops: WriteOp[]): void {
    for (const op of ops) {
      switch (op.op) {
        case "insert":
          this.insertSync(op.kind, op.scope, op.record);
          break;
        case "update": {
          const opts: { expectVersion?: number; expiresAt?: number | null; tag?: string | null } = {};
          if (op.expectVersion !== undefined) opts.expectVersion = op.expectVersion;
          if (op.expiresAt !== undefined) opts.expiresAt = op.expiresAt;
          if (op.tag !== undefined) opts.tag = op.tag;
          // A batch written against a record that is gone must not half-apply.
          if (!this.updateSync(op.kind, op.scope, op.id, op.data, opts)) throw new VersionConflict(op.kind, op.id);
          break;
        }
        case "delete":
          if (!this.deleteSync(op.kind, op.scope, op.id, op.expectVersion) && op.expectVersion !== undefined) {
            throw new VersionConflict(op.kind, op.id);
          }
          break;
        case "cap": {
          // Inside the batch's IMMEDIATE transaction: no other writer can move the total meanwhile.
          const value = this.totalSync(op.scope, op.total);
          if (value > op.max) throw new TotalOverCap(op.total, op.scope.projectId, value, op.max);
          break;
        }
        default:
          throw new TypeError(`unknown write op ${(op as { op: unknown }).op}`);
      }
    }
  }
}

class SqliteCollection<T> implements Collection<T> {
  constructor(
    private readonly store: SqliteRecordStore,
    readonly kind: string,
  ) {}

  async insert(scope: Scope, record: NewRecord<T>): Promise<StoredRecord<T>> {
    return this.store.writing(() => this.store.insertSync(this.kind, scope, record));
  }

  async get(scope: Scope, id: string): Promise<StoredRecord<T> | undefined> {
    return this.store.getSync<T>(this.kind, scope, id);
  }

  async update(
    scope: Scope,
    id: string,
    data: T,
    opts?: { expectVersion?: number; expiresAt?: number | null; tag?: string | null },
  ): Promise<StoredRecord<T> | undefined> {
    return this.store.writing(() => this.store.updateSync(this.kind, scope, id, data, opts));
  }

  async delete(scope: Scope, id: string, opts?: { expectVersion?: number }): Promise<boolean> {
    return this.store.writing(() => this.store.deleteSync(this.kind, scope, id, opts?.expectVersion));
  }

  async list(scope: Scope, query: ListQuery): Promise<ListPage<T>> {
    return this.store.listSync<T>(this.kind, scope, query);
  }

  async count(scope: Scope, query?: { parentId?: string; tag?: string }): Promise<number> {
    return this.store.countSync(this.kind, scope, query);
  }

  async sum(scope: Scope, field: string, query?: { parentId?: string; tag?: string }): Promise<number> {
    return this.store.sumSync(this.kind, scope, field, query);
  }

  mutate<R>(
    scope: Scope,
    id: string,
    change: (cur: StoredRecord<T> | undefined, attempt: number) => Mutation<T, R> | Promise<Mutation<T, R>>,
    opts?: { commit?: (ops: WriteOp[]) => Promise<void> },
  ): Promise<R> {
    return mutateRecord(this, (ops) => this.store.atomically(ops), scope, id, change, opts);
  }
}

/** Opens (creating if needed) the database at `path` and brings its schema up to date. */
export function openSqliteRecordStore(path: string, opts?: SqliteRecordStoreOptions): SqliteRecordStore {
  return new SqliteRecordStore(path, opts);
}

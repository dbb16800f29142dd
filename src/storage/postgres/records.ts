// RecordStore on PostgreSQL: the same generic `records` table as the embedded store (the core
// migration's `postgres` form), read and written through named prepared statements on a pool.
//
// List order under concurrent writers. Lists are ordered by (created_at, seq) and paged by cursor.
// SQLite admits one writer at a time, so a row's seq is always committed before any larger one.
// PostgreSQL commits in any order: writer 1 takes seq 5, writer 2 takes seq 6 and commits, a
// reader pages past 6, then 5 commits behind its cursor and the reader never sees it. Here every
// insert first takes a transaction-scoped advisory lock on its (kind, project) — the scope of one
// list — and only then draws its seq, holding the lock until its transaction ends. So within a
// list, seq order is commit order: a row that becomes visible later always has a larger seq than
// everything visible before it. The price is that inserts into one list serialize for the rest of
// their transaction (short: a record write, or a job's checkpoint); different lists and all reads,
// updates and deletes do not wait. The alternative of hiding rows newer than the oldest in-flight
// transaction (pg_current_snapshot) was rejected: any long transaction anywhere would hide new
// records from every list, including from the client that just created them.
//
// Compare-and-set: an update or delete with expectVersion is one `… WHERE version = $n` statement,
// which PostgreSQL re-checks against the latest row version under the row lock, so two writers
// holding the same version cannot both succeed.
import type pg from "pg";
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
} from "../types.js";
import { mutateRecord } from "../mutate.js";
import type { Migration } from "../sqlite-migrations.js";
import { applyPostgresMigrations, appliedPostgresMigrations } from "./migrations.js";
import { inTransaction, sqlState } from "./pool.js";

/** Anything that runs a query: the pool, or one client inside a transaction. */
type Queryable = Pick<pg.Pool, "query"> | pg.PoolClient;

interface Row {
  id: string;
  project_id: string;
  parent_id: string;
  created_at: number;
  expires_at: number | null;
  tag: string | null;
  version: number;
  data: string;
}

type UpdateOpts = { expectVersion?: number; expiresAt?: number | null; tag?: string | null };

const COLS = "id, project_id, parent_id, created_at, expires_at, tag, version, data";
const LIVE = (n: number) => `(expires_at IS NULL OR expires_at > $${n})`;
// The advisory key of one list: (kind, project). One-bigint key space (migrations use two ints).
const LIST_LOCK_KEY = (kind: string, project: string) => `hashtextextended('records/' || ${kind} || '/' || ${project}, 0)`;

const S = {
  insert: {
    name: "atrium_records_insert",
    text: `INSERT INTO records (kind, id, project_id, parent_id, created_at, expires_at, tag, data)
           SELECT $1::text, $2::text, $3::text, $4::text, $5::bigint, $6::bigint, $7::text, $8::text
           FROM (SELECT pg_advisory_xact_lock(${LIST_LOCK_KEY("$1::text", "$3::text")})) AS list_lock`,
  },
  get: { name: "atrium_records_get", text: `SELECT ${COLS} FROM records WHERE kind = $1 AND id = $2 AND project_id = $3 AND ${LIVE(4)}` },
  exists: { name: "atrium_records_exists", text: `SELECT 1 FROM records WHERE kind = $1 AND id = $2 AND project_id = $3 AND ${LIVE(4)}` },
  cursor: { name: "atrium_records_cursor", text: `SELECT created_at, seq FROM records WHERE kind = $1 AND id = $2 AND project_id = $3` },
  // A false flag leaves the column alone, so `undefined` (keep) and `null` (clear) stay distinct.
  update: {
    name: "atrium_records_update",
    text: `UPDATE records SET data = $1, version = version + 1,
             expires_at = CASE WHEN $2::boolean THEN $3::bigint ELSE expires_at END,
             tag = CASE WHEN $4::boolean THEN $5::text ELSE tag END
           WHERE kind = $6 AND id = $7 AND project_id = $8 AND ${LIVE(9)} AND ($10::integer IS NULL OR version = $10)
           RETURNING ${COLS}`,
  },
  // Deliberately ignores expiry: the sweeper deletes records that get() already hides.
  delete: {
    name: "atrium_records_delete",
    text: `DELETE FROM records WHERE kind = $1 AND id = $2 AND project_id = $3 AND ($4::integer IS NULL OR version = $4)`,
  },
  expired: {
    name: "atrium_records_expired",
    text: `SELECT ${COLS}, kind FROM records WHERE expires_at IS NOT NULL AND expires_at <= $1 ORDER BY expires_at, seq LIMIT $2`,
  },
  // BIGINT arrives as a string from pg; a float8 is exact up to 2^53 bytes.
  total: { name: "atrium_record_totals_get", text: `SELECT total::float8 AS total FROM record_totals WHERE project_id = $1 AND name = $2` },
  getMeta: { name: "atrium_meta_get", text: `SELECT value FROM meta WHERE key = $1` },
  setMeta: {
    name: "atrium_meta_set",
    text: `INSERT INTO meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
  },
  lockLists: {
    name: "atrium_records_lock_lists",
    // Sorted, so two batches inserting into the same lists lock them in the same order.
    text: `SELECT pg_advisory_xact_lock(k) FROM (SELECT DISTINCT ${LIST_LOCK_KEY("l.kind", "l.project")} AS k
             FROM unnest($1::text[], $2::text[]) AS l(kind, project) ORDER BY k) AS keys`,
  },
} as const;

function toRecord<T>(r: Row): StoredRecord<T> {
  return {
    id: r.id,
    projectId: r.project_id,
    parentId: r.parent_id,
    createdAt: r.created_at,
    expiresAt: r.expires_at,
    tag: r.tag,
    version: r.version,
    data: JSON.parse(r.data) as T,
  };
}

function encode(data: unknown): string {
  return JSON.stringify(data) ?? "null";
}

const DEADLOCK_ATTEMPTS = 3;

/**
 * Runs a whole transaction again when PostgreSQL broke a deadlock by aborting it (40P01): it was
 * rolled back, so running it again applies it once. Two batches updating the same records in
 * opposite orders can meet this; it is not a conflict the caller decided on.
 */
export async function retryOnDeadlock<T>(f: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await f();
    } catch (err) {
      if (sqlState(err) !== "40P01" || attempt >= DEADLOCK_ATTEMPTS) throw err;
    }
  }
}

function wallClock(): number {
  return Math.floor(Date.now() / 1000);
}

function filterKey(q: { parentId?: string; tag?: string } | undefined): string {
  return `${q?.parentId !== undefined ? "p" : ""}${q?.tag !== undefined ? "t" : ""}`;
}

export interface PostgresRecordStoreOptions {
  /** Clock in Unix seconds (expiry checks). Tests inject one; default is the wall clock. */
  now?: () => number;
}

export class PostgresRecordStore implements RecordStore {
  private readonly now: () => number;
  private readonly collections = new Map<string, PostgresCollection<unknown>>();
  private closed = false;

  constructor(
    readonly pool: pg.Pool,
    opts: PostgresRecordStoreOptions = {},
  ) {
    this.now = opts.now ?? wallClock;
  }

  /** Applies the migrations not yet applied (advisory-locked: safe with other instances starting). */
  applyMigrations(migrations: readonly Migration[]): Promise<void> {
    return applyPostgresMigrations(this.pool, migrations);
  }

  appliedMigrations(): Promise<string[]> {
    return appliedPostgresMigrations(this.pool);
  }

  transaction<T>(f: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.pool, f);
  }

  collection<T>(kind: string): Collection<T> {
    let c = this.collections.get(kind);
    if (!c) {
      c = new PostgresCollection<unknown>(this, kind);
      this.collections.set(kind, c);
    }
    return c as Collection<T>;
  }

  async atomically(ops: WriteOp[]): Promise<void> {
    if (ops.length === 0) return;
    await retryOnDeadlock(() => this.transaction((client) => this.applyWrites(client, ops)));
  }

  /**
   * Takes the list locks of every insert among `ops` now, in one fixed order. A transaction that
   * will apply several batches (a job store ending many runs) calls it first, so two such
   * transactions never hold one list each while waiting for the other's.
   */
  async lockLists(client: pg.PoolClient, ops: WriteOp[]): Promise<void> {
    const inserts = ops.filter((op) => op.op === "insert");
    if (inserts.length === 0) return;
    await client.query({ ...S.lockLists, values: [inserts.map((op) => op.kind), inserts.map((op) => op.scope.projectId)] });
  }

  /**
   * Applies `ops` with atomically()'s semantics inside the CALLER's transaction (a job's checkpoint
   * and its record writes commit together). Any failure throws, so the caller's transaction must
   * roll back (or back to its savepoint).
   */
  async applyWrites(client: pg.PoolClient, ops: WriteOp[]): Promise<void> {
    if (ops.filter((op) => op.op === "insert").length > 1) await this.lockLists(client, ops);
    for (const op of ops) {
      switch (op.op) {
        case "insert":
          await this.insertOn(client, op.kind, op.scope, op.record);
          break;
        case "update": {
          const opts: UpdateOpts = {};
          if (op.expectVersion !== undefined) opts.expectVersion = op.expectVersion;
          if (op.expiresAt !== undefined) opts.expiresAt = op.expiresAt;
          if (op.tag !== undefined) opts.tag = op.tag;
          // A batch written against a record that is gone must not half-apply.
          if (!(await this.updateOn(client, op.kind, op.scope, op.id, op.data, opts))) throw new VersionConflict(op.kind, op.id);
          break;
        }
        case "delete":
          if (!(await this.deleteOn(client, op.kind, op.scope, op.id, op.expectVersion)) && op.expectVersion !== undefined) {
            throw new VersionConflict(op.kind, op.id);
          }
          break;
        case "cap": {
          // A fresh snapshot (READ COMMITTED) that includes this transaction's own trigger writes.
          // A writer that added to the total before holds its row lock to commit, so racing
          // batches of one project queue on that row and each reads the total the others left.
          const value = await this.totalOn(client, op.scope, op.total);
          if (value > op.max) throw new TotalOverCap(op.total, op.scope.projectId, value, op.max);
          break;
        }
        default:
          throw new TypeError(`unknown write op ${(op as { op: unknown }).op}`);
      }
    }
  }

  async expired(now: number, limit: number): Promise<Array<{ kind: string; projectId: string; record: StoredRecord<unknown> }>> {
    if (!Number.isFinite(limit)) throw new RangeError(`invalid limit ${limit}`);
    const { rows } = await this.pool.query<Row & { kind: string }>({ ...S.expired, values: [now, Math.max(0, Math.floor(limit))] });
    return rows.map((r) => ({ kind: r.kind, projectId: r.project_id, record: toRecord<unknown>(r) }));
  }

  async present(kind: string, ids: string[], field: "id" | "parentId" = "id"): Promise<Set<string>> {
    if (!ids.length) return new Set();
    // One statement per call: an array parameter walks the (kind, id) unique index, or the
    // parent index's kind prefix for parent ids.
    const column = field === "id" ? "id" : "parent_id";
    const { rows } = await this.pool.query<{ v: string }>({ text: `SELECT DISTINCT ${column} AS v FROM records WHERE kind = $1 AND ${column} = ANY($2::text[])`, values: [kind, ids] });
    return new Set(rows.map((r) => r.v));
  }

  total(scope: Scope, name: string): Promise<number> {
    return this.totalOn(this.pool, scope, name);
  }

  /** @internal */
  async totalOn(db: Queryable, scope: Scope, name: string): Promise<number> {
    const { rows } = await db.query<{ total: number }>({ ...S.total, values: [scope.projectId, name] });
    return rows[0]?.total ?? 0;
  }

  async getMeta(key: string): Promise<string | undefined> {
    const { rows } = await this.pool.query<{ value: string }>({ ...S.getMeta, values: [key] });
    return rows[0]?.value;
  }

  async setMeta(key: string, value: string): Promise<void> {
    await this.pool.query({ ...S.setMeta, values: [key, value] });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  // ---- statements, on the pool or inside a caller's transaction ----

  /** @internal */
  async insertOn<T>(db: Queryable, kind: string, scope: Scope, rec: NewRecord<T>): Promise<StoredRecord<T>> {
    const parentId = rec.parentId ?? "";
    const expiresAt = rec.expiresAt ?? null;
    const tag = rec.tag ?? null;
    try {
      await db.query({ ...S.insert, values: [kind, rec.id, scope.projectId, parentId, rec.createdAt, expiresAt, tag, encode(rec.data)] });
    } catch (err) {
      if (sqlState(err) === "23505") throw new DuplicateRecord(kind, rec.id);
      throw err;
    }
    return { id: rec.id, projectId: scope.projectId, parentId, createdAt: rec.createdAt, expiresAt, tag, version: 1, data: rec.data };
  }

  /** @internal */
  async getOn<T>(db: Queryable, kind: string, scope: Scope, id: string): Promise<StoredRecord<T> | undefined> {
    const { rows } = await db.query<Row>({ ...S.get, values: [kind, id, scope.projectId, this.now()] });
    return rows[0] && toRecord<T>(rows[0]);
  }

  /** @internal */
  async updateOn<T>(db: Queryable, kind: string, scope: Scope, id: string, data: T, opts: UpdateOpts | undefined): Promise<StoredRecord<T> | undefined> {
    const ver = opts?.expectVersion ?? null;
    const now = this.now();
    const values = [encode(data), opts?.expiresAt !== undefined, opts?.expiresAt ?? null, opts?.tag !== undefined, opts?.tag ?? null, kind, id, scope.projectId, now, ver];
    const { rows } = await db.query<Row>({ ...S.update, values });
    if (rows[0]) return toRecord<T>(rows[0]);
    if (ver !== null && (await db.query({ ...S.exists, values: [kind, id, scope.projectId, now] })).rowCount) {
      throw new VersionConflict(kind, id);
    }
    return undefined;
  }

  /** @internal */
  async deleteOn(db: Queryable, kind: string, scope: Scope, id: string, expectVersion: number | undefined): Promise<boolean> {
    const ver = expectVersion ?? null;
    if ((await db.query({ ...S.delete, values: [kind, id, scope.projectId, ver] })).rowCount) return true;
    // Only a conditional delete can fail on a record that exists; the cursor lookup ignores expiry.
    if (ver !== null && (await db.query({ ...S.cursor, values: [kind, id, scope.projectId] })).rowCount) {
      throw new VersionConflict(kind, id);
    }
    return false;
  }

  /** @internal */
  async list<T>(kind: string, scope: Scope, q: ListQuery): Promise<ListPage<T>> {
    if (!Number.isFinite(q.limit)) throw new RangeError(`invalid list limit ${q.limit}`);
    const limit = Math.max(0, Math.floor(q.limit));
    const asc = q.order !== "desc";
    // Position keys of the cursors, in ascending terms: `lo` excludes everything at or before it,
    // `hi` everything at or after it.
    const afterPos = q.after !== undefined ? await this.cursorPos(kind, scope, q.after) : undefined;
    const beforePos = q.before !== undefined ? await this.cursorPos(kind, scope, q.before) : undefined;
    const lo = asc ? afterPos : beforePos;
    const hi = asc ? beforePos : afterPos;
    // `before` alone walks backwards from the cursor, so the page is the one right next to it.
    const backwards = q.before !== undefined && q.after === undefined;
    const scanAsc = backwards ? !asc : asc;

    const values: unknown[] = [kind, scope.projectId];
    const where = ["kind = $1", "project_id = $2"];
    const param = (v: unknown) => `$${values.push(v)}`;
    if (q.parentId !== undefined) where.push(`parent_id = ${param(q.parentId)}`);
    if (q.tag !== undefined) where.push(`tag = ${param(q.tag)}`);
    where.push(LIVE(values.push(this.now())));
    if (lo) where.push(`(created_at, seq) > (${param(lo.created_at)}, ${param(lo.seq)})`);
    if (hi) where.push(`(created_at, seq) < (${param(hi.created_at)}, ${param(hi.seq)})`);
    const dir = scanAsc ? "ASC" : "DESC";
    const text = `SELECT ${COLS} FROM records WHERE ${where.join(" AND ")} ORDER BY created_at ${dir}, seq ${dir} LIMIT ${param(limit + 1)}`;
    const name = `atrium_records_list_${scanAsc ? "a" : "d"}${filterKey(q)}${lo ? "l" : ""}${hi ? "h" : ""}`;
    const { rows } = await this.pool.query<Row>({ name, text, values });
    const hasMore = rows.length > limit;
    if (hasMore) rows.length = limit;
    if (backwards) rows.reverse();
    return { records: rows.map((r) => toRecord<T>(r)), hasMore };
  }

  /** @internal */
  async aggregate(kind: string, scope: Scope, field: string | undefined, q: { parentId?: string; tag?: string } | undefined): Promise<number> {
    const values: unknown[] = [kind, scope.projectId];
    const where = ["kind = $1", "project_id = $2"];
    if (q?.parentId !== undefined) where.push(`parent_id = $${values.push(q.parentId)}`);
    if (q?.tag !== undefined) where.push(`tag = $${values.push(q.tag)}`);
    where.push(LIVE(values.push(this.now())));
    let what = "count(*)::float8";
    if (field !== undefined) {
      // The field is a JSON key: a plain name only, never SQL. A value that is not a JSON number
      // counts 0, as records without the field do.
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(field)) throw new RangeError(`invalid field name ${field}`);
      const f = `$${values.push(field)}::text`;
      what = `COALESCE(SUM(CASE WHEN json_typeof(data::json -> ${f}) = 'number' THEN (data::json ->> ${f})::float8 END), 0)`;
    }
    const name = `atrium_records_${field === undefined ? "count" : "sum"}_${filterKey(q)}`;
    const { rows } = await this.pool.query<{ n: number }>({ name, text: `SELECT ${what} AS n FROM records WHERE ${where.join(" AND ")}`, values });
    return rows[0]!.n;
  }

  private async cursorPos(kind: string, scope: Scope, id: string): Promise<{ created_at: number; seq: number }> {
    const { rows } = await this.pool.query<{ created_at: number; seq: number }>({ ...S.cursor, values: [kind, id, scope.projectId] });
    if (!rows[0]) throw new CursorNotFound(kind, id);
    return rows[0];
  }
}

class PostgresCollection<T> implements Collection<T> {
  constructor(
    private readonly store: PostgresRecordStore,
    readonly kind: string,
  ) {}

  insert(scope: Scope, record: NewRecord<T>): Promise<StoredRecord<T>> {
    return this.store.insertOn(this.store.pool, this.kind, scope, record);
  }

  get(scope: Scope, id: string): Promise<StoredRecord<T> | undefined> {
    return this.store.getOn<T>(this.store.pool, this.kind, scope, id);
  }

  update(scope: Scope, id: string, data: T, opts?: UpdateOpts): Promise<StoredRecord<T> | undefined> {
    return this.store.updateOn(this.store.pool, this.kind, scope, id, data, opts);
  }

  delete(scope: Scope, id: string, opts?: { expectVersion?: number }): Promise<boolean> {
    return this.store.deleteOn(this.store.pool, this.kind, scope, id, opts?.expectVersion);
  }

  list(scope: Scope, query: ListQuery): Promise<ListPage<T>> {
    return this.store.list<T>(this.kind, scope, query);
  }

  count(scope: Scope, query?: { parentId?: string; tag?: string }): Promise<number> {
    return this.store.aggregate(this.kind, scope, undefined, query);
  }

  sum(scope: Scope, field: string, query?: { parentId?: string; tag?: string }): Promise<number> {
    return this.store.aggregate(this.kind, scope, field, query);
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

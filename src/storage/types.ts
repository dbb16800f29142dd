// Storage interfaces. Services depend only on these; the embedded default (SQLite + local disk)
// and a scale-out implementation (PostgreSQL + S3-compatible object storage) sit behind them.
// Every method is async so a networked engine fits without changing callers.
import type { Readable } from "node:stream";

/** Which tenant a record belongs to. Every read and write names it: tenants are walls. */
export interface Scope {
  projectId: string;
}

/** One stored record: an opaque JSON document plus the few columns the store indexes. */
export interface StoredRecord<T> {
  id: string;
  projectId: string;
  /** Owner resource for nested lists (vector store of a vector store file); "" when none. */
  parentId: string;
  /** Unix seconds. Lists are ordered by (createdAt, insertion order). */
  createdAt: number;
  /** Unix seconds; the expiry sweeper deletes records past it. null = never. */
  expiresAt: number | null;
  /** One indexed, filterable string (a file's purpose, a status). null = none. */
  tag: string | null;
  /** Optimistic-concurrency counter, bumped on every update. */
  version: number;
  data: T;
}

export interface NewRecord<T> {
  id: string;
  parentId?: string;
  createdAt: number;
  expiresAt?: number | null;
  tag?: string | null;
  data: T;
}

export interface ListQuery {
  /** Only records with this parentId ("" = top-level ones). Omitted: any parent. */
  parentId?: string;
  /**
   * Cursor ids: start strictly after / before this record in the chosen order. `before` returns
   * the page immediately preceding the cursor, still in the chosen order. A cursor id that is not
   * a record of this kind in this project throws CursorNotFound.
   */
  after?: string;
  before?: string;
  limit: number;
  order: "asc" | "desc";
  tag?: string;
}

export interface ListPage<T> {
  records: StoredRecord<T>[];
  hasMore: boolean;
}

/** A write inside an atomic batch. `expectVersion` makes an update or delete conditional. */
export type WriteOp =
  | { op: "insert"; kind: string; scope: Scope; record: NewRecord<unknown> }
  | {
      op: "update";
      kind: string;
      scope: Scope;
      id: string;
      data: unknown;
      expectVersion?: number;
      expiresAt?: number | null;
      tag?: string | null;
    }
  | { op: "delete"; kind: string; scope: Scope; id: string; expectVersion?: number }
  /**
   * Fails the batch with TotalOverCap when the project's running total `total` (a RecordTotal the
   * store keeps), with the batch's earlier ops applied, is above `max`. Placed after the ops that
   * add to the total, it makes "stays within the cap" a condition of their own atomic write.
   */
  | { op: "cap"; scope: Scope; total: string; max: number };

/**
 * A per-project running total of one numeric top-level field of one record kind, kept by the store
 * in the same atomic write as every insert, update and delete of such a record (so no path — a
 * retried compare-and-set, a delete of a record already gone, the expiry sweep — can make it
 * drift). Declared by a migration (recordTotalMigration), which also counts the records already
 * stored. Expired records still count until they are deleted.
 */
export interface RecordTotal {
  /** Unique, stable forever: the total's key. */
  name: string;
  kind: string;
  field: string;
}

/** Thrown by a `cap` op: the total, as the batch would leave it, is above the cap. */
export class TotalOverCap extends Error {
  constructor(
    readonly total: string,
    readonly projectId: string,
    /** What the total would have been with the batch applied. */
    readonly value: number,
    readonly max: number,
  ) {
    super(`total ${total} of project ${projectId} would be ${value}, over its cap of ${max}`);
  }
}

/** Thrown when an `expectVersion` did not match (someone else changed the record first). */
export class VersionConflict extends Error {
  constructor(readonly kind: string, readonly id: string) {
    super(`record ${kind}/${id} changed concurrently`);
  }
}

/** Thrown when an insert reuses an existing (kind, id). */
export class DuplicateRecord extends Error {
  constructor(readonly kind: string, readonly id: string) {
    super(`record ${kind}/${id} already exists`);
  }
}

/** Thrown by list() when an `after`/`before` cursor names no record of that kind and project. */
export class CursorNotFound extends Error {
  constructor(readonly kind: string, readonly id: string) {
    super(`cursor ${id} does not name a ${kind} record`);
  }
}

/**
 * What a `Collection.mutate` change decides: replace the record's data (optionally its expiry and
 * tag), delete it, or write nothing. `also` ops go into the same atomic write; `result` is what
 * mutate() returns once the write has applied.
 */
export type Mutation<T, R> =
  | { write: "update"; data: T; tag?: string | null; expiresAt?: number | null; also?: WriteOp[]; result: R }
  | { write: "delete"; also?: WriteOp[]; result: R }
  | { write: "none"; result: R };

/**
 * How many times `Collection.mutate` reads and decides before it gives up and throws the last
 * VersionConflict. Each retry means another writer committed in between, so reaching it means a
 * record under sustained contention, not a slow one.
 */
export const MUTATE_ATTEMPTS = 20;

export interface Collection<T> {
  readonly kind: string;
  insert(scope: Scope, record: NewRecord<T>): Promise<StoredRecord<T>>;
  /** undefined when absent, in another project, or past its expiresAt. */
  get(scope: Scope, id: string): Promise<StoredRecord<T> | undefined>;
  /**
   * Replaces data (and optionally expiresAt/tag). Throws VersionConflict when expectVersion is
   * given and differs. Returns the new record, or undefined when the record does not exist
   * (a record past its expiresAt counts as absent, as for get()).
   */
  update(
    scope: Scope,
    id: string,
    data: T,
    opts?: { expectVersion?: number; expiresAt?: number | null; tag?: string | null },
  ): Promise<StoredRecord<T> | undefined>;
  /**
   * true when something was deleted. Also removes records past their expiresAt (the sweeper relies
   * on this). Throws VersionConflict when expectVersion is given and the record has another one.
   */
  delete(scope: Scope, id: string, opts?: { expectVersion?: number }): Promise<boolean>;
  list(scope: Scope, query: ListQuery): Promise<ListPage<T>>;
  /**
   * Read → decide → conditional write, retried from the read on any VersionConflict, at most
   * MUTATE_ATTEMPTS times (then the last VersionConflict is thrown). `change` sees the current
   * record (undefined when absent or expired) and says what to write; throwing from it (an
   * ApiError, say) aborts with nothing written. The update/delete is conditional on the version
   * read; `also` ops go in the same atomic write. `commit`, when given, performs that atomic write
   * instead of the store (e.g. a job's `ctx.checkpoint(state, ops)` or `ctx.complete(result, ops)`),
   * so the write shares a transaction with the job's own state.
   */
  mutate<R>(
    scope: Scope,
    id: string,
    change: (cur: StoredRecord<T> | undefined, attempt: number) => Mutation<T, R> | Promise<Mutation<T, R>>,
    opts?: { commit?: (ops: WriteOp[]) => Promise<void> },
  ): Promise<R>;
  count(scope: Scope, query?: { parentId?: string; tag?: string }): Promise<number>;
  /**
   * The sum of the numeric top-level field `field` of the live records (as count() selects them);
   * records without it count 0. An index walk in a SQL store, not a page-by-page read.
   */
  sum(scope: Scope, field: string, query?: { parentId?: string; tag?: string }): Promise<number>;
}

export interface RecordStore {
  collection<T>(kind: string): Collection<T>;
  /**
   * Applies every op or none. Throws VersionConflict / DuplicateRecord / TotalOverCap. An update
   * of a missing record, or a conditional delete of one, is a VersionConflict too (the batch would
   * not apply as written); an unconditional delete of a missing record is a no-op.
   */
  atomically(ops: WriteOp[]): Promise<void>;
  /** Records (any kind, any project) whose expiresAt <= now, oldest first, at most `limit`. */
  expired(now: number, limit: number): Promise<Array<{ kind: string; projectId: string; record: StoredRecord<unknown> }>>;
  /**
   * Of `ids`, the ones that a record of `kind` carries as its id (`field` "id") or as its
   * parentId ("parentId"), in any project, expired or not (an expired record not yet swept still
   * owns what it refers to). For the orphan-blob sweeper, which learns from it which blob keys
   * something still holds; an id lookup is one index probe per id.
   */
  present(kind: string, ids: string[], field?: "id" | "parentId"): Promise<Set<string>>;
  /** The project's running total `name` (a RecordTotal); 0 when nothing has counted towards it. */
  total(scope: Scope, name: string): Promise<number>;
  /** Small key/value table for server state (schema version, bootstrap markers). */
  getMeta(key: string): Promise<string | undefined>;
  setMeta(key: string, value: string): Promise<void>;
  close(): Promise<void>;
}

export interface BlobInfo {
  bytes: number;
  /** Hex MD5 of the content, computed while writing — only when asked for (`md5: true`, always by concat). */
  md5?: string;
}

export class BlobTooLarge extends Error {
  constructor(readonly limit: number) {
    super(`blob exceeds ${limit} bytes`);
  }
}

/**
 * Thrown by a write when the storage has no room left (the file system or the database is full),
 * or while a full disk has not got room back: the caller answers 507 storage_full.
 */
export class StorageFull extends Error {
  constructor(readonly detail: string) {
    super(`storage is full (${detail})`);
  }
}

/** Emitted as the error of the stream returned by BlobStore.get() when the blob does not exist. */
export class BlobNotFound extends Error {
  constructor(readonly key: string) {
    super(`blob ${key} does not exist`);
  }
}

/** One stored blob as BlobStore.list() reports it. */
export interface BlobEntry {
  key: string;
  bytes: number;
  /** When its bytes were last written, in Unix milliseconds. */
  modifiedAt: number;
}

export interface BlobStore {
  /**
   * Streams `source` into the blob `key`. Nothing is visible under `key` until the whole stream
   * is durably written (temp file, fsync, rename). Over `maxBytes` it stops reading, removes the
   * partial data and throws BlobTooLarge. A failing source likewise leaves nothing behind.
   */
  put(key: string, source: AsyncIterable<Uint8Array> | Readable, opts?: { maxBytes?: number; md5?: boolean }): Promise<BlobInfo>;
  /**
   * Concatenates existing blobs, in order, into `key` (streamed, never held in memory). A missing
   * part rejects with BlobNotFound and leaves nothing behind.
   */
  concat(key: string, parts: string[]): Promise<BlobInfo>;
  /**
   * Reads [start, end] inclusive (whole blob when omitted) as a stream of chunks. A missing blob is
   * reported as a BlobNotFound error on the stream (not thrown), so check size() first to answer 404.
   */
  get(key: string, range?: { start: number; end: number }): Readable;
  /** Size in bytes, or undefined when absent. */
  size(key: string): Promise<number | undefined>;
  /** Removes the blob; absent is not an error. */
  delete(key: string): Promise<void>;
  /**
   * Every stored blob whose key starts with `prefix` (all when omitted), in no particular order,
   * streamed (memory does not grow with the number of blobs). Writes still in progress are not
   * listed; a blob written or removed while the listing runs may or may not be.
   */
  list(prefix?: string): AsyncIterable<BlobEntry>;
  /** Removes leftovers of interrupted writes (called at start-up). */
  recover(): Promise<void>;
}

// The JobStore of the embedded default: a `jobs` table in the same SQLite file as the records, so
// that a checkpoint and the record writes it stands for commit in one transaction. That is what
// gives "exactly once in effect": a handler that records its effect together with its progress
// never redoes a finished step after a crash, and never records an effect it no longer owns.
//
// Fencing: every write made on behalf of a run carries `lease_owner = <claim token>` in its WHERE
// clause. A claim writes a fresh token, so once another runner has taken a job over (lease expired)
// the old run's writes match no row and change nothing. Claims are single UPDATE ... RETURNING
// statements inside one IMMEDIATE transaction, and SQLite admits one writer at a time, so two
// runners (two processes sharing the file) never claim the same job.
//
// Statements are prepared once. better-sqlite3 is synchronous; the async methods only wrap results
// so a networked engine fits the same interface.
import type Database from "better-sqlite3";
import type { SqliteRecordStore } from "../storage/sqlite-records.js";
import { VersionConflict, type WriteOp } from "../storage/types.js";
import type { ClaimResult, Job, JobState, JobStore, LeaseStatus, NewJob, RunEnding } from "./types.js";
import { BOUND_LIMIT } from "../common/sqlite.js";

const MIGRATION_ID = "jobs/0001_jobs";
const MIGRATION_SQL = `
  CREATE TABLE jobs (
    seq              INTEGER PRIMARY KEY,
    id               TEXT    NOT NULL UNIQUE,
    kind             TEXT    NOT NULL,
    project_id       TEXT    NOT NULL,
    payload          TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    run_after        INTEGER NOT NULL,
    lease_owner      TEXT,
    lease_expires_at INTEGER,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    progress         TEXT,
    checkpoint       TEXT,
    last_error       TEXT,
    result           TEXT,
    notify_pending   INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    finished_at      INTEGER
  );
  -- A claim walks one of the first two in order and stops after LIMIT rows.
  CREATE INDEX jobs_queued ON jobs (kind, run_after) WHERE state = 'queued';
  CREATE INDEX jobs_leases ON jobs (kind, lease_expires_at) WHERE state = 'running';
  CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
  CREATE INDEX jobs_notify ON jobs (kind) WHERE notify_pending = 1;
`;

// The same table on PostgreSQL (postgres-job-store.ts). Times are BIGINT milliseconds on the
// database's clock there; flags are booleans.
const MIGRATION_POSTGRES = `
  CREATE TABLE jobs (
    seq              BIGINT  GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               TEXT    NOT NULL UNIQUE,
    kind             TEXT    NOT NULL,
    project_id       TEXT    NOT NULL,
    payload          TEXT    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    run_after        BIGINT  NOT NULL,
    lease_owner      TEXT,
    lease_expires_at BIGINT,
    cancel_requested BOOLEAN NOT NULL DEFAULT false,
    progress         TEXT,
    checkpoint       TEXT,
    last_error       TEXT,
    result           TEXT,
    notify_pending   BOOLEAN NOT NULL DEFAULT false,
    created_at       BIGINT  NOT NULL,
    updated_at       BIGINT  NOT NULL,
    finished_at      BIGINT
  );
  CREATE INDEX jobs_queued ON jobs (kind, run_after, seq) WHERE state = 'queued';
  CREATE INDEX jobs_leases ON jobs (kind, lease_expires_at) WHERE state = 'running';
  CREATE INDEX jobs_finished ON jobs (finished_at) WHERE finished_at IS NOT NULL;
  CREATE INDEX jobs_notify ON jobs (kind) WHERE notify_pending;
`;

/** The jobs table. The server applies it before the areas' migrations (which may rewrite queued jobs). */
export const JOBS_MIGRATION = { id: MIGRATION_ID, sql: MIGRATION_SQL, postgres: MIGRATION_POSTGRES };


interface Row {
  id: string;
  kind: string;
  project_id: string;
  payload: string;
  state: JobState;
  attempts: number;
  run_after: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  cancel_requested: number;
  progress: string | null;
  checkpoint: string | null;
  last_error: string | null;
  result: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

const COLS = `id, kind, project_id, payload, state, attempts, run_after, lease_owner, lease_expires_at,
  cancel_requested, progress, checkpoint, last_error, result, created_at, updated_at, finished_at`;

const parse = (text: string | null): unknown => (text === null ? null : JSON.parse(text));
const encode = (value: unknown): string => JSON.stringify(value) ?? "null";

function toJob(r: Row): Job {
  return {
    id: r.id,
    kind: r.kind,
    scope: { projectId: r.project_id },
    payload: JSON.parse(r.payload),
    state: r.state,
    attempts: r.attempts,
    runAfter: r.run_after,
    leaseOwner: r.lease_owner,
    leaseExpiresAt: r.lease_expires_at,
    cancelRequested: r.cancel_requested === 1,
    progress: parse(r.progress),
    checkpoint: parse(r.checkpoint),
    lastError: r.last_error,
    result: parse(r.result),
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    finishedAt: r.finished_at,
  };
}

/** Sets for leaving the running state: the lease goes with it. */
const UNLEASE = "lease_owner = NULL, lease_expires_at = NULL";

// Claims. Queued jobs: oldest due first; ties in enqueue order (seq).
const CLAIM_QUEUED_SQL = `UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_owner = :owner,
     lease_expires_at = :leaseUntil, updated_at = :now
   WHERE seq IN (SELECT seq FROM jobs WHERE kind = :kind AND state = 'queued' AND run_after <= :now
                 ORDER BY run_after, seq LIMIT :limit)
   RETURNING ${COLS}`;
const CLAIM_EXPIRED_SQL = `UPDATE jobs SET attempts = attempts + 1, lease_owner = :owner, lease_expires_at = :leaseUntil, updated_at = :now
   WHERE seq IN (SELECT seq FROM jobs WHERE kind = :kind AND state = 'running' AND lease_expires_at <= :now
                   AND cancel_requested = 0
                 ORDER BY lease_expires_at LIMIT :limit)
   RETURNING ${COLS}`;
const CANCEL_ABANDONED_SQL = `UPDATE jobs SET state = 'cancelled', ${UNLEASE}, finished_at = :now, updated_at = :now, notify_pending = :notify
   WHERE kind = :kind AND state = 'running' AND lease_expires_at <= :now AND cancel_requested = 1
   RETURNING ${COLS}`;

/** The lease condition every write of a run carries. */
const HELD = `id = ? AND lease_owner = ? AND state = 'running'`;

// The ends of a run: each applies only while the run holds the job and no cancel was requested.
const UNCANCELLED = `${HELD} AND cancel_requested = 0`;
const SUCCEED_SQL = `UPDATE jobs SET state = 'succeeded', result = ?, ${UNLEASE}, finished_at = ?, updated_at = ?, notify_pending = ?
   WHERE ${UNCANCELLED} RETURNING ${COLS}`;
const FAIL_SQL = `UPDATE jobs SET state = 'failed', last_error = ?, ${UNLEASE}, finished_at = ?, updated_at = ?, notify_pending = ?
   WHERE ${UNCANCELLED} RETURNING ${COLS}`;
const RETRY_LATER_SQL = `UPDATE jobs SET state = 'queued', last_error = ?, run_after = ?, ${UNLEASE}, updated_at = ?
   WHERE ${UNCANCELLED} RETURNING ${COLS}`;
const RELEASE_SQL = `UPDATE jobs SET state = 'queued', attempts = attempts - 1, run_after = ?, ${UNLEASE}, updated_at = ?
   WHERE ${UNCANCELLED} RETURNING ${COLS}`;
const END_CANCELLED_SQL = `UPDATE jobs SET state = 'cancelled', ${UNLEASE}, finished_at = ?, updated_at = ?, notify_pending = ?
   WHERE ${HELD} AND cancel_requested = 1 RETURNING ${COLS}`;

export class SqliteJobStore implements JobStore {
  private readonly db: Database.Database;

  private readonly sInsert: Database.Statement;
  private readonly sGet: Database.Statement;
  private readonly sClaimQueued: Database.Statement;
  private readonly sClaimExpired: Database.Statement;
  private readonly sCancelAbandoned: Database.Statement;
  private readonly sRenew: Database.Statement;
  private readonly sLease: Database.Statement;
  private readonly sProgress: Database.Statement;
  private readonly sCheckpoint: Database.Statement;
  private readonly sSucceed: Database.Statement;
  private readonly sFail: Database.Statement;
  private readonly sRetryLater: Database.Statement;
  private readonly sRelease: Database.Statement;
  private readonly sCancelQueued: Database.Statement;
  private readonly sEndCancelled: Database.Statement;
  private readonly sRequestCancel: Database.Statement;
  private readonly sRetry: Database.Statement;
  private readonly sHasUnfinished: Database.Statement;
  private readonly sUnfinishedCounts: Database.Statement;
  private readonly sHasRunnable: Database.Statement;
  private readonly sPendingNotify: Database.Statement;
  private readonly sAck: Database.Statement;
  private readonly sPurge: Database.Statement;

  private readonly txEnqueue: Database.Transaction<(jobs: NewJob[], now: number) => Job[]>;
  private readonly txClaim: Database.Transaction<
    (kind: string, owner: string, limit: number, now: number, leaseUntil: number, notify: boolean) => ClaimResult
  >;
  private readonly txCheckpoint: Database.Transaction<
    (id: string, owner: string, checkpoint: unknown, ops: WriteOp[], now: number) => LeaseStatus
  >;
  private readonly txEndRunWithOps: Database.Transaction<(run: RunEnding, now: number) => Job | undefined>;
  private readonly txEndRuns: Database.Transaction<(runs: RunEnding[], now: number) => Array<Job | undefined | Error>>;
  private readonly txCancel: Database.Transaction<
    (id: string, now: number, notify: (kind: string) => boolean) => { job: Job; effect: "cancelled" | "requested" | "none" } | undefined
  >;

  constructor(private readonly records: SqliteRecordStore) {
    // The table is created with the store that holds it, once (recorded by id), not on import.
    records.applyMigrations([JOBS_MIGRATION]);
    const db = (this.db = records.db);

    this.sInsert = db.prepare(
      `INSERT INTO jobs (id, kind, project_id, payload, state, run_after, created_at, updated_at)
       VALUES (?, ?, ?, ?, 'queued', ?, ?, ?)
       ON CONFLICT (id) DO NOTHING
       RETURNING ${COLS}`,
    );
    this.sGet = db.prepare(`SELECT ${COLS} FROM jobs WHERE id = ?`);

    this.sClaimQueued = db.prepare(CLAIM_QUEUED_SQL);
    this.sClaimExpired = db.prepare(CLAIM_EXPIRED_SQL);
    this.sCancelAbandoned = db.prepare(CANCEL_ABANDONED_SQL);

    this.sRenew = db.prepare(`UPDATE jobs SET lease_expires_at = ? WHERE ${HELD} RETURNING cancel_requested`).pluck();
    this.sLease = db.prepare(`SELECT cancel_requested FROM jobs WHERE ${HELD}`).pluck();
    this.sProgress = db.prepare(`UPDATE jobs SET progress = ?, updated_at = ? WHERE ${HELD} AND cancel_requested = 0`);
    this.sCheckpoint = db.prepare(`UPDATE jobs SET checkpoint = ?, updated_at = ? WHERE id = ?`);
    this.sSucceed = db.prepare(SUCCEED_SQL);
    this.sFail = db.prepare(FAIL_SQL);
    this.sRetryLater = db.prepare(RETRY_LATER_SQL);
    this.sRelease = db.prepare(RELEASE_SQL);
    this.sEndCancelled = db.prepare(END_CANCELLED_SQL);
    this.sCancelQueued = db.prepare(
      `UPDATE jobs SET state = 'cancelled', finished_at = ?, updated_at = ?, notify_pending = ?
       WHERE id = ? AND state = 'queued' RETURNING ${COLS}`,
    );
    this.sRequestCancel = db.prepare(
      `UPDATE jobs SET cancel_requested = 1, updated_at = ? WHERE id = ? AND state = 'running' RETURNING ${COLS}`,
    );
    this.sRetry = db.prepare(
      `UPDATE jobs SET state = 'queued', attempts = 0, run_after = ?, cancel_requested = 0, finished_at = NULL,
         notify_pending = 0, updated_at = ?
       WHERE id = ? AND state IN ('failed', 'cancelled') RETURNING ${COLS}`,
    );
    // Kinds are passed as one JSON array so that one statement serves any set of kinds.
    const KINDS = `kind IN (SELECT value FROM json_each(:kinds))`;
    this.sUnfinishedCounts = db.prepare(
      "SELECT kind, state, count(*) AS n FROM jobs WHERE state IN ('queued', 'running') GROUP BY kind, state",
    );
    this.sHasUnfinished = db
      .prepare(
        `SELECT EXISTS (SELECT 1 FROM jobs WHERE ${KINDS} AND state = 'queued')
             OR EXISTS (SELECT 1 FROM jobs WHERE ${KINDS} AND state = 'running')`,
      )
      .pluck();
    this.sHasRunnable = db
      .prepare(
        `SELECT EXISTS (SELECT 1 FROM jobs WHERE ${KINDS} AND state = 'queued' AND run_after <= :now)
             OR EXISTS (SELECT 1 FROM jobs WHERE ${KINDS} AND state = 'running' AND lease_expires_at <= :now)`,
      )
      .pluck();
    this.sPendingNotify = db.prepare(`SELECT ${COLS} FROM jobs WHERE ${KINDS} AND notify_pending = 1 LIMIT :limit`);
    this.sAck = db.prepare(`UPDATE jobs SET notify_pending = 0 WHERE id = ?`);
    this.sPurge = db.prepare(
      `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE finished_at IS NOT NULL AND finished_at < ?
                                        AND notify_pending = 0 ${BOUND_LIMIT})`,
    );

    this.txEnqueue = db.transaction((jobs: NewJob[], now: number) => jobs.map((j) => this.insertOne(j, now)));
    this.txClaim = db.transaction((kind, owner, limit, now, leaseUntil, notify) => {
      const cancelled = (this.sCancelAbandoned.all({ kind, now, notify: notify ? 1 : 0 }) as Row[]).map(toJob);
      const args = { kind, owner, now, leaseUntil, limit };
      const claimed = (this.sClaimExpired.all(args) as Row[]).map(toJob);
      if (claimed.length < limit) {
        args.limit = limit - claimed.length;
        for (const row of this.sClaimQueued.all(args) as Row[]) claimed.push(toJob(row));
      }
      return { claimed, cancelled };
    });
    this.txCheckpoint = db.transaction((id, owner, checkpoint, ops, now) => {
      const status = this.leaseStatus(id, owner);
      if (status !== "held") return status;
      this.sCheckpoint.run(encode(checkpoint), now, id);
      this.records.applyOpsSync(ops);
      return "held";
    });
    // Called inside txEndRuns, so it is a savepoint: a failing op undoes this run's end only.
    this.txEndRunWithOps = db.transaction((run: RunEnding, now: number) => this.endRun(run, now));
    this.txEndRuns = db.transaction((runs, now) =>
      runs.map((run) => {
        // Only record writes can fail; the common end without them needs no savepoint.
        if (run.end.state !== "succeeded" || run.end.ops.length === 0) return this.endRun(run, now);
        try {
          return this.txEndRunWithOps(run, now);
        } catch (err) {
          return err instanceof Error ? err : new Error(String(err));
        }
      }),
    );
    this.txCancel = db.transaction((id, now, notify) => {
      const row = this.sGet.get(id) as Row | undefined;
      if (!row) return undefined;
      if (row.state === "queued") {
        return { job: toJob(this.sCancelQueued.get(now, now, notify(row.kind) ? 1 : 0, id) as Row), effect: "cancelled" as const };
      }
      if (row.state === "running" && !row.cancel_requested) {
        return { job: toJob(this.sRequestCancel.get(now, id) as Row), effect: "requested" as const };
      }
      return { job: toJob(row), effect: "none" as const };
    });
  }

  async enqueue(jobs: NewJob[], now: number): Promise<Job[]> {
    return this.txEnqueue.immediate(jobs, now);
  }

  async get(id: string): Promise<Job | undefined> {
    const row = this.sGet.get(id) as Row | undefined;
    return row && toJob(row);
  }

  async claim(kind: string, owner: string, limit: number, now: number, leaseUntil: number, notify: boolean): Promise<ClaimResult> {
    return this.txClaim.immediate(kind, owner, limit, now, leaseUntil, notify);
  }

  async renew(id: string, owner: string, leaseUntil: number): Promise<LeaseStatus> {
    const cancelRequested = this.sRenew.get(leaseUntil, id, owner) as number | undefined;
    return cancelRequested === undefined ? "lost" : cancelRequested ? "cancel-requested" : "held";
  }

  async saveProgress(id: string, owner: string, progress: unknown, now: number): Promise<LeaseStatus> {
    if (this.sProgress.run(encode(progress), now, id, owner).changes === 1) return "held";
    return this.leaseStatus(id, owner);
  }

  async saveCheckpoint(id: string, owner: string, checkpoint: unknown, ops: WriteOp[], now: number): Promise<LeaseStatus> {
    return this.txCheckpoint.immediate(id, owner, checkpoint, ops, now);
  }

  async endRuns(runs: RunEnding[], now: number): Promise<Array<Job | undefined | Error>> {
    return this.txEndRuns.immediate(runs, now);
  }

  async cancel(
    id: string,
    now: number,
    notify: (kind: string) => boolean,
  ): Promise<{ job: Job; effect: "cancelled" | "requested" | "none" } | undefined> {
    return this.txCancel.immediate(id, now, notify);
  }

  async retry(id: string, now: number): Promise<Job | undefined> {
    const row = (this.sRetry.get(now, now, id) ?? this.sGet.get(id)) as Row | undefined;
    return row && toJob(row);
  }

  async hasUnfinished(kinds: string[], runnableAt?: number): Promise<boolean> {
    const k = JSON.stringify(kinds);
    const found = runnableAt === undefined ? this.sHasUnfinished.get({ kinds: k }) : this.sHasRunnable.get({ kinds: k, now: runnableAt });
    return found === 1;
  }

  async unfinishedCounts(): Promise<Array<{ kind: string; state: "queued" | "running"; n: number }>> {
    return this.sUnfinishedCounts.all() as Array<{ kind: string; state: "queued" | "running"; n: number }>;
  }

  async pendingNotifications(kinds: string[], limit: number): Promise<Job[]> {
    return (this.sPendingNotify.all({ kinds: JSON.stringify(kinds), limit }) as Row[]).map(toJob);
  }

  async ackNotification(id: string): Promise<void> {
    this.sAck.run(id);
  }

  async purgeFinished(before: number, limit: number): Promise<number> {
    return this.sPurge.run(before, limit).changes;
  }

  private endRun({ id, owner, end, notify }: RunEnding, now: number): Job | undefined {
    const n = notify ? 1 : 0;
    let row: Row | undefined;
    if (end.state === "succeeded") {
      row = this.sSucceed.get(encode(end.result), now, now, n, id, owner) as Row | undefined;
      if (row) this.records.applyOpsSync(end.ops);
    } else if (end.state === "failed") {
      row = this.sFail.get(end.error, now, now, n, id, owner) as Row | undefined;
    } else if (end.state === "retry") {
      row = this.sRetryLater.get(end.error, end.runAfter, now, id, owner) as Row | undefined;
    } else {
      row = this.sRelease.get(now, now, id, owner) as Row | undefined;
    }
    // Not applied: either a cancel was requested (the run ends cancelled) or the lease is lost.
    row ??= this.sEndCancelled.get(now, now, n, id, owner) as Row | undefined;
    return row && toJob(row);
  }

  private insertOne(job: NewJob, now: number): Job {
    const inserted = this.sInsert.get(job.id, job.kind, job.scope.projectId, encode(job.payload), job.runAfter, now, now) as Row | undefined;
    if (inserted) return toJob(inserted);
    const existing = toJob(this.sGet.get(job.id) as Row);
    if (existing.kind !== job.kind || existing.scope.projectId !== job.scope.projectId) {
      throw new Error(`job id ${job.id} is already used by a ${existing.kind} job of project ${existing.scope.projectId}`);
    }
    return existing;
  }

  private leaseStatus(id: string, owner: string): LeaseStatus {
    const cancelRequested = this.sLease.get(id, owner) as number | undefined;
    return cancelRequested === undefined ? "lost" : cancelRequested ? "cancel-requested" : "held";
  }
}


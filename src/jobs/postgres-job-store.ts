// The JobStore on PostgreSQL, for instances sharing one database. The model is the embedded store's
// (sqlite-job-store.ts): the runner decides, the store applies each change in one statement or
// transaction, fenced by `lease_owner = <claim token>`. What differs is how PostgreSQL keeps that
// true with many writers:
//
// - Claims pick rows with `FOR UPDATE SKIP LOCKED`: concurrent claimers skip each other's rows
//   instead of queueing behind them, and a row is re-checked under its lock, so no job is claimed
//   twice. Fenced updates (`WHERE id = … AND lease_owner = …`) are re-checked the same way.
// - A checkpoint, a completion and a cancel read the job row `FOR UPDATE` before acting on it, so
//   a cancel cannot slip in between a run's lease check and its commit (and the checkpoint's record
//   writes commit in the same transaction, through PostgresRecordStore.applyWrites).
// - Clocks: the runner passes its own clock (`now`), but instances' clocks differ. With
//   `clock: "database"` (the default) every time the runner passes is moved onto the database's
//   clock by an offset (database ms − runner ms) measured with one SELECT at most every
//   SHIFT_TTL_MS, and every time handed back is moved back by it: leases and due times are then
//   compared on one clock whatever the instances' clocks say, and each runner still sees times on
//   its own. The error is one round trip. `clock: "runner"` stores the runner's times as given (an
//   offset of 0), for tests that drive a fake clock, as the embedded store does.
// - Wake-ups: enqueueing or requeueing a job, requesting a cancel and ending a run send NOTIFY
//   atrium_jobs (delivered at commit); watch() LISTENs on its own connection and tells the runner,
//   so another instance's job starts, a cancel stops the run wherever it is, and a wait for a job
//   another instance ran returns, without waiting for a poll or a heartbeat. Polling and the
//   heartbeat stay the fallback (a dropped LISTEN connection reconnects).
import pg from "pg";
import { deferred } from "../common/deferred.js";
import { retryOnDeadlock, type PostgresRecordStore } from "../storage/postgres/records.js";
import type { WriteOp } from "../storage/types.js";
import { JOBS_MIGRATION } from "./sqlite-job-store.js";
import type { ClaimResult, Job, JobEvent, JobState, JobStore, LeaseStatus, NewJob, RunEnding } from "./types.js";

const CHANNEL = "atrium_jobs";
const SHIFT_TTL_MS = 10_000;
const RELISTEN_MS = 1_000;
/** Bytes of job ids per "ended" payload, well under NOTIFY's 8,000-byte limit (an id is ~30). */
const ENDED_EVENT_BYTES = 6_000;

interface Row {
  seq: number;
  id: string;
  kind: string;
  project_id: string;
  payload: string;
  state: JobState;
  attempts: number;
  run_after: number;
  lease_owner: string | null;
  lease_expires_at: number | null;
  cancel_requested: boolean;
  progress: string | null;
  checkpoint: string | null;
  last_error: string | null;
  result: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
}

const COLS = `seq, id, kind, project_id, payload, state, attempts, run_after, lease_owner, lease_expires_at,
  cancel_requested, progress, checkpoint, last_error, result, created_at, updated_at, finished_at`;
const UNLEASE = "lease_owner = NULL, lease_expires_at = NULL";
const HELD = `id = $1 AND lease_owner = $2 AND state = 'running'`;
const UNCANCELLED = `${HELD} AND NOT cancel_requested`;
const DB_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

const parse = (text: string | null): unknown => (text === null ? null : JSON.parse(text));
const encode = (value: unknown): string => JSON.stringify(value) ?? "null";

/** A statement with a stable name, so each connection prepares it once. */
const stmt = (name: string, text: string) => ({ name: `atrium_jobs_${name}`, text });

const S = {
  insert: stmt("insert", `INSERT INTO jobs (id, kind, project_id, payload, state, run_after, created_at, updated_at)
    VALUES ($1, $2, $3, $4, 'queued', $5, $6, $6) ON CONFLICT (id) DO NOTHING RETURNING ${COLS}`),
  get: stmt("get", `SELECT ${COLS} FROM jobs WHERE id = $1`),
  getForUpdate: stmt("get_for_update", `SELECT ${COLS} FROM jobs WHERE id = $1 FOR UPDATE`),
  notify: stmt("notify", `SELECT pg_notify('${CHANNEL}', $1)`),
  notifyMany: stmt("notify_many", `SELECT pg_notify('${CHANNEL}', e) FROM unnest($1::text[]) AS e`),
  // A claim is one statement (one round trip, atomic without a transaction). Runs whose runner
  // vanished after a cancel was requested end cancelled, and their "ended" wake-up is sent with
  // the claim's commit (`told`, joined so that it runs); expired leases are taken over before
  // queued jobs fill what is left of the limit. The three sets of rows are disjoint, so no row is
  // written twice; `claim_tag` says which set a row came from.
  claim: stmt("claim", `WITH cancelled AS (
      UPDATE jobs SET state = 'cancelled', ${UNLEASE}, finished_at = $4, updated_at = $4, notify_pending = $6
      WHERE seq IN (SELECT seq FROM jobs WHERE kind = $1 AND state = 'running' AND lease_expires_at <= $4 AND cancel_requested
                    FOR UPDATE SKIP LOCKED)
      RETURNING ${COLS}),
    expired AS (
      UPDATE jobs SET attempts = attempts + 1, lease_owner = $2, lease_expires_at = $3, updated_at = $4
      WHERE seq IN (SELECT seq FROM jobs WHERE kind = $1 AND state = 'running' AND lease_expires_at <= $4 AND NOT cancel_requested
                    ORDER BY lease_expires_at LIMIT $5 FOR UPDATE SKIP LOCKED)
      RETURNING ${COLS}),
    queued AS (
      UPDATE jobs SET state = 'running', attempts = attempts + 1, lease_owner = $2, lease_expires_at = $3, updated_at = $4
      WHERE seq IN (SELECT seq FROM jobs WHERE kind = $1 AND state = 'queued' AND run_after <= $4
                    ORDER BY run_after, seq LIMIT greatest(0, $5 - (SELECT count(*) FROM expired)) FOR UPDATE SKIP LOCKED)
      RETURNING ${COLS}),
    told AS (SELECT count(pg_notify('${CHANNEL}', json_build_array('ended', kind, id)::text)) FROM cancelled)
    SELECT 'cancelled' AS claim_tag, ${COLS} FROM cancelled, told
    UNION ALL SELECT 'expired', ${COLS} FROM expired
    UNION ALL SELECT 'queued', ${COLS} FROM queued`),
  renew: stmt("renew", `UPDATE jobs SET lease_expires_at = $3 WHERE ${HELD} RETURNING cancel_requested`),
  leaseForUpdate: stmt("lease_for_update", `SELECT cancel_requested FROM jobs WHERE ${HELD} FOR UPDATE`),
  lease: stmt("lease", `SELECT cancel_requested FROM jobs WHERE ${HELD}`),
  progress: stmt("progress", `UPDATE jobs SET progress = $3, updated_at = $4 WHERE ${UNCANCELLED}`),
  checkpoint: stmt("checkpoint", `UPDATE jobs SET checkpoint = $2, updated_at = $3 WHERE id = $1`),
  succeed: stmt("succeed", `UPDATE jobs SET state = 'succeeded', result = $3, ${UNLEASE}, finished_at = $4, updated_at = $4, notify_pending = $5
    WHERE ${UNCANCELLED} RETURNING ${COLS}`),
  // The runs of one batch that succeeded with no record writes (the usual end), with their "ended"
  // wake-ups, in one statement: atomic without a transaction, so the batch costs one round trip
  // (`told` is joined so that it runs, as in the claim). Duplicate ids end once. A wake-up names
  // up to ENDED_EVENT_BYTES of ids of one kind: every instance receives every notification, so one
  // per job would cost each instance a notification for each job any instance ran.
  succeedMany: stmt("succeed_many", `WITH ended AS (
      UPDATE jobs SET state = 'succeeded', result = e.e_result, ${UNLEASE}, finished_at = $4, updated_at = $4, notify_pending = e.e_notify
      FROM unnest($1::text[], $2::text[], $3::text[], $5::boolean[]) AS e(e_id, e_owner, e_result, e_notify)
      WHERE id = e.e_id AND lease_owner = e.e_owner AND state = 'running' AND NOT cancel_requested RETURNING ${COLS}),
    told AS (SELECT count(pg_notify('${CHANNEL}', p)) FROM (
      SELECT '["ended",' || to_json(kind)::text || ',' || string_agg(to_json(id)::text, ',') || ']' AS p
      FROM (SELECT kind, id, sum(octet_length(id) + 3) OVER (PARTITION BY kind ORDER BY id) / ${ENDED_EVENT_BYTES} AS chunk FROM ended) AS r
      GROUP BY kind, chunk) AS events)
    SELECT ${COLS} FROM ended, told`),
  fail: stmt("fail", `UPDATE jobs SET state = 'failed', last_error = $3, ${UNLEASE}, finished_at = $4, updated_at = $4, notify_pending = $5
    WHERE ${UNCANCELLED} RETURNING ${COLS}`),
  retryLater: stmt("retry_later", `UPDATE jobs SET state = 'queued', last_error = $3, run_after = $4, ${UNLEASE}, updated_at = $5
    WHERE ${UNCANCELLED} RETURNING ${COLS}`),
  release: stmt("release", `UPDATE jobs SET state = 'queued', attempts = attempts - 1, run_after = $3, ${UNLEASE}, updated_at = $3
    WHERE ${UNCANCELLED} RETURNING ${COLS}`),
  endCancelled: stmt("end_cancelled", `UPDATE jobs SET state = 'cancelled', ${UNLEASE}, finished_at = $3, updated_at = $3, notify_pending = $4
    WHERE ${HELD} AND cancel_requested RETURNING ${COLS}`),
  cancelQueued: stmt("cancel_queued", `UPDATE jobs SET state = 'cancelled', finished_at = $2, updated_at = $2, notify_pending = $3
    WHERE id = $1 AND state = 'queued' RETURNING ${COLS}`),
  requestCancel: stmt("request_cancel", `UPDATE jobs SET cancel_requested = true, updated_at = $2 WHERE id = $1 AND state = 'running' RETURNING ${COLS}`),
  retry: stmt("retry", `UPDATE jobs SET state = 'queued', attempts = 0, run_after = $2, cancel_requested = false, finished_at = NULL,
      notify_pending = false, updated_at = $2
    WHERE id = $1 AND state IN ('failed', 'cancelled') RETURNING ${COLS}`),
  hasUnfinished: stmt("has_unfinished", `SELECT EXISTS (SELECT 1 FROM jobs WHERE kind = ANY($1::text[]) AND state = 'queued')
      OR EXISTS (SELECT 1 FROM jobs WHERE kind = ANY($1::text[]) AND state = 'running') AS found`),
  hasRunnable: stmt("has_runnable", `SELECT EXISTS (SELECT 1 FROM jobs WHERE kind = ANY($1::text[]) AND state = 'queued' AND run_after <= $2)
      OR EXISTS (SELECT 1 FROM jobs WHERE kind = ANY($1::text[]) AND state = 'running' AND lease_expires_at <= $2) AS found`),
  unfinishedCounts: stmt("unfinished_counts", `SELECT kind, state, count(*)::integer AS n FROM jobs WHERE state IN ('queued', 'running') GROUP BY kind, state`),
  pendingNotify: stmt("pending_notify", `SELECT ${COLS} FROM jobs WHERE kind = ANY($1::text[]) AND notify_pending ORDER BY seq LIMIT $2`),
  ack: stmt("ack", `UPDATE jobs SET notify_pending = false WHERE id = $1`),
  purge: stmt("purge", `DELETE FROM jobs WHERE seq IN (SELECT seq FROM jobs WHERE finished_at IS NOT NULL AND finished_at < $1
      AND NOT notify_pending LIMIT $2 FOR UPDATE SKIP LOCKED)`),
  dbMs: stmt("db_ms", `SELECT ${DB_MS} AS ms`),
};

export interface PostgresJobStoreOptions {
  /** Whose clock leases and due times are compared on (see the top of this file). Default "database". */
  clock?: "database" | "runner";
}

export class PostgresJobStore implements JobStore {
  private readonly clockMode: "database" | "runner";
  private shift: { ms: number; measuredAt: number } | undefined;
  private listened = deferred();
  private readonly ready: Promise<void>;

  constructor(
    private readonly records: PostgresRecordStore,
    opts: PostgresJobStoreOptions = {},
  ) {
    this.clockMode = opts.clock ?? "database";
    // The table is created with the store that holds it, once (recorded by id, advisory-locked).
    this.ready = records.applyMigrations([JOBS_MIGRATION]);
    this.ready.catch(() => {}); // reported by the first call that awaits it
  }

  /** Resolves once the jobs table exists (every method waits for it too). */
  async open(): Promise<this> {
    await this.ready;
    return this;
  }

  async enqueue(jobs: NewJob[], now: number): Promise<Job[]> {
    const { rows, shift } = await this.tx(now, async (c, shift) => {
      const out: Row[] = [];
      for (const job of jobs) out.push(await this.insertOne(c, job, now, shift));
      await announce(c, ...out.filter((r) => r.state === "queued"));
      return out;
    });
    return rows.map((r) => this.toJob(r, shift));
  }

  async get(id: string): Promise<Job | undefined> {
    const shift = await this.currentShift(undefined);
    const { rows } = await this.db().query<Row>({ ...S.get, values: [id] });
    return rows[0] && this.toJob(rows[0], shift);
  }

  async claim(kind: string, owner: string, limit: number, now: number, leaseUntil: number, notify: boolean): Promise<ClaimResult> {
    const shift = await this.currentShift(now);
    const at = now + shift;
    const rows = (await retryOnDeadlock(() => this.db().query<Row & { claim_tag: "cancelled" | "expired" | "queued" }>({ ...S.claim, values: [kind, owner, leaseUntil + shift, at, limit, notify] }))).rows;
    const cancelled = rows.filter((r) => r.claim_tag === "cancelled");
    const expired = rows.filter((r) => r.claim_tag === "expired");
    const queued = rows.filter((r) => r.claim_tag === "queued").sort((a, b) => a.run_after - b.run_after || a.seq - b.seq);
    return { claimed: [...expired, ...queued].map((r) => this.toJob(r, shift)), cancelled: cancelled.map((r) => this.toJob(r, shift)) };
  }

  async renew(id: string, owner: string, leaseUntil: number): Promise<LeaseStatus> {
    const shift = await this.currentShift(undefined);
    const { rows } = await this.db().query<{ cancel_requested: boolean }>({ ...S.renew, values: [id, owner, leaseUntil + shift] });
    return rows[0] === undefined ? "lost" : rows[0].cancel_requested ? "cancel-requested" : "held";
  }

  async saveProgress(id: string, owner: string, progress: unknown, now: number): Promise<LeaseStatus> {
    const shift = await this.currentShift(now);
    if ((await this.db().query({ ...S.progress, values: [id, owner, encode(progress), now + shift] })).rowCount === 1) return "held";
    return leaseStatus((await this.db().query<{ cancel_requested: boolean }>({ ...S.lease, values: [id, owner] })).rows);
  }

  async saveCheckpoint(id: string, owner: string, checkpoint: unknown, ops: WriteOp[], now: number): Promise<LeaseStatus> {
    const { rows } = await this.tx(now, async (c, shift) => {
      // Locked until commit: a cancel or a takeover waits for this checkpoint, or wins before it.
      const status = leaseStatus((await c.query<{ cancel_requested: boolean }>({ ...S.leaseForUpdate, values: [id, owner] })).rows);
      if (status !== "held") return status;
      await c.query({ ...S.checkpoint, values: [id, encode(checkpoint), now + shift] });
      await this.records.applyWrites(c, ops);
      return status;
    });
    return rows;
  }

  async endRuns(runs: RunEnding[], now: number): Promise<Array<Job | undefined | Error>> {
    const out: Array<Job | undefined | Error> = new Array(runs.length);
    // Successes without record writes, the usual end, take one statement for the whole batch; one
    // per run, or a transaction around it, would cost round trips per job. Those it did not apply
    // (a cancel requested, the lease lost) end below as any other run.
    const plain = runs.flatMap((r, i) => (r.end.state === "succeeded" && r.end.ops.length === 0 ? [i] : []));
    if (plain.length > 0) {
      const shift = await this.currentShift(now);
      const values = [plain.map((i) => runs[i]!.id), plain.map((i) => runs[i]!.owner), plain.map((i) => encode((runs[i]!.end as { result: unknown }).result)), now + shift, plain.map((i) => runs[i]!.notify)];
      const ended = new Map<string, Row>();
      for (const row of (await retryOnDeadlock(() => this.db().query<Row>({ ...S.succeedMany, values }))).rows) ended.set(row.id, row);
      for (const i of plain) {
        const row = ended.get(runs[i]!.id);
        if (row === undefined) continue;
        out[i] = this.toJob(row, shift);
        ended.delete(row.id); // the same job twice in a batch ends once
      }
    }
    const rest = runs.flatMap((_, i) => (out[i] === undefined ? [i] : []));
    if (rest.length === 0) return out;
    let ended: { rows: Array<Row | undefined | Error>; shift: number };
    try {
      ended = await this.endInTransaction(runs, rest, now);
    } catch (err) {
      // The successes above are committed: only the runs left for the transaction failed.
      if (rest.length === runs.length) throw err;
      for (const i of rest) out[i] = err instanceof Error ? err : new Error(String(err));
      return out;
    }
    rest.forEach((i, k) => {
      const r = ended.rows[k];
      out[i] = r === undefined || r instanceof Error ? r : this.toJob(r, ended.shift);
    });
    return out;
  }

  /** Ends `runs[i]` for each i of `rest` in one transaction, in that order; a failing completion is that run's Error. */
  private endInTransaction(runs: RunEnding[], rest: number[], now: number): Promise<{ rows: Array<Row | undefined | Error>; shift: number }> {
    return this.tx(now, async (c, shift) => {
      await this.records.lockLists(c, rest.flatMap((i) => (runs[i]!.end.state === "succeeded" ? (runs[i]!.end as { ops: WriteOp[] }).ops : [])));
      const ends: Array<Row | undefined | Error> = [];
      for (const i of rest) {
        const run = runs[i]!;
        // Only record writes can fail; an end without them needs no savepoint.
        if (run.end.state !== "succeeded" || run.end.ops.length === 0) {
          ends.push(await this.endRun(c, run, now, shift));
          continue;
        }
        await c.query("SAVEPOINT end_run");
        try {
          ends.push(await this.endRun(c, run, now, shift));
          await c.query("RELEASE SAVEPOINT end_run");
        } catch (err) {
          await c.query("ROLLBACK TO SAVEPOINT end_run");
          ends.push(err instanceof Error ? err : new Error(String(err)));
        }
      }
      // One NOTIFY statement for the batch: one per run would double a short job's round trips.
      await announce(c, ...ends.filter((r): r is Row => r !== undefined && !(r instanceof Error)));
      return ends;
    });
  }

  async cancel(id: string, now: number, notify: (kind: string) => boolean): Promise<{ job: Job; effect: "cancelled" | "requested" | "none" } | undefined> {
    const { rows, shift } = await this.tx(now, async (c, shift) => {
      // The row stays locked until commit, so what is decided from it still holds when written.
      const row = (await c.query<Row>({ ...S.getForUpdate, values: [id] })).rows[0];
      if (!row) return undefined;
      if (row.state === "queued") {
        const cancelled = (await c.query<Row>({ ...S.cancelQueued, values: [id, now + shift, notify(row.kind)] })).rows[0]!;
        await announce(c, cancelled);
        return { row: cancelled, effect: "cancelled" as const };
      }
      if (row.state === "running" && !row.cancel_requested) {
        const requested = (await c.query<Row>({ ...S.requestCancel, values: [id, now + shift] })).rows[0]!;
        await announce(c, requested);
        return { row: requested, effect: "requested" as const };
      }
      return { row, effect: "none" as const };
    });
    return rows && { job: this.toJob(rows.row, shift), effect: rows.effect };
  }

  async retry(id: string, now: number): Promise<Job | undefined> {
    const { rows, shift } = await this.tx(now, async (c, shift) => {
      const retried = (await c.query<Row>({ ...S.retry, values: [id, now + shift] })).rows[0];
      if (retried) await announce(c, retried);
      return retried ?? (await c.query<Row>({ ...S.get, values: [id] })).rows[0];
    });
    return rows && this.toJob(rows, shift);
  }

  async hasUnfinished(kinds: string[], runnableAt?: number): Promise<boolean> {
    await this.ready;
    if (runnableAt === undefined) return (await this.db().query<{ found: boolean }>({ ...S.hasUnfinished, values: [kinds] })).rows[0]!.found;
    const shift = await this.currentShift(runnableAt);
    return (await this.db().query<{ found: boolean }>({ ...S.hasRunnable, values: [kinds, runnableAt + shift] })).rows[0]!.found;
  }

  async unfinishedCounts(): Promise<Array<{ kind: string; state: "queued" | "running"; n: number }>> {
    await this.ready;
    return (await this.db().query<{ kind: string; state: "queued" | "running"; n: number }>(S.unfinishedCounts)).rows;
  }

  async pendingNotifications(kinds: string[], limit: number): Promise<Job[]> {
    const shift = await this.currentShift(undefined);
    return (await this.db().query<Row>({ ...S.pendingNotify, values: [kinds, limit] })).rows.map((r) => this.toJob(r, shift));
  }

  async ackNotification(id: string): Promise<void> {
    await this.ready;
    await this.db().query({ ...S.ack, values: [id] });
  }

  async purgeFinished(before: number, limit: number): Promise<number> {
    const shift = await this.currentShift(undefined);
    return (await this.db().query({ ...S.purge, values: [before + shift, limit] })).rowCount ?? 0;
  }

  /**
   * LISTENs for what any instance does to a job (see JobStore.watch) and reports it to `onEvent`,
   * due times moved onto the runner's clock. On its own connection (outside the pool), reconnecting
   * after RELISTEN_MS when it drops; until then the runner's polling finds the work.
   */
  watch(onEvent: (event: JobEvent) => void): () => Promise<void> {
    let client: pg.Client | undefined;
    let stopped = false;
    let retry: NodeJS.Timeout | undefined;
    const connect = async () => {
      const c = new pg.Client(this.records.pool.options);
      client = c;
      const again = () => {
        if (stopped || client !== c) return;
        client = undefined;
        c.end().catch(() => {});
        retry = setTimeout(() => void connect(), RELISTEN_MS);
        retry.unref();
      };
      c.on("error", again);
      c.on("end", again);
      c.on("notification", (msg) => {
        for (const event of parseEvents(msg.payload, this.shift?.ms ?? 0)) onEvent(event);
      });
      try {
        await c.connect();
        await c.query(`LISTEN ${CHANNEL}`);
        if (stopped) await c.end();
        else this.listened.resolve();
      } catch {
        again();
      }
    };
    void connect();
    return async () => {
      stopped = true;
      clearTimeout(retry);
      await client?.end().catch(() => {});
    };
  }

  /** Resolves once watch() is listening (for tests that must not enqueue before it is). */
  listening(): Promise<void> {
    return this.listened.promise;
  }

  // ---- helpers ----

  private db(): pg.Pool {
    return this.records.pool;
  }

  /** Runs `f` in a transaction once the table exists, with the clock offset for `now`. */
  private async tx<T>(now: number, f: (c: pg.PoolClient, shift: number) => Promise<T>): Promise<{ rows: T; shift: number }> {
    const shift = await this.currentShift(now);
    // Every `f` here only runs statements, so running it again after a deadlock abort is safe.
    return { rows: await retryOnDeadlock(() => this.records.transaction((c) => f(c, shift))), shift };
  }

  /**
   * Database ms − runner ms (0 with the runner's clock), re-measured at most every SHIFT_TTL_MS
   * against a `now` the runner passed. Calls that get no `now` (renew, purge, reads) reuse the last
   * measurement, whatever its age, and measure against Date.now() only when there is none yet.
   */
  private async currentShift(now: number | undefined): Promise<number> {
    await this.ready;
    if (this.clockMode === "runner") return 0;
    const local = performance.now();
    if (this.shift && (now === undefined || local - this.shift.measuredAt < SHIFT_TTL_MS)) return this.shift.ms;
    const { rows } = await this.db().query<{ ms: number }>(S.dbMs);
    this.shift = { ms: rows[0]!.ms - (now ?? Date.now()), measuredAt: local };
    return this.shift.ms;
  }

  private async endRun(c: pg.PoolClient, { id, owner, end, notify }: RunEnding, now: number, shift: number): Promise<Row | undefined> {
    const at = now + shift;
    let row: Row | undefined;
    if (end.state === "succeeded") {
      row = (await c.query<Row>({ ...S.succeed, values: [id, owner, encode(end.result), at, notify] })).rows[0];
      if (row) await this.records.applyWrites(c, end.ops);
    } else if (end.state === "failed") {
      row = (await c.query<Row>({ ...S.fail, values: [id, owner, end.error, at, notify] })).rows[0];
    } else if (end.state === "retry") {
      row = (await c.query<Row>({ ...S.retryLater, values: [id, owner, end.error, end.runAfter + shift, at] })).rows[0];
    } else {
      row = (await c.query<Row>({ ...S.release, values: [id, owner, at] })).rows[0];
    }
    // Not applied: either a cancel was requested (the run ends cancelled) or the lease is lost.
    row ??= (await c.query<Row>({ ...S.endCancelled, values: [id, owner, at, notify] })).rows[0];
    return row;
  }

  private async insertOne(c: pg.PoolClient, job: NewJob, now: number, shift: number): Promise<Row> {
    const values = [job.id, job.kind, job.scope.projectId, encode(job.payload), job.runAfter + shift, now + shift];
    const inserted = (await c.query<Row>({ ...S.insert, values })).rows[0];
    if (inserted) return inserted;
    const existing = (await c.query<Row>({ ...S.get, values: [job.id] })).rows[0]!;
    if (existing.kind !== job.kind || existing.project_id !== job.scope.projectId) {
      throw new Error(`job id ${job.id} is already used by a ${existing.kind} job of project ${existing.project_id}`);
    }
    return existing;
  }

  private toJob(r: Row, shift: number): Job {
    const back = (t: number | null) => (t === null ? null : t - shift);
    return {
      id: r.id,
      kind: r.kind,
      scope: { projectId: r.project_id },
      payload: JSON.parse(r.payload),
      state: r.state,
      attempts: r.attempts,
      runAfter: r.run_after - shift,
      leaseOwner: r.lease_owner,
      leaseExpiresAt: back(r.lease_expires_at),
      cancelRequested: r.cancel_requested,
      progress: parse(r.progress),
      checkpoint: parse(r.checkpoint),
      lastError: r.last_error,
      result: parse(r.result),
      createdAt: r.created_at - shift,
      updatedAt: r.updated_at - shift,
      finishedAt: back(r.finished_at),
    };
  }
}

/**
 * Tells every listening instance about rows a transaction is writing (sent when it commits), in
 * one statement: a queued job is due, a running one has a cancel request, a finished one ended.
 */
async function announce(c: pg.PoolClient, ...rows: Row[]): Promise<void> {
  const events: string[] = [];
  for (const r of rows) {
    if (r.state === "queued") events.push(JSON.stringify(["due", r.kind, r.run_after]));
    else if (r.state === "running" && r.cancel_requested) events.push(JSON.stringify(["cancel-requested", r.kind, r.id]));
    else if (r.state !== "running") events.push(JSON.stringify(["ended", r.kind, r.id]));
  }
  if (events.length === 1) await c.query({ ...S.notify, values: events });
  else if (events.length > 1) await c.query({ ...S.notifyMany, values: [events] });
}

/**
 * The JobEvents of a NOTIFY payload (due times moved back by `shift`); none if malformed. "ended"
 * names one job or several of one kind: `["ended", kind, id, id, ...]`.
 */
function parseEvents(payload: string | undefined, shift: number): JobEvent[] {
  let e: unknown;
  try {
    e = JSON.parse(payload ?? "");
  } catch {
    return [];
  }
  if (!Array.isArray(e) || typeof e[1] !== "string") return [];
  const kind = e[1];
  if (e[0] === "due" && typeof e[2] === "number") return [{ type: "due", kind, runAfter: e[2] - shift }];
  if (e[0] === "cancel-requested" && typeof e[2] === "string") return [{ type: "cancel-requested", kind, id: e[2] }];
  if (e[0] === "ended") return e.slice(2).flatMap((id) => (typeof id === "string" ? [{ type: "ended" as const, kind, id }] : []));
  return [];
}

function leaseStatus(rows: Array<{ cancel_requested: boolean }>): LeaseStatus {
  return rows[0] === undefined ? "lost" : rows[0].cancel_requested ? "cancel-requested" : "held";
}

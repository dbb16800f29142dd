// The orphan-blob sweeper: a periodic durable job (`storage.sweep-orphans`) that removes blobs no
// record holds any more. Orphans come from a blob removal that failed after its record's deletion
// had committed (the delete still succeeds for the caller: the record is what the API shows), and
// from a crash between writing a blob and recording it.
//
// Which blobs are held is asked of their owners: each area that stores blobs declares the key
// prefix of its blobs and answers, for a batch of keys, which ones a record of its still holds
// (RecordStore.present: one index probe per key). A key no owner claims is never removed.
//
// A blob is only considered once it is older than the grace period: every writer records a blob
// right after writing it, so a young unrecorded blob is a write in flight, not an orphan. Writes
// still streaming sit in tmp/ and are not listed at all. The window this leaves: a key written
// again (a batch resumed after a crash rewrites its output under the file id it chose before)
// after a pass listed the old blob and before the pass removes it; holders are asked per batch of
// keys, right before that batch's removals, which keeps the window to one batch's lookups.
//
// Each run enqueues the next one (job ids name the time slot, so a restart or a second process
// enqueueing the same slot adds nothing): the schedule survives restarts like any job.
import type { Logger } from "pino";
import type { BlobEntry, BlobStore } from "../storage/types.js";
import type { JobContext } from "./handler.js";
import type { JobRunner } from "./runner.js";

export const STORAGE_SWEEP_ORPHANS_JOB = "storage.sweep-orphans";

/** Blobs of one kind, named by key prefix, and how to learn which of them are still held. */
export interface BlobOwner {
  /** Every key of this owner's blobs starts with it ("file-", "video_"); prefixes do not overlap. */
  prefix: string;
  /** Of `keys` (each starting with `prefix`), the ones a record still holds. */
  held(keys: string[]): Promise<Set<string>>;
}

export interface OrphanSweepOptions {
  /** Blobs written less than this long ago are never removed. Default 1 hour. */
  graceMs?: number;
  /** Time between runs. Default 1 hour. */
  intervalMs?: number;
  /** Keys asked of an owner at once. Default 500. */
  batch?: number;
}

export interface SweepResult {
  /** Blobs listed. */
  listed: number;
  /** Blobs no record holds that were old enough, and were removed. */
  removed: number;
  removedBytes: number;
}

const DEFAULT_GRACE_MS = 3600_000;
const DEFAULT_INTERVAL_MS = 3600_000;
// The job belongs to no project.
const SYSTEM_SCOPE = { projectId: "" };

export class OrphanBlobSweeper {
  private readonly owners: BlobOwner[] = [];
  readonly graceMs: number;
  readonly intervalMs: number;
  private readonly batch: number;

  constructor(
    private readonly blobs: BlobStore,
    private readonly runner: JobRunner,
    private readonly log: Logger,
    opts: OrphanSweepOptions = {},
  ) {
    this.graceMs = opts.graceMs ?? DEFAULT_GRACE_MS;
    this.intervalMs = opts.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.batch = opts.batch ?? 500;
    runner.register<null, SweepResult>(STORAGE_SWEEP_ORPHANS_JOB, (ctx) => this.run(ctx), {
      concurrency: 1,
      maxAttempts: 3,
      backoff: { baseMs: 10_000, maxMs: 300_000 },
      leaseMs: 60_000,
    });
    // A failed run is logged; the next slot's run is queued already.
    runner.onFinished(STORAGE_SWEEP_ORPHANS_JOB, async (job) => {
      if (job.state !== "succeeded") this.log.error({ jobId: job.id, error: job.lastError }, "orphan blob sweep failed");
    });
  }

  /** Declares the blobs whose keys start with `owner.prefix`. */
  own(owner: BlobOwner): void {
    if (this.owners.some((o) => o.prefix.startsWith(owner.prefix) || owner.prefix.startsWith(o.prefix)))
      throw new Error(`blob prefix '${owner.prefix}' overlaps another owner's`);
    this.owners.push(owner);
  }

  /** Enqueues the current time slot's run (a no-op when it exists). Needs the runner's store open. */
  async start(): Promise<void> {
    const slot = Math.floor(this.runner.now() / this.intervalMs);
    await this.runner.enqueue(SYSTEM_SCOPE, STORAGE_SWEEP_ORPHANS_JOB, null, { id: this.jobId(slot) });
  }

  /** One pass over every blob; `signal` stops it between batches. */
  async sweep(signal?: AbortSignal): Promise<SweepResult> {
    const result: SweepResult = { listed: 0, removed: 0, removedBytes: 0 };
    const cutoff = Date.now() - this.graceMs;
    const pending = new Map<BlobOwner, BlobEntry[]>();
    for await (const entry of this.blobs.list()) {
      signal?.throwIfAborted();
      result.listed++;
      if (entry.modifiedAt > cutoff) continue;
      const owner = this.owners.find((o) => entry.key.startsWith(o.prefix));
      if (!owner) continue;
      const batch = pending.get(owner) ?? [];
      batch.push(entry);
      pending.set(owner, batch);
      if (batch.length >= this.batch) {
        pending.delete(owner);
        await this.removeUnheld(owner, batch, result);
      }
    }
    for (const [owner, batch] of pending) {
      signal?.throwIfAborted();
      await this.removeUnheld(owner, batch, result);
    }
    return result;
  }

  private async removeUnheld(owner: BlobOwner, batch: BlobEntry[], result: SweepResult): Promise<void> {
    const held = await owner.held(batch.map((e) => e.key));
    for (const e of batch) {
      if (held.has(e.key)) continue;
      await this.blobs.delete(e.key);
      result.removed++;
      result.removedBytes += e.bytes;
    }
  }

  private async run(ctx: JobContext<null, unknown, SweepResult>): Promise<SweepResult> {
    // The next run is queued first, so a run that fails for good does not end the schedule.
    const next = Math.floor(this.runner.now() / this.intervalMs) + 1;
    await this.runner.enqueue(SYSTEM_SCOPE, STORAGE_SWEEP_ORPHANS_JOB, null, { id: this.jobId(next), runAfter: next * this.intervalMs });
    const result = await this.sweep(ctx.signal);
    if (result.removed > 0) this.log.warn(result, "removed orphaned blobs");
    else this.log.info(result, "orphan blob sweep found nothing to remove");
    return result;
  }

  private jobId(slot: number): string {
    return `${STORAGE_SWEEP_ORPHANS_JOB}:${slot}`;
  }
}

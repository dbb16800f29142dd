// Running a batch: one durable job per batch (BATCHES_RUN_JOB). Validation (validate.ts) checks
// the whole input first; then the requests run in slices, each committed with the runner's
// checkpoint (slices.ts); finalizing writes the output and error files and ends the batch
// (finalize.ts). After a crash or SIGKILL the next run starts at the first slice not committed:
// a request whose result was recorded is never run again, and no line reaches the output twice;
// at most the requests of the one unfinished slice run again. Each commit costs the same
// whatever its size, so a batch of fast local requests that fits one slice pays for one
// transaction.
//
// With worker threads (BatchWorkers, pool.ts), the input is checked there, chunk by chunk in
// parallel, and the requests of THREAD_ENDPOINTS (token counting: CPU on the calling thread) run
// there too, a chunk per task: a batch uses the other cores and the event loop only gathers
// results. There `concurrency` is shared among the workers, and each task stops taking requests
// at the slice's deadline and byte budget, as the main thread's loop does. For those endpoints
// the chunks of the first slice run as soon as they are checked, and count only if the whole
// file passes (validation and the first slice in one pass; worker.ts). The same functions
// (checkChunk, runRequests) run on the main thread without workers.
import { setTimeout as sleep } from "node:timers/promises";
import { PermanentJobError, type JobHandler, type KindOptions } from "../../jobs/handler.js";
import type { Job } from "../../jobs/types.js";
import type { Scope, WriteOp } from "../../storage/types.js";
import { isInputGone } from "./input-gone.js";
import { SLICE_KIND, sliceId, type BatchRecord } from "./records.js";
import { finalize } from "./finalize.js";
import { batchesOf, type RunContext, type Runner, type RunSettings, type RunState, type RunStorage } from "./run-state.js";
import { runSlices } from "./slices.js";
import { validateBatch, type Checked } from "./validate.js";

export const BATCHES_RUN_JOB = "batches.run";
export const runJobId = (batchId: string) => `${BATCHES_RUN_JOB}:${batchId}`;

export type { RunSettings } from "./run-state.js";

const TERMINAL = new Set(["failed", "completed", "expired", "cancelled"]);

/** The job that runs a batch, on the given storage with the given settings. */
export function runJob(deps: { storage: RunStorage; settings: RunSettings }): {
  handler: JobHandler<{ batchId: string }, unknown, RunState>;
  options: Partial<KindOptions>;
  settle: (job: Job) => Promise<void>;
} {
  const { settings } = deps;
  const runner: Runner = {
    ...deps,
    workerConcurrency: settings.workers ? Math.max(1, Math.ceil(settings.concurrency / settings.workers.size)) : settings.concurrency,
  };
  return {
    handler: async (ctx) => {
      try {
        return await runBatch(runner, ctx);
      } catch (e) {
        if (isInputGone(e)) throw new PermanentJobError("its input file no longer exists: it was deleted or expired while the batch ran", { cause: e });
        throw e;
      }
    },
    // Short leases: a killed server's batches are picked up seconds after a restart.
    options: { concurrency: 2, leaseMs: 5000 },
    settle: (job) => settleRun(deps.storage, job as Job<{ batchId: string }>),
  };
}

/**
 * A run that ended without ending its batch (the runner gave up on it, or it was cancelled): the
 * batch ends `failed` with the run's last error, or `cancelled` when a cancel was asked for, and
 * the slices it had committed go. Idempotent: the runner calls it again after a restart until it
 * returns.
 */
export async function settleRun(storage: Pick<RunStorage, "records" | "clock">, job: Pick<Job<{ batchId: string }>, "state" | "scope" | "payload" | "checkpoint" | "lastError">): Promise<void> {
  if (job.state === "succeeded") return;
  const scope = job.scope;
  const slices = (job.checkpoint as RunState | null)?.slices ?? 0;
  const sliceOps: WriteOp[] = Array.from({ length: slices }, (_, i) => ({ op: "delete", kind: SLICE_KIND, scope, id: sliceId(job.payload.batchId, i) }));
  await batchesOf(storage).mutate(scope, job.payload.batchId, (cur) => {
    if (!cur || TERMINAL.has(cur.data.status)) return { write: "none", result: undefined };
    const now = storage.clock.now();
    const next: BatchRecord =
      cur.data.status === "cancelling"
        ? { ...cur.data, status: "cancelled", cancelledAt: now }
        : {
            ...cur.data,
            status: "failed",
            failedAt: now,
            errors: [{ code: "batch_failed", line: null, message: `The batch could not run: ${job.lastError ?? "its run ended without a result"}.`, param: null }],
          };
    return { write: "update", data: next, tag: next.status, also: sliceOps, result: undefined };
  });
}

async function runBatch(runner: Runner, ctx: RunContext): Promise<unknown> {
  const scope = ctx.job.scope;
  const rec = await waitForBatch(runner.storage, scope, ctx.job.payload.batchId, ctx.signal);
  if (!rec) throw new PermanentJobError(`batch ${ctx.job.payload.batchId} does not exist`);
  if (TERMINAL.has(rec.data.status)) return null;
  let state: RunState = ctx.job.checkpoint ?? { done: 0, slices: 0 };
  // Set when this run validated the input (not after a restart, which reads the file again).
  let checked: Checked | undefined;

  if (rec.data.status === "validating" || (rec.data.status === "cancelling" && rec.data.inProgressAt === null)) {
    if (rec.data.status === "cancelling") {
      await finalize(runner, ctx, state, "cancelled", null);
      return null;
    }
    const validated = await validateBatch(runner, ctx, rec);
    if (!validated) return null;
    ({ checked, state } = validated);
  }
  if (state.outputFileId) {
    const b = (await batchesOf(runner.storage).get(scope, rec.id))!.data;
    await finalize(runner, ctx, state, b.status === "cancelling" ? "cancelled" : runner.storage.clock.now() >= b.expiresAt ? "expired" : "completed", null);
    return null;
  }
  await runSlices(runner, ctx, rec.id, state, checked);
  return null;
}

/** The batch record, which the creator inserts just after enqueuing the run. */
async function waitForBatch(storage: RunStorage, scope: Scope, id: string, signal: AbortSignal) {
  for (let waited = 0; waited <= 5000; waited += 5) {
    const r = await batchesOf(storage).get(scope, id);
    if (r) return r;
    await sleep(5, undefined, { signal });
  }
  return undefined;
}

// A batch's validation: the whole input file is checked before any request counts. Chunks are
// checked on the workers, several at once, and merged in order; for THREAD_ENDPOINTS the chunks
// of the first slice also run there, ahead of the verdict (validation and the first slice in one
// pass, worker.ts says how).
import { TurnTaker } from "../../common/yield.js";
import type { StoredRecord } from "../../storage/types.js";
import { inputGoneError, isInputGone } from "./input-gone.js";
import { THREAD_ENDPOINTS } from "./endpoints.js";
import { checkChunk, chunkSize, InputCheck, requestChunks, type ChunkCheck, type LineError, type RequestChunk } from "./input.js";
import { BATCH_KIND, type BatchRecord } from "./records.js";
import type { RunResult } from "./run.js";
import { CHUNK_REQUESTS, commit, openInput, type RunContext, type Runner, type RunState } from "./run-state.js";
import type { CheckRun } from "./worker.js";

/** An input file up to this size is read once: validation keeps its chunks for the run. */
const KEEP_CHUNK_BYTES = 16 * 1024 * 1024;

/** What validation leaves: its verdict, the chunks of a small file, and the results of those that ran ahead. */
export interface Checked {
  verdict: { total: number; model: string | null; errors: LineError[] };
  chunks: RequestChunk[] | null;
  ahead: Map<RequestChunk, RunResult>;
}

/**
 * Validates a batch in `validating`: a bad input file ends it `failed` (null is returned);
 * otherwise it moves to `in_progress` with its request count, and the run goes on from the
 * returned state with what validation kept.
 */
export async function validateBatch(runner: Runner, ctx: RunContext, rec: StoredRecord<BatchRecord>): Promise<{ checked: Checked; state: RunState } | null> {
  let checked: Checked;
  try {
    checked = await checkInput(runner, ctx, rec.data);
  } catch (e) {
    // An input File deleted (or expired) before its batch ran: no retry brings it back.
    if (!isInputGone(e)) throw e;
    checked = { verdict: { total: 0, model: null, errors: [inputGoneError(rec.data.inputFileId)] }, chunks: null, ahead: new Map() };
  }
  const check = checked.verdict;
  const now = runner.storage.clock.now();
  if (check.errors.length) {
    await ctx.complete(null, [
      {
        op: "update",
        kind: BATCH_KIND,
        scope: ctx.job.scope,
        id: rec.id,
        data: { ...rec.data, status: "failed", failedAt: now, errors: check.errors, requestCounts: { total: check.total, completed: 0, failed: 0 } } satisfies BatchRecord,
        tag: "failed",
        expectVersion: rec.version,
      },
    ]);
    return null;
  }
  const state: RunState = { done: 0, slices: 0, files: { output: runner.storage.files.newId(), error: runner.storage.files.newId() } };
  await commit(runner, ctx, state, (b) =>
    b.status === "validating" ? { ...b, status: "in_progress", inProgressAt: now, model: check.model, requestCounts: { total: check.total, completed: 0, failed: 0 } } : { ...b, inProgressAt: now, requestCounts: { total: check.total, completed: 0, failed: 0 } },
  );
  return { checked, state };
}

/**
 * Checks the whole input file: the number of requests, or the errors (line order, at most
 * MAX_LISTED_ERRORS). Chunks are checked on the workers, several at once, and merged in order.
 * For THREAD_ENDPOINTS the chunks of the first slice also run there, ahead of the verdict: their
 * results are kept for the run, with the chunks of a small file, which is then read once.
 */
async function checkInput(runner: Runner, ctx: RunContext, batch: BatchRecord): Promise<Checked> {
  const signal = ctx.signal;
  const { storage, settings } = runner;
  const check = new InputCheck();
  const workers = settings.workers;
  const turns = new TurnTaker();
  const chunks: RequestChunk[] | null = ((await storage.files.find(ctx.job.scope, batch.inputFileId))?.bytes ?? Infinity) <= KEEP_CHUNK_BYTES ? [] : null;
  const runAhead = workers !== null && chunks !== null && THREAD_ENDPOINTS.has(batch.endpoint);
  const ahead = new Map<RequestChunk, RunResult>();
  // Ends the tasks still under way when validation stops early (an error, too many requests).
  const stop = new AbortController();
  const tasks = AbortSignal.any([signal, stop.signal]);
  let requests = 0;
  const pending: { chunk: RequestChunk; check?: Promise<ChunkCheck>; checkRun?: Promise<CheckRun> }[] = [];
  const settle = async () => {
    const p = pending.shift()!;
    if (p.check) return check.add(p.chunk, await p.check);
    const r = await p.checkRun!;
    check.add(p.chunk, r.check);
    if (r.run) ahead.set(p.chunk, r.run);
  };
  try {
    for await (const chunk of requestChunks(await openInput(runner, ctx, batch), CHUNK_REQUESTS)) {
      chunks?.push(chunk);
      requests += chunkSize(chunk);
      if (workers) {
        const task =
          runAhead && requests <= settings.sliceLines
            ? { chunk, checkRun: workers.checkRun(chunk, batch.endpoint, batch.principal, runner.workerConcurrency, tasks) }
            : { chunk, check: workers.check(chunk, batch.endpoint, tasks) };
        (task.check ?? task.checkRun)!.catch(() => {}); // awaited in order by settle(); one that fails first must not go unhandled
        pending.push(task);
        if (pending.length < 2 * workers.size) continue;
        await settle();
      } else {
        const turn = turns.check();
        if (turn) await turn;
        check.add(chunk, checkChunk(chunk, batch.endpoint));
      }
      if (check.finished) break;
    }
    while (pending.length) await settle();
  } finally {
    if (pending.length) stop.abort(new Error("validation ended before these chunks"));
  }
  return { verdict: check.end(), chunks, ahead };
}

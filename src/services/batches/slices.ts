// A batch's run after validation, slice by slice: the input is read as a stream in slices of up
// to `sliceLines` requests, `sliceMs` of work or `sliceBytes` of output; each slice runs with at
// most `concurrency` requests at once, and its results (the output and error lines, the counts,
// the usage) commit in ONE transaction with the runner's checkpoint ("slices done: n"). The last
// slice is not committed on its own: finalize.ts writes its lines and ends the batch in one
// transaction. With workers, THREAD_ENDPOINTS run there a chunk per task.
import { setTimeout as sleep } from "node:timers/promises";
import { TurnTaker } from "../../common/yield.js";
import { PermanentJobError } from "../../jobs/handler.js";
import { THREAD_ENDPOINTS, zeroUsage, type Usage } from "./endpoints.js";
import { finalize } from "./finalize.js";
import { chunkSize, requestChunks, subChunk, type RequestChunk } from "./input.js";
import type { BatchWorkers } from "./pool.js";
import { SLICE_KIND, sliceId, type BatchRecord, type SliceRecord } from "./records.js";
import { addUsage, batchesOf, CHUNK_REQUESTS, commit, openInput, type RunContext, type Runner, type RunState } from "./run-state.js";
import { addUsageTo, runRequests, type RequestRange, type RunResult } from "./run.js";
import type { Checked } from "./validate.js";

/**
 * The lines of the slices this run committed, from slice `from` on, so that finalizing writes the
 * output files without reading them back; dropped past HELD_SLICE_BYTES (then they are read back).
 */
export interface HeldSlices {
  from: number;
  output: Uint8Array[];
  errors: Uint8Array[];
  bytes: number;
}
const HELD_SLICE_BYTES = 32 * 1024 * 1024;

const utf8 = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString("utf8");

/** Requests read from the input and not yet run, as ranges of chunks in input order. */
class PendingRequests {
  private ranges: RequestRange[] = [];
  length = 0;

  push(r: RequestRange): void {
    if (r.to <= r.from) return;
    this.ranges.push({ ...r });
    this.length += r.to - r.from;
  }

  /** The first `n` requests (they stay until drop). */
  first(n: number): RequestRange[] {
    const out: RequestRange[] = [];
    for (const r of this.ranges) {
      if (n <= 0) break;
      const k = Math.min(n, r.to - r.from);
      out.push({ chunk: r.chunk, from: r.from, to: r.from + k });
      n -= k;
    }
    return out;
  }

  /** Forgets the first `n` requests: they ran. */
  drop(n: number): void {
    this.length -= n;
    while (n > 0) {
      const r = this.ranges[0]!;
      const k = Math.min(n, r.to - r.from);
      r.from += k;
      n -= k;
      if (r.from === r.to) this.ranges.shift();
    }
  }
}

/**
 * Runs the batch's requests from `state.done` on, slice by slice, then finalizes it (completed,
 * or cancelled or expired when that is noticed between two slices). `checked` is what this run's
 * validation kept (absent after a restart, which reads the file again).
 */
export async function runSlices(runner: Runner, ctx: RunContext, batchId: string, state: RunState, checked: Checked | undefined): Promise<void> {
  const { storage, settings } = runner;
  const scope = ctx.job.scope;
  const current = (await batchesOf(storage).get(scope, batchId))!.data;
  // Requests from the resume point on, in the chunks validation kept or read from the file.
  const from = state.done;
  const ahead = checked?.ahead ?? new Map<RequestChunk, RunResult>();
  async function* requests(): AsyncGenerator<RequestRange> {
    let n = 0;
    for await (const chunk of checked?.chunks ?? requestChunks(await openInput(runner, ctx, current), CHUNK_REQUESTS)) {
      const size = chunkSize(chunk);
      if (n + size > from) yield { chunk, from: Math.max(0, from - n), to: size };
      n += size;
    }
  }
  let held: HeldSlices | null = { from: state.slices, output: [], errors: [], bytes: 0 };
  const slice = new PendingRequests();
  /**
   * Runs one slice (or part of it, at its limits) and commits it; what is left stays in `slice`.
   * When it is the batch's last (`inputDone` and it all ran), it is not committed on its own:
   * finalize writes its lines and ends the batch in one transaction ("finished").
   */
  const flush = async (inputDone: boolean): Promise<"go" | "finished" | "cancelled" | "expired"> => {
    const b = (await batchesOf(storage).get(scope, batchId))!.data;
    if (b.status === "cancelling") return "cancelled";
    if (storage.clock.now() >= b.expiresAt) return "expired";
    if (!slice.length) return "go";
    const started = Date.now();
    const r = await runSlice(runner, b, slice.first(settings.sliceLines), ctx.signal, ahead);
    if (inputDone && r.done === slice.length && state.files) {
      await finalize(runner, ctx, state, "completed", held, r);
      return "finished";
    }
    const id = sliceId(batchId, state.slices);
    const nextState: RunState = { ...state, done: state.done + r.done, slices: state.slices + 1 };
    await commit(runner, ctx, nextState, (cur) => ({ ...cur, usage: addUsage(cur.usage, r.usage), requestCounts: { ...cur.requestCounts, completed: cur.requestCounts.completed + r.completed, failed: cur.requestCounts.failed + r.failed } }), [
      { op: "insert", kind: SLICE_KIND, scope, record: { id, parentId: batchId, createdAt: storage.clock.now(), data: { output: utf8(r.output), errors: utf8(r.errors) } satisfies SliceRecord } },
    ]);
    state = nextState;
    if (held) {
      held.output.push(r.output);
      held.errors.push(r.errors);
      held.bytes += r.output.length + r.errors.length;
      if (held.bytes > HELD_SLICE_BYTES) held = null;
    }
    slice.drop(r.done);
    const rest = settings.sliceIntervalMs - (Date.now() - started);
    if (rest > 0) await sleep(rest, undefined, { signal: ctx.signal });
    return "go";
  };
  // One chunk of input read ahead, to know when the slice being run is the last.
  const source = requests();
  let chunk = await source.next();
  while (!chunk.done) {
    slice.push(chunk.value);
    chunk = await source.next();
    const inputDone = chunk.done === true;
    while (slice.length >= settings.sliceLines || (inputDone && slice.length > 0)) {
      const go = await flush(inputDone);
      if (go === "finished") return;
      if (go !== "go") return finalize(runner, ctx, state, go, held);
    }
  }
  await finalize(runner, ctx, state, "completed", held);
}

/**
 * Runs a slice's requests, taking no new one after `sliceMs` or `sliceBytes` of output: the
 * results of the first `done`, in input order.
 */
async function runSlice(runner: Runner, batch: BatchRecord, ranges: RequestRange[], signal: AbortSignal, ahead: Map<RequestChunk, RunResult>): Promise<RunResult> {
  const { settings } = runner;
  const deadline = Date.now() + settings.sliceMs;
  const workers = settings.workers;
  try {
    if (workers && THREAD_ENDPOINTS.has(batch.endpoint)) return await runOnWorkers(runner, workers, batch, ranges, deadline, signal, ahead);
    return await runRequests(ranges, batch.endpoint, settings.calls[batch.endpoint], batch.principal, signal, { concurrency: settings.concurrency, deadline, maxBytes: settings.sliceBytes, turns: new TurnTaker() });
  } catch (e) {
    // Validated before the run, and files never change: this would be corruption.
    if ((e as Error).name === "InputChangedError") throw new PermanentJobError(`batch ${batch.id}: ${(e as Error).message}`);
    throw e;
  }
}

/**
 * The slice as chunks on the workers (two per worker under way), joined in order; chunks that
 * ran ahead are not run again. `concurrency` is shared among the workers. A piece stops taking
 * requests at the slice's deadline or byte budget like a slice on the main thread; the slice
 * then ends with that piece, and pieces after it are dropped (their requests run again next).
 */
async function runOnWorkers(runner: Runner, workers: BatchWorkers, batch: BatchRecord, ranges: RequestRange[], deadline: number, signal: AbortSignal, ahead: Map<RequestChunk, RunResult>): Promise<RunResult> {
  const { sliceBytes } = runner.settings;
  const pieces: RequestRange[] = [];
  for (const r of ranges) for (let f = r.from; f < r.to; f += CHUNK_REQUESTS) pieces.push({ chunk: r.chunk, from: f, to: Math.min(r.to, f + CHUNK_REQUESTS) });
  // Ends what is left of this slice's tasks when it stops early (an error, a short piece).
  const stop = new AbortController();
  const tasks = AbortSignal.any([signal, stop.signal]);
  const results: RunResult[] = [];
  const running: { piece: RequestRange; result: Promise<RunResult> }[] = [];
  let bytes = 0;
  let taken = 0;
  try {
    for (;;) {
      while (taken < pieces.length && running.length < 2 * workers.size && (taken === 0 || (bytes < sliceBytes && Date.now() <= deadline))) {
        const piece = pieces[taken++]!;
        const ran = piece.from === 0 && piece.to === chunkSize(piece.chunk) ? ahead.get(piece.chunk) : undefined;
        if (ran) ahead.delete(piece.chunk);
        // A copy goes to the worker: the chunk stays whole here for a piece that stops short.
        const result = ran ? Promise.resolve(ran) : workers.run(subChunk(piece.chunk, piece.from, piece.to), batch.endpoint, batch.principal, { concurrency: runner.workerConcurrency, deadline, maxBytes: Math.max(1, sliceBytes - bytes) }, tasks);
        result.catch(() => {}); // awaited in order below; one that fails first must not go unhandled
        running.push({ piece, result });
      }
      const next = running.shift();
      if (!next) break;
      const r = await next.result;
      results.push(r);
      bytes += r.output.length + r.errors.length;
      if (r.done < next.piece.to - next.piece.from) break;
    }
  } finally {
    if (running.length) stop.abort(new Error("the slice ended before these pieces"));
  }
  return joined(results);
}

/** The results of consecutive pieces as one. */
function joined(results: RunResult[]): RunResult {
  let usage: Usage | null = null;
  for (const r of results) if (r.usage) addUsageTo((usage ??= zeroUsage()), r.usage);
  const sum = (f: (r: RunResult) => number) => results.reduce((n, r) => n + f(r), 0);
  return {
    output: Buffer.concat(results.map((r) => r.output)),
    errors: Buffer.concat(results.map((r) => r.errors)),
    completed: sum((r) => r.completed),
    failed: sum((r) => r.failed),
    usage,
    done: sum((r) => r.done),
  };
}

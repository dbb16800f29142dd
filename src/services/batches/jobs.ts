// Running a batch: one durable job per batch. The input is read as a stream in slices of up to
// `sliceLines` requests, `sliceMs` of work or `sliceBytes` of output; each slice runs with at most
// `concurrency` requests at once, and its results (the output and error lines, the counts, the
// usage) commit in ONE transaction with the runner's checkpoint ("slices done: n"). After a crash
// or SIGKILL the next run starts at the first slice not committed: a request whose result was
// recorded is never run again, and no line reaches the output twice; at most the requests of the
// one unfinished slice run again. Finalizing writes the slices, in order, into the output and
// error files (purpose batch_output) — from memory for the slices this run made — and the last
// slice is not committed on its own: its lines go straight into the files, and its counts commit
// with the batch's end (a crash before that runs it again). Each commit costs the same whatever
// its size, so a batch of fast local requests that fits one slice pays for one transaction.
//
// With worker threads (BatchWorkers), the input is checked there, chunk by chunk in parallel,
// and the requests of THREAD_ENDPOINTS (token counting: CPU on the calling thread) run there too,
// a chunk per task: a batch uses the other cores and the event loop only gathers results. There
// `concurrency` is shared among the workers, and each task stops taking requests at the slice's
// deadline and byte budget, as the main thread's loop does. For those endpoints the chunks of the
// first slice run as soon as they are checked, and count only if the whole file passes
// (validation and the first slice in one pass; worker.ts). The same functions (checkChunk,
// runRequests) run on the main thread without workers.
import { setTimeout as sleep } from "node:timers/promises";
import { newId } from "../../common/ids.js";
import { TurnTaker } from "../../common/yield.js";
import { PermanentJobError, type JobContext } from "../../jobs/runner.js";
import { VersionConflict, type Scope, type WriteOp } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { FILE_KIND, newFileId, type FileRecord } from "../files/files.js";
import { BATCH_KIND, type BatchRecord } from "./batches.js";
import { THREAD_ENDPOINTS, zeroUsage, type EndpointCall, type Endpoint, type Usage } from "./endpoints.js";
import { checkChunk, chunkSize, InputCheck, parseLine, requestChunks, requestTexts, subChunk, type ChunkCheck, type LineError, type RequestChunk } from "./input.js";
import { addUsageTo, runRequests, type RequestRange, type RunResult } from "./run.js";
import type { CheckRun } from "./worker.js";
import type { BatchWorkers } from "./workers.js";

export const SLICE_KIND = "batch_slice";

export interface RunnerOptions {
  concurrency: number;
  sliceLines: number;
  /** A slice also ends after this much work (slow upstream calls commit often). */
  sliceMs: number;
  /** …or once its output lines reach this many bytes (large embeddings lines commit in pieces). */
  sliceBytes: number;
  /** Minimum time per slice: a simple throttle (an upstream's rate limit); 0 = none. */
  sliceIntervalMs: number;
  calls: Partial<Record<Endpoint, EndpointCall>>;
  /** Worker threads for checking input and running THREAD_ENDPOINTS; null: all on the main thread. */
  workers: BatchWorkers | null;
}

/** Requests per chunk read from the input: the unit of checking and of a worker's task. */
const CHUNK_REQUESTS = 512;
/** An input file up to this size is read once: validation keeps its chunks for the run. */
const KEEP_CHUNK_BYTES = 16 * 1024 * 1024;

/** What validation leaves: its verdict, the chunks of a small file, and the results of those that ran ahead. */
interface Checked {
  verdict: { total: number; model: string | null; errors: LineError[] };
  chunks: RequestChunk[] | null;
  ahead: Map<RequestChunk, RunResult>;
}

interface RunState {
  /** Requests (non-blank lines) whose results are committed. */
  done: number;
  slices: number;
  /** The output and error files' ids, chosen when the run starts: a finalize that is redone reuses them. */
  files?: { output: string; error: string };
  /** Set once finalizing has begun (runs checkpointed before `files` existed chose them here). */
  outputFileId?: string;
  errorFileId?: string;
}

/** What a slice's requests gave. */
type SliceResult = RunResult;

interface SliceRecord {
  output: string;
  errors: string;
}

const TERMINAL = new Set(["failed", "completed", "expired", "cancelled"]);

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

const sliceId = (batchId: string, n: number) => `${batchId}:${String(n).padStart(6, "0")}`;

/**
 * The lines of the slices this run committed, from slice `from` on, so that finalizing writes the
 * output files without reading them back; dropped past HELD_SLICE_BYTES (then they are read back).
 */
interface HeldSlices {
  from: number;
  output: Uint8Array[];
  errors: Uint8Array[];
  bytes: number;
}
const HELD_SLICE_BYTES = 32 * 1024 * 1024;

function addUsage(a: Usage, b: Usage | null): Usage {
  if (!b) return a;
  const sum = { ...a };
  addUsageTo(sum, b);
  return sum;
}

export function createBatchRunner(deps: ServiceDeps, opts: RunnerOptions) {
  const batches = () => deps.records.collection<BatchRecord>(BATCH_KIND);
  // On the workers a batch's `concurrency` is shared among them.
  const workerConcurrency = opts.workers ? Math.max(1, Math.ceil(opts.concurrency / opts.workers.size)) : opts.concurrency;

  async function waitForBatch(scope: Scope, id: string, signal: AbortSignal) {
    for (let waited = 0; waited <= 5000; waited += 5) {
      const r = await batches().get(scope, id);
      if (r) return r;
      await sleep(5, undefined, { signal });
    }
    return undefined;
  }

  /** Writes `change(current)` with compare-and-set and the runner checkpoint in one transaction. */
  async function commit(ctx: JobContext<{ batchId: string }, RunState>, state: RunState, change: (b: BatchRecord) => BatchRecord, extra: WriteOp[] = []) {
    for (let attempt = 0; ; attempt++) {
      const cur = (await batches().get(ctx.job.scope, ctx.job.payload.batchId))!;
      const next = change(cur.data);
      try {
        await ctx.checkpoint(state, [{ op: "update", kind: BATCH_KIND, scope: ctx.job.scope, id: cur.id, data: next, tag: next.status, expectVersion: cur.version }, ...extra]);
        return next;
      } catch (e) {
        // A cancel moved the record meanwhile: apply the change on top of it.
        if (e instanceof VersionConflict && e.kind === BATCH_KIND && attempt < 50) continue;
        throw e;
      }
    }
  }

  /**
   * Checks the whole input file: the number of requests, or the errors (line order, at most
   * MAX_LISTED_ERRORS). Chunks are checked on the workers, several at once, and merged in order.
   * For THREAD_ENDPOINTS the chunks of the first slice also run there, ahead of the verdict
   * (validation and the first slice in one pass, worker.ts says how): their results are kept for
   * the run, with the chunks of a small file, which is then read once.
   */
  async function checkInput(batch: BatchRecord, signal: AbortSignal): Promise<Checked> {
    const check = new InputCheck();
    const workers = opts.workers;
    const turns = new TurnTaker();
    const chunks: RequestChunk[] | null = ((await deps.blobs.size(batch.inputFileId)) ?? Infinity) <= KEEP_CHUNK_BYTES ? [] : null;
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
      for await (const chunk of requestChunks(deps.blobs, batch.inputFileId, CHUNK_REQUESTS)) {
        chunks?.push(chunk);
        requests += chunkSize(chunk);
        if (workers) {
          const task =
            runAhead && requests <= opts.sliceLines
              ? { chunk, checkRun: workers.checkRun(chunk, batch.endpoint, batch.principal, workerConcurrency, tasks) }
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

  /**
   * Runs a slice's requests, taking no new one after `sliceMs` or `sliceBytes` of output: the
   * results of the first `done`, in input order.
   */
  async function runSlice(batch: BatchRecord, ranges: RequestRange[], signal: AbortSignal, ahead: Map<RequestChunk, RunResult>): Promise<SliceResult> {
    const deadline = Date.now() + opts.sliceMs;
    const workers = opts.workers;
    try {
      if (workers && THREAD_ENDPOINTS.has(batch.endpoint)) return await runOnWorkers(workers, batch, ranges, deadline, signal, ahead);
      return await runRequests(ranges, batch.endpoint, opts.calls[batch.endpoint], batch.principal, signal, { concurrency: opts.concurrency, deadline, maxBytes: opts.sliceBytes, turns: new TurnTaker() });
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
  async function runOnWorkers(workers: BatchWorkers, batch: BatchRecord, ranges: RequestRange[], deadline: number, signal: AbortSignal, ahead: Map<RequestChunk, RunResult>): Promise<SliceResult> {
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
        while (taken < pieces.length && running.length < 2 * workers.size && (taken === 0 || (bytes < opts.sliceBytes && Date.now() <= deadline))) {
          const piece = pieces[taken++]!;
          const ran = piece.from === 0 && piece.to === chunkSize(piece.chunk) ? ahead.get(piece.chunk) : undefined;
          if (ran) ahead.delete(piece.chunk);
          // A copy goes to the worker: the chunk stays whole here for a piece that stops short.
          const result = ran ? Promise.resolve(ran) : workers.run(subChunk(piece.chunk, piece.from, piece.to), batch.endpoint, batch.principal, { concurrency: workerConcurrency, deadline, maxBytes: Math.max(1, opts.sliceBytes - bytes) }, tasks);
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

  /**
   * Writes the output and error files and ends the batch. With `last` (the final slice's results,
   * not committed), those lines are written too and their counts land in the same transaction
   * that ends the batch: a crash before it leaves the slice to run again, its lines recorded once.
   */
  async function finalize(ctx: JobContext<{ batchId: string }, RunState>, state: RunState, end: "completed" | "cancelled" | "expired", held: HeldSlices | null, last?: SliceResult) {
    const scope = ctx.job.scope;
    const batchId = ctx.job.payload.batchId;
    let st = state;
    if (!last && !st.outputFileId) {
      st = { ...state, outputFileId: state.files?.output ?? newFileId(), errorFileId: state.files?.error ?? newFileId() };
      await commit(ctx, st, (b) => (end === "completed" ? { ...b, status: "finalizing", finalizingAt: b.finalizingAt ?? deps.clock.now() } : b));
    }
    const outputFileId = st.outputFileId ?? st.files!.output;
    const errorFileId = st.errorFileId ?? st.files!.error;
    const slices = deps.records.collection<SliceRecord>(SLICE_KIND);
    // Requests never run because the window closed: each one in the error file.
    let expiredLines = "";
    let expiredCount = 0;
    if (end === "expired") {
      let seen = 0;
      const b = (await batches().get(scope, batchId))!.data;
      for await (const chunk of requestChunks(deps.blobs, b.inputFileId, CHUNK_REQUESTS)) {
        const text = requestTexts(chunk);
        for (let i = 0; i < chunkSize(chunk); i++) {
          if (seen++ < st.done) continue;
          const parsed = parseLine(text(i), chunk.lines[i]!, b.endpoint);
          const customId = "customId" in parsed ? parsed.customId : null;
          expiredLines += JSON.stringify({ id: newId("batch_req_"), custom_id: customId, response: null, error: { code: "batch_expired", message: "This request could not be executed before the completion window expired." } }) + "\n";
          expiredCount++;
        }
      }
    }
    // Slices this run committed and still holds are written from memory; earlier ones (a resumed
    // run) are read back. Slices are numbered 0 … st.slices − 1, each committed with its checkpoint.
    const write = async (key: string, field: "output" | "errors", tail = "") => {
      async function* parts() {
        for (let i = 0; i < st.slices; i++) {
          if (held && i >= held.from) {
            const bytes = held[field][i - held.from]!;
            if (bytes.length) yield bytes;
            continue;
          }
          const text = (await slices.get(scope, sliceId(batchId, i)))?.data[field];
          if (text) yield Buffer.from(text);
        }
        if (last?.[field].length) yield last[field];
        if (tail) yield Buffer.from(tail);
      }
      return (await deps.blobs.put(key, parts())).bytes;
    };
    const cur = (await batches().get(scope, batchId))!;
    // A cancel that came while the last slice ran: everything ran, but the batch ends as asked.
    if (last && cur.data.status === "cancelling") end = "cancelled";
    const completed = cur.data.requestCounts.completed + (last?.completed ?? 0);
    const failed = cur.data.requestCounts.failed + (last?.failed ?? 0) + expiredCount;
    // Only files that get lines are written (an empty one would cost an fsync for nothing).
    const outBytes = completed > 0 ? await write(outputFileId, "output") : 0;
    const errBytes = failed > 0 ? await write(errorFileId, "errors", expiredLines) : 0;
    const now = deps.clock.now();
    const fileOps: WriteOp[] = [];
    const fileRec = (id: string, bytes: number, name: string): WriteOp => {
      const rec: FileRecord = { id, bytes, createdAt: now, filename: name, purpose: "batch_output", mimeType: "application/jsonl", expiresAt: cur.data.outputTtl ? now + cur.data.outputTtl : null };
      return { op: "insert", kind: FILE_KIND, scope, record: { id, createdAt: now, expiresAt: rec.expiresAt, tag: rec.purpose, data: rec } };
    };
    if (outBytes > 0) fileOps.push(fileRec(outputFileId, outBytes, `batch_${batchId}_output.jsonl`));
    else await deps.blobs.delete(outputFileId);
    if (errBytes > 0) fileOps.push(fileRec(errorFileId, errBytes, `batch_${batchId}_error.jsonl`));
    else await deps.blobs.delete(errorFileId);
    const sliceIds: WriteOp[] = Array.from({ length: st.slices }, (_, i) => ({ op: "delete", kind: SLICE_KIND, scope, id: sliceId(batchId, i) }));
    const next: BatchRecord = {
      ...cur.data,
      status: end,
      outputFileId: outBytes > 0 ? outputFileId : null,
      errorFileId: errBytes > 0 ? errorFileId : null,
      finalizingAt: end === "completed" ? (cur.data.finalizingAt ?? now) : cur.data.finalizingAt,
      completedAt: end === "completed" ? now : cur.data.completedAt,
      cancelledAt: end === "cancelled" ? now : cur.data.cancelledAt,
      expiredAt: end === "expired" ? now : cur.data.expiredAt,
      requestCounts: { ...cur.data.requestCounts, completed, failed },
      usage: addUsage(cur.data.usage, last?.usage ?? null),
    };
    await ctx.complete(null, [{ op: "update", kind: BATCH_KIND, scope, id: batchId, data: next, tag: next.status, expectVersion: cur.version }, ...fileOps, ...sliceIds]);
  }

  return async function runBatch(ctx: JobContext<{ batchId: string }, RunState>): Promise<unknown> {
    const scope = ctx.job.scope;
    const rec = await waitForBatch(scope, ctx.job.payload.batchId, ctx.signal);
    if (!rec) throw new PermanentJobError(`batch ${ctx.job.payload.batchId} does not exist`);
    if (TERMINAL.has(rec.data.status)) return null;
    let state: RunState = ctx.job.checkpoint ?? { done: 0, slices: 0 };
    // Set when this run validated the input (not after a restart, which reads the file again).
    let checked: Checked | undefined;

    if (rec.data.status === "validating" || (rec.data.status === "cancelling" && rec.data.inProgressAt === null)) {
      if (rec.data.status === "cancelling") {
        await finalize(ctx, state, "cancelled", null);
        return null;
      }
      checked = await checkInput(rec.data, ctx.signal);
      const check = checked.verdict;
      const now = deps.clock.now();
      if (check.errors.length) {
        await ctx.complete(null, [
          {
            op: "update",
            kind: BATCH_KIND,
            scope,
            id: rec.id,
            data: { ...rec.data, status: "failed", failedAt: now, errors: check.errors, requestCounts: { total: check.total, completed: 0, failed: 0 } } satisfies BatchRecord,
            tag: "failed",
            expectVersion: rec.version,
          },
        ]);
        return null;
      }
      state = { done: 0, slices: 0, files: { output: newFileId(), error: newFileId() } };
      await commit(ctx, state, (b) =>
        b.status === "validating" ? { ...b, status: "in_progress", inProgressAt: now, model: check.model, requestCounts: { total: check.total, completed: 0, failed: 0 } } : { ...b, inProgressAt: now, requestCounts: { total: check.total, completed: 0, failed: 0 } },
      );
    }
    if (state.outputFileId) {
      const b = (await batches().get(scope, rec.id))!.data;
      await finalize(ctx, state, b.status === "cancelling" ? "cancelled" : deps.clock.now() >= b.expiresAt ? "expired" : "completed", null);
      return null;
    }

    const current = (await batches().get(scope, rec.id))!.data;
    // Requests from the resume point on, in the chunks validation kept or read from the file.
    const from = state.done;
    const ahead = checked?.ahead ?? new Map<RequestChunk, RunResult>();
    async function* requests(): AsyncGenerator<RequestRange> {
      let n = 0;
      for await (const chunk of checked?.chunks ?? requestChunks(deps.blobs, current.inputFileId, CHUNK_REQUESTS)) {
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
      const b = (await batches().get(scope, rec.id))!.data;
      if (b.status === "cancelling") return "cancelled";
      if (deps.clock.now() >= b.expiresAt) return "expired";
      if (!slice.length) return "go";
      const started = Date.now();
      const r = await runSlice(b, slice.first(opts.sliceLines), ctx.signal, ahead);
      if (inputDone && r.done === slice.length && state.files) {
        await finalize(ctx, state, "completed", held, r);
        return "finished";
      }
      const id = sliceId(rec.id, state.slices);
      const nextState: RunState = { ...state, done: state.done + r.done, slices: state.slices + 1 };
      await commit(ctx, nextState, (cur) => ({ ...cur, usage: addUsage(cur.usage, r.usage), requestCounts: { ...cur.requestCounts, completed: cur.requestCounts.completed + r.completed, failed: cur.requestCounts.failed + r.failed } }), [
        { op: "insert", kind: SLICE_KIND, scope, record: { id, parentId: rec.id, createdAt: deps.clock.now(), data: { output: utf8(r.output), errors: utf8(r.errors) } satisfies SliceRecord } },
      ]);
      state = nextState;
      if (held) {
        held.output.push(r.output);
        held.errors.push(r.errors);
        held.bytes += r.output.length + r.errors.length;
        if (held.bytes > HELD_SLICE_BYTES) held = null;
      }
      slice.drop(r.done);
      const rest = opts.sliceIntervalMs - (Date.now() - started);
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
      while (slice.length >= opts.sliceLines || (inputDone && slice.length > 0)) {
        const go = await flush(inputDone);
        if (go === "finished") return null;
        if (go !== "go") {
          await finalize(ctx, state, go, held);
          return null;
        }
      }
    }
    await finalize(ctx, state, "completed", held);
    return null;
  };
}

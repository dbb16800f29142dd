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
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { newId } from "../../common/ids.js";
import { TurnTaker } from "../../common/yield.js";
import { PermanentJobError, type JobContext } from "../../jobs/runner.js";
import { VersionConflict, type Scope, type WriteOp } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { FILE_KIND, newFileId, type FileRecord } from "../files/files.js";
import { BATCH_KIND, type BatchRecord } from "./batches.js";
import { zeroUsage, type EndpointCall, type Endpoint, type Usage } from "./endpoints.js";
import { checkInput, fileLines, KEEP_PARSED_BYTES, parseLine, type InputLine } from "./input.js";

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
interface SliceResult {
  output: Buffer;
  errors: Buffer;
  completed: number;
  failed: number;
  usage: Usage | null;
  /** Requests run: the first `done` of the slice. */
  done: number;
}

interface SliceRecord {
  output: string;
  errors: string;
}

const TERMINAL = new Set(["failed", "completed", "expired", "cancelled"]);

const sliceId = (batchId: string, n: number) => `${batchId}:${String(n).padStart(6, "0")}`;

/**
 * The lines of the slices this run committed, from slice `from` on, so that finalizing writes the
 * output files without reading them back; dropped past HELD_SLICE_BYTES (then they are read back).
 */
interface HeldSlices {
  from: number;
  output: Buffer[];
  errors: Buffer[];
  bytes: number;
}
const HELD_SLICE_BYTES = 32 * 1024 * 1024;

function addUsageTo(a: Usage, b: Usage): void {
  a.input_tokens += b.input_tokens;
  a.cached_tokens += b.cached_tokens;
  a.output_tokens += b.output_tokens;
  a.reasoning_tokens += b.reasoning_tokens;
  a.total_tokens += b.total_tokens;
}

function addUsage(a: Usage, b: Usage | null): Usage {
  if (!b) return a;
  const sum = { ...a };
  addUsageTo(sum, b);
  return sum;
}

/**
 * JSONL text gathered outside the JavaScript heap. A slice's 10,000 output lines, kept as strings
 * until its end, outlived the young generation and were copied by every scavenge on the way to
 * the old one (a third of a batch's time went to the collector); here each line dies at once.
 */
class LineSink {
  private buf = Buffer.allocUnsafe(64 * 1024);
  private len = 0;
  append(text: string): void {
    const need = this.len + text.length * 3; // UTF-8 takes at most 3 bytes per UTF-16 unit
    if (need > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(next, 0, 0, this.len);
      this.buf = next;
    }
    this.len += this.buf.write(text, this.len, "utf8");
  }
  get length(): number {
    return this.len;
  }
  bytes(): Buffer {
    return this.buf.subarray(0, this.len);
  }
}

/** Ids for a slice's output lines and request ids, from one draw of random bytes (16 bytes each). */
function idPool(n: number) {
  const hex = randomBytes(n * 16).toString("hex");
  let at = 0;
  return () => hex.slice(at, (at += 32));
}

export function createBatchRunner(deps: ServiceDeps, opts: RunnerOptions) {
  const batches = () => deps.records.collection<BatchRecord>(BATCH_KIND);

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
   * Runs a slice's requests, at most `concurrency` at once, taking no new one after `sliceMs`:
   * the results of the first `done` lines, in input order, as output and error JSONL text.
   */
  async function runSlice(batch: BatchRecord, lines: InputLine[], signal: AbortSignal): Promise<SliceResult> {
    const call = opts.calls[batch.endpoint];
    // Each result is turned into its output line as soon as it is there (no result objects kept),
    // and lines go to the sinks in input order as soon as those before them are there.
    const texts: (string | undefined)[] = new Array(lines.length);
    const ok: boolean[] = new Array(lines.length);
    const out = new LineSink();
    const errs = new LineSink();
    let written = 0;
    let completed = 0;
    const flushInOrder = () => {
      for (let t = texts[written]; t !== undefined; t = texts[written]) {
        if (ok[written]) {
          out.append(t);
          completed++;
        } else errs.append(t);
        texts[written++] = undefined;
      }
    };
    const usage = zeroUsage();
    let hasUsage = false;
    const id = idPool(lines.length * 2);
    const deadline = Date.now() + opts.sliceMs;
    // Indices are taken in order and every one taken is run, so the first `next` results are all there.
    let next = 0;
    // One signal per slice, linked to the run's: each request's context listens on it, and a
    // listener per request on the run's own signal would pile up over a whole batch.
    const sliceAbort = new AbortController();
    const onAbort = () => sliceAbort.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const turns = new TurnTaker();
    const worker = async () => {
      // One context per worker and slice: the services read only its principal and signal.
      const ctx = call?.context(batch.principal, sliceAbort.signal);
      // The bytes of the lines in the sinks: those still out of order (at most `concurrency`) are not counted yet.
      while (next < lines.length && (next === 0 || (out.length + errs.length < opts.sliceBytes && Date.now() <= deadline))) {
        // Local requests resolve at once: without this the whole slice would hold the event loop.
        const turn = turns.check();
        if (turn) {
          await turn;
          continue; // the slice's limits are checked again
        }
        const i = next++;
        const line = lines[i]!;
        const r = call
          ? await call.call(line.body as never, ctx!)
          : { status: 400, body: { error: { message: `The endpoint ${batch.endpoint} is not available on this server.`, type: "invalid_request_error", param: null, code: "endpoint_unavailable" } }, usage: null };
        // The platform's output line; keys in the order JSON.stringify of the object would give.
        const text = `{"id":"batch_req_${id()}","custom_id":${JSON.stringify(line.customId)},"response":{"status_code":${r.status},"request_id":"req_${id()}","body":${JSON.stringify(r.body)}},"error":null}\n`;
        ok[i] = r.status >= 200 && r.status < 300;
        texts[i] = text;
        if (i === written) flushInOrder();
        if (r.usage) {
          addUsageTo(usage, r.usage);
          hasUsage = true;
        }
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(opts.concurrency, lines.length) }, worker));
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
    flushInOrder(); // every request taken has its line by now
    return { output: out.bytes(), errors: errs.bytes(), completed, failed: written - completed, usage: hasUsage ? usage : null, done: next };
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
      for await (const lines of fileLines(deps.blobs, b.inputFileId)) {
        for (const { line, text } of lines) {
          if (seen++ < st.done) continue;
          const parsed = parseLine(text, line, b.endpoint);
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
    // The requests as validation parsed them (small files); otherwise (and after a restart) the file is read again.
    let parsed: InputLine[] | undefined;

    if (rec.data.status === "validating" || (rec.data.status === "cancelling" && rec.data.inProgressAt === null)) {
      if (rec.data.status === "cancelling") {
        await finalize(ctx, state, "cancelled", null);
        return null;
      }
      const size = (await deps.blobs.size(rec.data.inputFileId)) ?? Infinity;
      const check = await checkInput(deps.blobs, rec.data.inputFileId, rec.data.endpoint, { keep: size <= KEEP_PARSED_BYTES });
      parsed = check.lines;
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
    // Requests from the resume point on: the lines validation kept, or the file read again.
    const from = state.done;
    async function* requests(): AsyncGenerator<InputLine[]> {
      if (parsed) {
        for (let i = from; i < parsed.length; i += opts.sliceLines) yield parsed.slice(i, i + opts.sliceLines);
        return;
      }
      let n = 0;
      for await (const lines of fileLines(deps.blobs, current.inputFileId)) {
        const out: InputLine[] = [];
        for (const { line, text } of lines) {
          if (n++ < from) continue;
          const r = parseLine(text, line, current.endpoint);
          // Validated before the run, and files never change: this would be corruption.
          if ("code" in r) throw new PermanentJobError(`batch ${rec!.id}: input line ${line} no longer parses (${r.message})`);
          out.push(r);
        }
        if (out.length) yield out;
      }
    }
    let held: HeldSlices | null = { from: state.slices, output: [], errors: [], bytes: 0 };
    let slice: InputLine[] = [];
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
      const r = await runSlice(b, slice.length > opts.sliceLines ? slice.slice(0, opts.sliceLines) : slice, ctx.signal);
      if (inputDone && r.done === slice.length && state.files) {
        await finalize(ctx, state, "completed", held, r);
        return "finished";
      }
      const id = sliceId(rec.id, state.slices);
      const nextState: RunState = { ...state, done: state.done + r.done, slices: state.slices + 1 };
      await commit(ctx, nextState, (cur) => ({ ...cur, usage: addUsage(cur.usage, r.usage), requestCounts: { ...cur.requestCounts, completed: cur.requestCounts.completed + r.completed, failed: cur.requestCounts.failed + r.failed } }), [
        { op: "insert", kind: SLICE_KIND, scope, record: { id, parentId: rec.id, createdAt: deps.clock.now(), data: { output: r.output.toString("utf8"), errors: r.errors.toString("utf8") } satisfies SliceRecord } },
      ]);
      state = nextState;
      if (held) {
        held.output.push(r.output);
        held.errors.push(r.errors);
        held.bytes += r.output.length + r.errors.length;
        if (held.bytes > HELD_SLICE_BYTES) held = null;
      }
      slice = slice.slice(r.done);
      const rest = opts.sliceIntervalMs - (Date.now() - started);
      if (rest > 0) await sleep(rest, undefined, { signal: ctx.signal });
      return "go";
    };
    // One chunk of input read ahead, to know when the slice being run is the last.
    const source = requests();
    let chunk = await source.next();
    while (!chunk.done) {
      for (const r of chunk.value) slice.push(r);
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

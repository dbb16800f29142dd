// Running a batch: one durable job per batch. The input is read as a stream in slices of
// `sliceLines` requests; each slice runs with at most `concurrency` requests at once, and its
// results (the output and error lines, the counts, the usage) commit in ONE transaction with the
// runner's checkpoint ("slices done: n"). After a crash or SIGKILL the next run starts at the
// first slice not committed: a request whose result was recorded is never run again, and no
// line reaches the output twice; at most the requests of the one unfinished slice run again.
// Finalizing concatenates the slices into the output and error files (purpose batch_output).
import { randomBytes } from "node:crypto";
import { setTimeout as sleep } from "node:timers/promises";
import { newId } from "../../common/ids.js";
import { eachRecord } from "../../common/pages.js";
import { PermanentJobError, type JobContext } from "../../jobs/runner.js";
import { VersionConflict, type Scope, type WriteOp } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { FILE_KIND, newFileId, type FileRecord } from "../files/files.js";
import { BATCH_KIND, type BatchRecord } from "./batches.js";
import type { EndpointCall, Endpoint, Usage } from "./endpoints.js";
import { checkInput, fileLines, KEEP_PARSED_BYTES, parseLine, type InputLine } from "./input.js";

export const SLICE_KIND = "batch_slice";

export interface RunnerOptions {
  concurrency: number;
  sliceLines: number;
  /** A slice also ends after this much work (slow upstream calls commit often). */
  sliceMs: number;
  /** Minimum time per slice: a simple throttle (an upstream's rate limit); 0 = none. */
  sliceIntervalMs: number;
  calls: Partial<Record<Endpoint, EndpointCall>>;
}

interface RunState {
  /** Requests (non-blank lines) whose results are committed. */
  done: number;
  slices: number;
  /** Chosen before any byte of them is written, so a finalize that is redone reuses them. */
  outputFileId?: string;
  errorFileId?: string;
}

interface SliceRecord {
  output: string;
  errors: string;
}

const TERMINAL = new Set(["failed", "completed", "expired", "cancelled"]);

function addUsage(a: Usage, b: Usage | null): Usage {
  if (!b) return a;
  return {
    input_tokens: a.input_tokens + b.input_tokens,
    cached_tokens: a.cached_tokens + b.cached_tokens,
    output_tokens: a.output_tokens + b.output_tokens,
    reasoning_tokens: a.reasoning_tokens + b.reasoning_tokens,
    total_tokens: a.total_tokens + b.total_tokens,
  };
}

/** Ids for a slice's output lines and request ids, from one draw of random bytes (16 bytes each). */
function idPool(n: number) {
  const hex = randomBytes(n * 32).toString("hex");
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
   * the results of the first `done` lines, in input order.
   */
  async function runSlice(batch: BatchRecord, lines: InputLine[], signal: AbortSignal) {
    const call = opts.calls[batch.endpoint];
    const results: Array<{ line: InputLine; status: number; body: unknown; usage: Usage | null }> = new Array(lines.length);
    const deadline = Date.now() + opts.sliceMs;
    // Indices are taken in order and every one taken is run, so the first `next` results are all there.
    let next = 0;
    // One signal per slice, linked to the run's: each request's context listens on it, and a
    // listener per request on the run's own signal would pile up over a whole batch.
    const sliceAbort = new AbortController();
    const onAbort = () => sliceAbort.abort(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    const worker = async () => {
      // One context per worker and slice: the services read only its principal and signal.
      const ctx = call?.context(batch.principal, sliceAbort.signal);
      while (next < lines.length && (next === 0 || Date.now() <= deadline)) {
        const i = next++;
        const line = lines[i]!;
        const r = call
          ? await call.call(line.body as never, ctx!)
          : { status: 400, body: { error: { message: `The endpoint ${batch.endpoint} is not available on this server.`, type: "invalid_request_error", param: null, code: "endpoint_unavailable" } }, usage: null };
        results[i] = { line, ...r };
      }
    };
    try {
      await Promise.all(Array.from({ length: Math.min(opts.concurrency, lines.length) }, worker));
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
    let output = "";
    let errors = "";
    let completed = 0;
    let failed = 0;
    let usage: Usage | null = null;
    const done = results.slice(0, next);
    const id = idPool(done.length * 2);
    for (const r of done) {
      const text = JSON.stringify({ id: `batch_req_${id()}`, custom_id: r.line.customId, response: { status_code: r.status, request_id: `req_${id()}`, body: r.body }, error: null }) + "\n";
      if (r.status >= 200 && r.status < 300) {
        output += text;
        completed++;
      } else {
        errors += text;
        failed++;
      }
      if (r.usage) usage = addUsage(usage ?? { input_tokens: 0, cached_tokens: 0, output_tokens: 0, reasoning_tokens: 0, total_tokens: 0 }, r.usage);
    }
    return { output, errors, completed, failed, usage, done: done.length };
  }

  async function finalize(ctx: JobContext<{ batchId: string }, RunState>, state: RunState, end: "completed" | "cancelled" | "expired") {
    const scope = ctx.job.scope;
    const batchId = ctx.job.payload.batchId;
    let st = state;
    if (!st.outputFileId) {
      st = { ...state, outputFileId: newFileId(), errorFileId: newFileId() };
      await commit(ctx, st, (b) => (end === "completed" ? { ...b, status: "finalizing", finalizingAt: b.finalizingAt ?? deps.clock.now() } : b));
    }
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
    const write = async (key: string, field: "output" | "errors", tail = "") => {
      async function* parts() {
        for await (const s of eachRecord(slices, scope, { parentId: batchId, order: "asc" })) if (s.data[field]) yield Buffer.from(s.data[field]);
        if (tail) yield Buffer.from(tail);
      }
      return (await deps.blobs.put(key, parts())).bytes;
    };
    const cur = (await batches().get(scope, batchId))!;
    // Only files that get lines are written (an empty one would cost an fsync for nothing).
    const outBytes = cur.data.requestCounts.completed > 0 ? await write(st.outputFileId!, "output") : 0;
    const errBytes = cur.data.requestCounts.failed + expiredCount > 0 ? await write(st.errorFileId!, "errors", expiredLines) : 0;
    const now = deps.clock.now();
    const fileOps: WriteOp[] = [];
    const fileRec = (id: string, bytes: number, name: string): WriteOp => {
      const rec: FileRecord = { id, bytes, createdAt: now, filename: name, purpose: "batch_output", mimeType: "application/jsonl", expiresAt: cur.data.outputTtl ? now + cur.data.outputTtl : null };
      return { op: "insert", kind: FILE_KIND, scope, record: { id, createdAt: now, expiresAt: rec.expiresAt, tag: rec.purpose, data: rec } };
    };
    if (outBytes > 0) fileOps.push(fileRec(st.outputFileId!, outBytes, `batch_${batchId}_output.jsonl`));
    else await deps.blobs.delete(st.outputFileId!);
    if (errBytes > 0) fileOps.push(fileRec(st.errorFileId!, errBytes, `batch_${batchId}_error.jsonl`));
    else await deps.blobs.delete(st.errorFileId!);
    const sliceIds: WriteOp[] = [];
    for await (const s of eachRecord(slices, scope, { parentId: batchId, order: "asc" })) sliceIds.push({ op: "delete", kind: SLICE_KIND, scope, id: s.id });
    const next: BatchRecord = {
      ...cur.data,
      status: end,
      outputFileId: outBytes > 0 ? st.outputFileId! : null,
      errorFileId: errBytes > 0 ? st.errorFileId! : null,
      completedAt: end === "completed" ? now : cur.data.completedAt,
      cancelledAt: end === "cancelled" ? now : cur.data.cancelledAt,
      expiredAt: end === "expired" ? now : cur.data.expiredAt,
      requestCounts: { ...cur.data.requestCounts, failed: cur.data.requestCounts.failed + expiredCount },
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
        await finalize(ctx, state, "cancelled");
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
      state = { done: 0, slices: 0 };
      await commit(ctx, state, (b) =>
        b.status === "validating" ? { ...b, status: "in_progress", inProgressAt: now, model: check.model, requestCounts: { total: check.total, completed: 0, failed: 0 } } : { ...b, inProgressAt: now, requestCounts: { total: check.total, completed: 0, failed: 0 } },
      );
    }
    if (state.outputFileId) {
      const b = (await batches().get(scope, rec.id))!.data;
      await finalize(ctx, state, b.status === "cancelling" ? "cancelled" : deps.clock.now() >= b.expiresAt ? "expired" : "completed");
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
    let slice: InputLine[] = [];
    /** Runs one slice (or part of it, at its time limit) and commits it; what is left stays in `slice`. */
    const flush = async (): Promise<"go" | "cancelled" | "expired"> => {
      const b = (await batches().get(scope, rec.id))!.data;
      if (b.status === "cancelling") return "cancelled";
      if (deps.clock.now() >= b.expiresAt) return "expired";
      if (!slice.length) return "go";
      const started = Date.now();
      const r = await runSlice(b, slice.length > opts.sliceLines ? slice.slice(0, opts.sliceLines) : slice, ctx.signal);
      const id = `${rec.id}:${String(state.slices).padStart(6, "0")}`;
      const nextState: RunState = { done: state.done + r.done, slices: state.slices + 1 };
      await commit(ctx, nextState, (cur) => ({ ...cur, usage: addUsage(cur.usage, r.usage), requestCounts: { ...cur.requestCounts, completed: cur.requestCounts.completed + r.completed, failed: cur.requestCounts.failed + r.failed } }), [
        { op: "insert", kind: SLICE_KIND, scope, record: { id, parentId: rec.id, createdAt: deps.clock.now(), data: { output: r.output, errors: r.errors } satisfies SliceRecord } },
      ]);
      state = nextState;
      slice = slice.slice(r.done);
      const rest = opts.sliceIntervalMs - (Date.now() - started);
      if (rest > 0) await sleep(rest, undefined, { signal: ctx.signal });
      return "go";
    };
    for await (const lines of requests()) {
      for (const r of lines) slice.push(r);
      while (slice.length >= opts.sliceLines) {
        const go = await flush();
        if (go !== "go") {
          await finalize(ctx, state, go);
          return null;
        }
      }
    }
    let go: "go" | "cancelled" | "expired" = "go";
    while (go === "go" && slice.length) go = await flush();
    await finalize(ctx, state, go === "go" ? "completed" : go);
    return null;
  };
}

// Ending a batch: the output and error files (purpose batch_output) are written from the slices,
// in order — from memory for the slices this run made — and the batch's end commits with the
// files' records and the slices' removal in one transaction. The last slice's results, when
// given, are written too and their counts land in that same transaction: a crash before it
// leaves the slice to run again, its lines recorded once.
import { newId } from "../../common/ids.js";
import type { Scope, WriteOp } from "../../storage/types.js";
import { chunkSize, parseLine, requestChunks, requestTexts } from "./input.js";
import { BATCH_KIND, SLICE_KIND, sliceId, type BatchRecord, type SliceRecord } from "./records.js";
import { addUsage, batchesOf, CHUNK_REQUESTS, commit, openInput, type RunContext, type Runner, type RunState, type RunStorage } from "./run-state.js";
import type { RunResult } from "./run.js";
import type { HeldSlices } from "./slices.js";

/**
 * Writes the output and error files and ends the batch. With `last` (the final slice's results,
 * not committed), those lines are written too and their counts land in the same transaction
 * that ends the batch.
 */
export async function finalize(runner: Runner, ctx: RunContext, state: RunState, end: "completed" | "cancelled" | "expired", held: HeldSlices | null, last?: RunResult): Promise<void> {
  const { storage } = runner;
  const scope = ctx.job.scope;
  const batchId = ctx.job.payload.batchId;
  let st = state;
  if (!last && !st.outputFileId) {
    st = { ...state, outputFileId: state.files?.output ?? storage.files.newId(), errorFileId: state.files?.error ?? storage.files.newId() };
    await commit(runner, ctx, st, (b) => (end === "completed" ? { ...b, status: "finalizing", finalizingAt: b.finalizingAt ?? storage.clock.now() } : b));
  }
  const outputFileId = st.outputFileId ?? st.files!.output;
  const errorFileId = st.errorFileId ?? st.files!.error;
  const expired = end === "expired" ? await expiredRequests(runner, ctx, st.done) : { lines: "", count: 0 };
  const cur = (await batchesOf(storage).get(scope, batchId))!;
  // A cancel that came while the last slice ran: everything ran, but the batch ends as asked.
  if (last && cur.data.status === "cancelling") end = "cancelled";
  const completed = cur.data.requestCounts.completed + (last?.completed ?? 0);
  const failed = cur.data.requestCounts.failed + (last?.failed ?? 0) + expired.count;
  // Only files that get lines are written (an empty one would cost an fsync for nothing).
  const slices = { storage, scope, batchId, count: st.slices, held, last };
  const outBytes = completed > 0 ? await writeSlices(slices, outputFileId, "output") : 0;
  const errBytes = failed > 0 ? await writeSlices(slices, errorFileId, "errors", expired.lines) : 0;
  const now = storage.clock.now();
  const fileOps: WriteOp[] = [];
  // The output Files are created by the same transaction that ends the batch.
  const outputFile = (id: string, bytes: number, filename: string): WriteOp[] =>
    storage.files.prepare(scope, id, bytes, { filename, purpose: "batch_output", mimeType: "application/jsonl", createdAt: now, expiresAt: cur.data.outputTtl ? now + cur.data.outputTtl : null }).ops;
  if (outBytes > 0) fileOps.push(...outputFile(outputFileId, outBytes, `batch_${batchId}_output.jsonl`));
  else await storage.files.discardContent(outputFileId);
  if (errBytes > 0) fileOps.push(...outputFile(errorFileId, errBytes, `batch_${batchId}_error.jsonl`));
  else await storage.files.discardContent(errorFileId);
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

/** Requests never run because the window closed (those after the first `done`): each one an error line. */
async function expiredRequests(runner: Runner, ctx: RunContext, done: number): Promise<{ lines: string; count: number }> {
  let lines = "";
  let count = 0;
  let seen = 0;
  const b = (await batchesOf(runner.storage).get(ctx.job.scope, ctx.job.payload.batchId))!.data;
  for await (const chunk of requestChunks(await openInput(runner, ctx, b), CHUNK_REQUESTS)) {
    const text = requestTexts(chunk);
    for (let i = 0; i < chunkSize(chunk); i++) {
      if (seen++ < done) continue;
      const parsed = parseLine(text(i), chunk.lines[i]!, b.endpoint);
      const customId = "customId" in parsed ? parsed.customId : null;
      lines += JSON.stringify({ id: newId("batch_req_"), custom_id: customId, response: null, error: { code: "batch_expired", message: "This request could not be executed before the completion window expired." } }) + "\n";
      count++;
    }
  }
  return { lines, count };
}

/** The committed slices of a run (numbered 0 … count − 1), what of them this run holds, and the last slice's results. */
interface SliceSource {
  storage: RunStorage;
  scope: Scope;
  batchId: string;
  count: number;
  held: HeldSlices | null;
  last: RunResult | undefined;
}

/**
 * Writes one field of every slice, in order, then `tail`, into the blob `key`: its size. Slices
 * this run committed and still holds are written from memory; earlier ones (a resumed run) are
 * read back.
 */
async function writeSlices(src: SliceSource, key: string, field: "output" | "errors", tail = ""): Promise<number> {
  const slices = src.storage.records.collection<SliceRecord>(SLICE_KIND);
  async function* parts() {
    for (let i = 0; i < src.count; i++) {
      if (src.held && i >= src.held.from) {
        const bytes = src.held[field][i - src.held.from]!;
        if (bytes.length) yield bytes;
        continue;
      }
      const text = (await slices.get(src.scope, sliceId(src.batchId, i)))?.data[field];
      if (text) yield Buffer.from(text);
    }
    if (src.last?.[field].length) yield src.last[field];
    if (tail) yield Buffer.from(tail);
  }
  // Output files are as large as the requests make them: no size cap.
  return src.storage.files.writeContent(key, parts(), { maxBytes: Number.POSITIVE_INFINITY });
}

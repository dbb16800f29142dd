// What every part of a batch's run shares: its settings, its durable progress (the job's
// checkpoint), and the one way progress commits: the batch record's change together with the
// checkpoint, in one transaction.
import type { JobContext } from "../../jobs/handler.js";
import type { WriteOp } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import type { FilesApi } from "../files/index.js";
import type { Endpoint, EndpointCall, Usage } from "./endpoints.js";
import type { BatchWorkers } from "./pool.js";
import { BATCH_KIND, type BatchRecord } from "./records.js";
import { addUsageTo } from "./run.js";

export interface RunSettings {
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

/** The storage a run reads and writes: its own records, and Files through the files area. */
export type RunStorage = Pick<ServiceDeps, "records" | "clock"> & { files: Pick<FilesApi, "find" | "open" | "newId" | "writeContent" | "discardContent" | "prepare"> };

/** A run's settings and storage, shared by validation, the slices and finalizing. */
export interface Runner {
  storage: RunStorage;
  settings: RunSettings;
  /** On the workers a batch's `concurrency` is shared among them. */
  workerConcurrency: number;
}

export interface RunState {
  /** Requests (non-blank lines) whose results are committed. */
  done: number;
  slices: number;
  /** The output and error files' ids, chosen when the run starts: a finalize that is redone reuses them. */
  files?: { output: string; error: string };
  /** Set once finalizing has begun (runs checkpointed before `files` existed chose them here). */
  outputFileId?: string;
  errorFileId?: string;
}

export type RunContext = JobContext<{ batchId: string }, RunState>;

/** Requests per chunk read from the input: the unit of checking and of a worker's task. */
export const CHUNK_REQUESTS = 512;

export const batchesOf = (storage: Pick<RunStorage, "records">) => storage.records.collection<BatchRecord>(BATCH_KIND);

/** Writes `change(current)` with compare-and-set and the runner checkpoint in one transaction. */
export async function commit(runner: Runner, ctx: RunContext, state: RunState, change: (b: BatchRecord) => BatchRecord, extra: WriteOp[] = []): Promise<BatchRecord> {
  const { batchId } = ctx.job.payload;
  // A cancel that moves the record meanwhile gets the change applied on top of it.
  return batchesOf(runner.storage).mutate(
    ctx.job.scope,
    batchId,
    (cur) => {
      if (!cur) throw new Error(`batch ${batchId} is gone`);
      const next = change(cur.data);
      return { write: "update", data: next, tag: next.status, also: extra, result: next };
    },
    { commit: (ops) => ctx.checkpoint(state, ops) },
  );
}

/** The batch's input file's bytes, as a stream. */
export async function openInput(runner: Runner, ctx: RunContext, batch: BatchRecord): Promise<AsyncIterable<Uint8Array>> {
  return runner.storage.files.open(ctx.job.scope, batch.inputFileId);
}

export function addUsage(a: Usage, b: Usage | null): Usage {
  if (!b) return a;
  const sum = { ...a };
  addUsageTo(sum, b);
  return sum;
}

// Batches (spec 2.13, 4.10): creation rules, the batch record, list, retrieve, cancel. The work
// is jobs.ts, a durable job on the runner; the record is records.ts.
//
// States: validating → in_progress → finalizing → completed; validating → failed (a bad input
// file); validating | in_progress → cancelling → cancelled; in_progress → expired past
// expires_at (24 h). Every status has its timestamp.
import { ApiError, invalidParam, missingParam, notFound } from "../../common/errors.js";
import { newId } from "../../common/ids.js";
import { checkMetadata } from "../../common/metadata.js";
import type { Principal } from "../../auth/principal.js";
import type { JobRunner } from "../../jobs/runner.js";
import { TERMINAL_STATES } from "../../jobs/types.js";
import type { Scope, StoredRecord } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { MAX_BATCH_FILE_BYTES, MAX_EXPIRY_SECONDS, MIN_EXPIRY_SECONDS, type FilesApi } from "../files/index.js";
import { SUPPORTED_ENDPOINTS, zeroUsage, type Endpoint } from "./endpoints.js";
import { BATCH_KIND, type BatchRecord } from "./records.js";
import { BATCHES_RUN_JOB, runJobId, settleRun } from "./jobs.js";

export const COMPLETION_WINDOW_SECONDS = 24 * 3600;

export interface CreateBatchInput {
  inputFileId?: string;
  endpoint?: string;
  completionWindow?: string;
  metadata?: unknown;
  outputExpiresAfter?: { anchor?: string; seconds?: bigint };
}

export class Batches {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly files: FilesApi,
    private readonly runner: JobRunner,
    /** Why an endpoint cannot run here right now (no provider, no area), or null when it can. */
    private readonly unavailable: (endpoint: Endpoint) => string | null,
  ) {}

  get batches() {
    return this.deps.records.collection<BatchRecord>(BATCH_KIND);
  }

  async get(scope: Scope, id: string): Promise<StoredRecord<BatchRecord>> {
    const r = await this.batches.get(scope, id);
    if (!r) throw notFound("batch", id, "batch_id");
    return r;
  }

  async create(scope: Scope, principal: Principal, input: CreateBatchInput): Promise<BatchRecord> {
    if (!input.inputFileId) throw missingParam("input_file_id");
    if (!input.endpoint) throw missingParam("endpoint");
    if (!input.completionWindow) throw missingParam("completion_window");
    if (!(SUPPORTED_ENDPOINTS as readonly string[]).includes(input.endpoint))
      throw invalidParam("endpoint", `Invalid value for 'endpoint': '${input.endpoint}'. Supported values are: ${SUPPORTED_ENDPOINTS.map((e) => `'${e}'`).join(", ")}.`, "unsupported_endpoint");
    const endpoint = input.endpoint as Endpoint;
    const why = this.unavailable(endpoint);
    if (why) throw invalidParam("endpoint", why, "endpoint_unavailable");
    if (input.completionWindow !== "24h") throw invalidParam("completion_window", `Invalid value for 'completion_window': '${input.completionWindow}'. Supported values are: '24h'.`);
    const metadata = checkMetadata(input.metadata as Record<string, unknown> | null | undefined);
    let outputTtl: number | null = null;
    if (input.outputExpiresAfter) {
      const ea = input.outputExpiresAfter;
      if (ea.anchor !== "created_at") throw invalidParam("output_expires_after.anchor", `Invalid value for 'output_expires_after.anchor': expected 'created_at', got '${ea.anchor}'.`);
      const s = Number(ea.seconds);
      if (ea.seconds === undefined || s < MIN_EXPIRY_SECONDS || s > MAX_EXPIRY_SECONDS)
        throw invalidParam("output_expires_after.seconds", `Invalid value for 'output_expires_after.seconds': expected ${MIN_EXPIRY_SECONDS} to ${MAX_EXPIRY_SECONDS}.`, "integer_out_of_range");
      outputTtl = s;
    }
    const file = await this.files.get(scope, input.inputFileId, "input_file_id");
    if (file.purpose !== "batch")
      throw invalidParam("input_file_id", `Invalid 'input_file_id': file ${file.id} has purpose '${file.purpose}'; batch input files must have purpose 'batch'.`, "invalid_file_purpose");
    if (!file.filename.toLowerCase().endsWith(".jsonl")) throw invalidParam("input_file_id", `Invalid 'input_file_id': file ${file.id} is not JSONL.`, "invalid_file_format");
    if (file.bytes > MAX_BATCH_FILE_BYTES)
      throw invalidParam("input_file_id", `Invalid 'input_file_id': batch input files can be at most ${MAX_BATCH_FILE_BYTES} bytes; this one is ${file.bytes}.`, "file_too_large");

    const now = this.deps.clock.now();
    const rec: BatchRecord = {
      id: newId("batch_"),
      createdAt: now,
      endpoint,
      inputFileId: file.id,
      completionWindow: "24h",
      status: "validating",
      errors: null,
      outputFileId: null,
      errorFileId: null,
      inProgressAt: null,
      expiresAt: now + COMPLETION_WINDOW_SECONDS,
      finalizingAt: null,
      completedAt: null,
      failedAt: null,
      expiredAt: null,
      cancellingAt: null,
      cancelledAt: null,
      requestCounts: { total: 0, completed: 0, failed: 0 },
      metadata,
      model: null,
      usage: zeroUsage(),
      outputTtl,
      principal,
    };
    // The run first (it waits briefly for the record): a crash in between leaves a run that finds
    // no batch, never a batch no run will pick up.
    await this.runner.enqueue(scope, BATCHES_RUN_JOB, { batchId: rec.id }, { id: runJobId(rec.id) });
    await this.batches.insert(scope, { id: rec.id, createdAt: now, tag: rec.status, data: rec });
    return rec;
  }

  list(scope: Scope, q: { after?: string; limit: number }) {
    return this.batches.list(scope, { ...q, order: "desc" });
  }

  /** validating / in_progress → cancelling; the run notices between two slices and ends it cancelled. */
  async cancel(scope: Scope, id: string): Promise<BatchRecord> {
    const rec = await this.batches.mutate(scope, id, (cur) => {
      if (!cur) throw notFound("batch", id, "batch_id");
      if (cur.data.status === "cancelling" || cur.data.status === "cancelled") return { write: "none", result: cur.data };
      if (cur.data.status !== "validating" && cur.data.status !== "in_progress")
        throw new ApiError(400, `Batch ${id} cannot be cancelled: its status is '${cur.data.status}'.`, { param: "batch_id", code: "invalid_batch_state" });
      const next: BatchRecord = { ...cur.data, status: "cancelling", cancellingAt: this.deps.clock.now() };
      return { write: "update", data: next, tag: next.status, result: next };
    });
    // The run ends a cancelling batch; a run that already ended (it failed before its settle
    // reached the batch) never will: end it here.
    if (rec.status === "cancelling") {
      const run = await this.runner.get(runJobId(id));
      if (!run || TERMINAL_STATES.has(run.state)) {
        await settleRun(this.deps, { state: "cancelled", scope, payload: { batchId: id }, checkpoint: run?.checkpoint ?? null, lastError: run?.lastError ?? null });
        return (await this.get(scope, id)).data;
      }
    }
    return rec;
  }
}

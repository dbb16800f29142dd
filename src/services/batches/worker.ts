// A batch worker thread (started by BatchWorkers, workers.ts): it checks chunks of input files,
// and runs the requests of the endpoints whose work is CPU on the calling thread
// (THREAD_ENDPOINTS: token counting) on the same service implementation the main thread serves,
// so a batch uses the machine's other cores and never holds the server's event loop. What only
// the main thread has (the storage: a project's Files and fine-tuned models) is asked of it.
import { workerData } from "node:worker_threads";
import type { Principal } from "../../auth/principal.js";
import { callHost, serveTasks } from "../../engines/pool/index.js";
import { InputTokensError, type InputTokensErrorStatus } from "../../engines/tokenizer/index.js";
import type { Scope } from "../../storage/types.js";
import { responsesServiceWith, type ResponsesOptions } from "../responses/handler.js";
import { countInputTokensCall, type Endpoint, type EndpointCall } from "./endpoints.js";
import { checkChunk, chunkSize, type ChunkCheck, type RequestChunk } from "./input.js";
import { runRequests, type RunResult } from "./run.js";

export interface BatchWorkerData {
  responses: ResponsesOptions;
}

export type BatchTask =
  | { op: "check"; endpoint: string; chunk: RequestChunk }
  | { op: "run"; endpoint: Endpoint; principal: Principal; concurrency: number; chunk: RequestChunk };

/** A host readFile's answer: the file, or the counting error to throw (it names no class across threads). */
export type HostFile = { file: { bytes: Uint8Array; filename: string } } | { error: { status: InputTokensErrorStatus; param: string; message: string; code?: string } };

const data = workerData as BatchWorkerData;

const responses = responsesServiceWith(
  {
    hasFineTunedModel: (scope: Scope, model: string) => callHost<boolean>("hasFineTunedModel", scope, model),
    async readFile(scope: Scope, fileId: string) {
      const r = await callHost<HostFile>("readFile", scope, fileId);
      if ("error" in r) throw new InputTokensError(r.error.status, r.error.param, r.error.message, r.error.code);
      return r.file;
    },
  },
  data.responses,
);

const calls: Partial<Record<Endpoint, EndpointCall>> = { "/v1/responses/input_tokens": countInputTokensCall(responses) };

serveTasks<BatchTask, ChunkCheck | RunResult>(async (task, ctx) => {
  if (task.op === "check") return checkChunk(task.chunk, task.endpoint);
  const call = calls[task.endpoint];
  if (!call) throw new Error(`batch workers do not run ${task.endpoint}`);
  const r = await runRequests([{ chunk: task.chunk, from: 0, to: chunkSize(task.chunk) }], task.endpoint, call, task.principal, ctx.signal, {
    concurrency: task.concurrency,
    deadline: Infinity,
    maxBytes: Infinity,
    turns: null,
  });
  ctx.transfer(r.output.buffer as ArrayBuffer, r.errors.buffer as ArrayBuffer);
  return r;
});

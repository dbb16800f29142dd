// A batch worker thread (started by BatchWorkers, pool.ts): it checks chunks of input files,
// and runs the requests of the endpoints whose work is CPU on the calling thread
// (THREAD_ENDPOINTS: token counting) on the same service implementation the main thread serves,
// so a batch uses the machine's other cores and never holds the server's event loop. What only
// the main thread has (the storage: a project's Files and fine-tuned models) is asked of it.
//
// "check-run" checks a chunk and, when its lines are fine, runs them ahead of the verdict on the
// whole file (validation and the first slice in one pass): the result is used only if the file
// passes. Running ahead reads this server's storage but reaches nothing outside it: a request
// that would fetch a URL makes the chunk's result void, and the chunk runs after validation.
import { workerData } from "node:worker_threads";
import type { Principal } from "../../auth/principal.js";
import { fetchUrl } from "../../common/fetch-url.js";
import { callHost, serveTasks } from "../../engines/pool/index.js";
import { InputTokensError, warmUpTokenizer } from "../../engines/tokenizer/index.js";
import type { Scope } from "../../storage/types.js";
import { responsesServiceWith, type HostFileReply, type ResponsesOptions } from "../responses/index.js";
import { countInputTokensCall, type Endpoint, type EndpointCall } from "./endpoints.js";
import { checkChunk, chunkSize, type ChunkCheck, type InputLine, type RequestChunk } from "./input.js";
import { runRequests, type RunResult } from "./run.js";

export interface BatchWorkerData {
  responses: ResponsesOptions;
}

export type BatchTask =
  | { op: "check"; endpoint: string; chunk: RequestChunk }
  | { op: "check-run"; endpoint: Endpoint; principal: Principal; concurrency: number; chunk: RequestChunk }
  /** Takes no new request after `deadline` (Date.now()) or once its lines reach `maxBytes`: its `done` may fall short. */
  | { op: "run"; endpoint: Endpoint; principal: Principal; concurrency: number; chunk: RequestChunk; deadline: number; maxBytes: number };

/** "check-run"'s answer: the check, and the lines' results if they all ran without reaching outside. */
export interface CheckRun {
  check: ChunkCheck;
  run: RunResult | null;
}

const data = workerData as BatchWorkerData;

// The encodings' tables are built when the thread starts, before any request: built during the
// first batch, they leave V8's allocation-site feedback believing request objects live long
// (pretenuring them), and the worker spends a third of its time in the collector (scavenges of
// 3-8 ms against 0.3-0.5; batch throughput 0.73-1.06x of the loop against 1.03-1.18x;
// bench/README.md).
warmUpTokenizer();

/** Set while a chunk runs ahead of validation (one task at a time runs on a worker). */
let ahead: { fetched: boolean } | null = null;

const responses = responsesServiceWith(
  {
    hasFineTunedModel: (scope: Scope, model: string) => callHost<boolean>("hasFineTunedModel", scope, model),
    async readFile(scope: Scope, fileId: string) {
      const r = await callHost<HostFileReply>("readFile", scope, fileId);
      if ("error" in r) throw new InputTokensError(r.error.status, r.error.param, r.error.message, r.error.code);
      return r.file;
    },
  },
  {
    ...data.responses,
    fetchUrl: (url, policy) => {
      if (!ahead) return fetchUrl(url, policy);
      ahead.fetched = true;
      return Promise.reject(new Error("not fetched while the batch's input is being checked"));
    },
  },
);

const calls: Partial<Record<Endpoint, EndpointCall>> = { "/v1/responses/input_tokens": countInputTokensCall(responses) };

async function run(task: Extract<BatchTask, { op: "run" | "check-run" }>, signal: AbortSignal, parsed?: InputLine[]): Promise<RunResult> {
  const call = calls[task.endpoint];
  if (!call) throw new Error(`batch workers do not run ${task.endpoint}`);
  return runRequests([{ chunk: task.chunk, from: 0, to: chunkSize(task.chunk) }], task.endpoint, call, task.principal, signal, {
    concurrency: task.concurrency,
    deadline: task.op === "run" ? task.deadline : Infinity,
    maxBytes: task.op === "run" ? task.maxBytes : Infinity,
    turns: null,
    parsed,
  });
}

serveTasks<BatchTask, ChunkCheck | RunResult | CheckRun>(async (task, ctx) => {
  if (task.op === "check") return checkChunk(task.chunk, task.endpoint);
  if (task.op === "run") {
    const r = await run(task, ctx.signal);
    ctx.transfer(r.output.buffer as ArrayBuffer, r.errors.buffer as ArrayBuffer);
    return r;
  }
  const parsed: InputLine[] = [];
  const check = checkChunk(task.chunk, task.endpoint, parsed);
  // A bad line fails the whole batch: nothing of it will run.
  if (check.errors.length) return { check, run: null } satisfies CheckRun;
  const state = (ahead = { fetched: false });
  let r: RunResult;
  try {
    r = await run(task, ctx.signal, parsed);
  } finally {
    ahead = null;
  }
  if (state.fetched) return { check, run: null } satisfies CheckRun;
  ctx.transfer(r.output.buffer as ArrayBuffer, r.errors.buffer as ArrayBuffer);
  return { check, run: r } satisfies CheckRun;
});

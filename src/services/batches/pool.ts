// The batch worker threads, parent side: a WorkerPool of worker.ts, whose host functions read
// this process's storage for the workers. Chunks go out as one copy of their bytes; results come
// back moved, not copied.
import type { Principal } from "../../auth/principal.js";
import { WorkerPool, workerScript } from "../../engines/pool/index.js";
import type { ServiceDeps } from "../deps.js";
import { countingHost, storageLookups, type ResponsesOptions } from "../responses/index.js";
import type { Endpoint } from "./endpoints.js";
import { chunkBuffers, type ChunkCheck, type RequestChunk } from "./input.js";
import type { RunResult } from "./run.js";
import type { BatchTask, BatchWorkerData, CheckRun } from "./worker.js";

export class BatchWorkers {
  private readonly pool: WorkerPool<BatchTask, ChunkCheck | RunResult | CheckRun>;

  constructor(
    deps: ServiceDeps,
    readonly size: number,
    responses: ResponsesOptions,
  ) {
    const workerData: BatchWorkerData = { responses };
    this.pool = new WorkerPool({
      script: workerScript(import.meta.url, "worker"),
      size,
      name: "atrium-batch",
      workerData,
      host: countingHost(storageLookups(deps)),
    });
  }

  /** checkChunk on a worker (the chunk is copied: the caller keeps it). */
  check(chunk: RequestChunk, endpoint: string, signal?: AbortSignal): Promise<ChunkCheck> {
    return this.pool.run({ op: "check", endpoint, chunk }, { signal }) as Promise<ChunkCheck>;
  }

  /**
   * Runs `chunk`'s requests on a worker, taking none after `limits.deadline` or once the lines
   * reach `limits.maxBytes`; the chunk is moved there (unusable here after).
   */
  run(chunk: RequestChunk, endpoint: Endpoint, principal: Principal, limits: { concurrency: number; deadline: number; maxBytes: number }, signal?: AbortSignal): Promise<RunResult> {
    return this.pool.run({ op: "run", endpoint, principal, chunk, ...limits }, { signal, transfer: chunkBuffers(chunk) }) as Promise<RunResult>;
  }

  /**
   * checkChunk on a worker, and when the chunk's lines are fine, its requests run ahead of the
   * verdict on the whole file (the chunk is copied: the caller keeps it). `run` is null when a
   * line is bad or a request would have fetched a URL: then nothing ran that counts.
   */
  checkRun(chunk: RequestChunk, endpoint: Endpoint, principal: Principal, concurrency: number, signal?: AbortSignal): Promise<CheckRun> {
    return this.pool.run({ op: "check-run", endpoint, principal, concurrency, chunk }, { signal }) as Promise<CheckRun>;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

// Large token counts run on a worker thread (worker.ts), so a 1 MB count (~40 ms of BPE) never
// holds the event loop that every other request shares. A pool of its own rather than the batch
// workers: a batch's slices and an interactive count each keep their own queue, so neither waits
// behind the other. Workers start on first use; what only this thread has (the project's Files and
// fine-tuned models) the workers ask for through host calls.
import { WorkerPool, workerScript } from "../../engines/pool/index.js";
import { InputTokensError } from "../../engines/tokenizer/index.js";
import { countingHost, type CountingLookups, type CountReply, type CountTask } from "./counting.js";

/** Requests with at least this much text are counted on a worker; smaller ones cost less than the hand-off. */
export const OFF_THREAD_TEXT_BYTES = 64 * 1024;

export class CountingWorkers {
  private readonly pool: WorkerPool<CountTask, CountReply>;

  constructor(lookups: CountingLookups, size: number) {
    this.pool = new WorkerPool<CountTask, CountReply>({
      script: workerScript(import.meta.url, "worker"),
      size,
      name: "atrium-input-tokens",
      host: countingHost(lookups),
      // Lower than the event loop and its collector's helpers: see README.md, "Records and background work".
      nice: 10,
    });
  }

  /** The count of `task.body` on a worker: its tokens, or the counting error it raised there. */
  async count(task: CountTask, signal?: AbortSignal): Promise<number> {
    const reply = await this.pool.run(task, { signal });
    if ("error" in reply) throw new InputTokensError(reply.error.status, reply.error.param, reply.error.message, reply.error.code);
    return reply.inputTokens;
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/**
 * Whether `value` (a request body as JSON) holds at least `limit` bytes of strings, counting UTF-16
 * units as a cheap stand-in for bytes. Stops as soon as it knows, so a large body costs a partial walk.
 */
export function hasTextAtLeast(value: unknown, limit: number): boolean {
  let total = 0;
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === "string") {
      total += v.length;
      if (total >= limit) return true;
    } else if (Array.isArray(v)) stack.push(...v);
    else if (v !== null && typeof v === "object") stack.push(...Object.values(v));
  }
  return false;
}

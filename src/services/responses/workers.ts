// Large token counts run on worker threads (worker.ts), so a 1 MB count (~12-40 ms of BPE) never
// holds the event loop that every other request shares. A pool of its own rather than the batch
// workers: a batch's slices and an interactive count each keep their own queue, so neither waits
// behind the other. Workers start on first use; what only this thread has (the project's Files and
// fine-tuned models) the workers ask for through host calls. A long text is split where the
// encodings start a new piece and its parts are counted on all the workers at once: with two
// workers or more, the count of one long input, the common large request, takes the time of its
// largest part.
import { availableParallelism } from "node:os";
import { WorkerPool, workerScript } from "../../engines/pool/index.js";
import { InputTokensError, splitAtPieceBoundaries, type EncodingName } from "../../engines/tokenizer/index.js";
import { countingHost, LONG_TEXT_CHARS, type CountingLookups, type CountReply, type CountTask } from "./counting.js";

/** Requests with at least this much text are counted off this thread; smaller ones cost less than the hand-off. */
export const OFF_THREAD_TEXT_BYTES = 64 * 1024;

/**
 * A worker per core but one, up to 4: one core stays with the event loop, and each worker costs
 * ~50–100 MB once it has counted (the encodings' tables and its heap), so a 2-core machine keeps
 * one. They start on the first large count; a long text's parts go to all of them at once.
 */
export const COUNTING_WORKERS = Math.max(1, Math.min(4, availableParallelism() - 1));

export class CountingWorkers {
  private readonly pool: WorkerPool<CountTask, CountReply>;

  constructor(
    lookups: CountingLookups,
    private readonly size: number,
  ) {
    this.pool = new WorkerPool<CountTask, CountReply>({
      script: workerScript(import.meta.url, "worker"),
      size,
      name: "atrium-input-tokens",
      host: countingHost(lookups),
      // Lower than the event loop and its collector's helpers: see README.md, "Records and background work".
      nice: 10,
      // A count allocates little besides the text it is sent, which is too large for the young
      // generation anyway; V8's default lets a worker's young generation grow by tens of MB that
      // it keeps (a server after twelve 1 MB counts: 351–390 MB, with this limit 275–301, the
      // counts as fast).
      resourceLimits: { maxYoungGenerationSizeMb: 4 },
    });
  }

  /** The count of `task` on a worker: its tokens, or the counting error it raised there. */
  async count(task: CountTask, signal?: AbortSignal): Promise<number> {
    const reply = await this.pool.run(task, { signal });
    if ("error" in reply) throw new InputTokensError(reply.error.status, reply.error.param, reply.error.message, reply.error.code);
    return reply.inputTokens;
  }

  /** The tokens of `text`, in parts of at least half of LONG_TEXT_CHARS counted on the workers at once. */
  async countText(encoding: EncodingName, text: string, signal?: AbortSignal): Promise<number> {
    const parts = splitAtPieceBoundaries(text, this.size, LONG_TEXT_CHARS / 2);
    const counts = await Promise.all(parts.map((part) => this.count({ text: part, encoding }, signal)));
    return counts.reduce((a, b) => a + b, 0);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/**
 * Where a body (the response API's JSON) is counted: "here" when it holds under
 * OFF_THREAD_TEXT_BYTES of strings; "long-texts" when long texts hold the rest (this thread walks
 * the body and counts the short strings, the workers count the long texts in parts); "worker" for
 * the whole body on one worker otherwise. A long text is a string of LONG_TEXT_CHARS or more in
 * `input` or `instructions` that can be cut (splitAtPieceBoundaries): a data URL or base64 file,
 * which has no place to cut and is decoded rather than counted, or a long tool definition, which
 * the engine counts where it walks, stays with the whole body on a worker. String lengths in
 * UTF-16 units stand in for bytes; the walk stops as soon as it knows "worker".
 */
export function countingPlace(body: Record<string, unknown>): "here" | "long-texts" | "worker" {
  let short = 0;
  let long = false;
  const stack: Array<[unknown, boolean]> = Object.entries(body).map(([k, v]) => [v, k === "input" || k === "instructions"]);
  while (stack.length) {
    const [v, text] = stack.pop()!;
    if (typeof v === "string") {
      if (text && v.length >= LONG_TEXT_CHARS && splitAtPieceBoundaries(v, 2, LONG_TEXT_CHARS / 2).length > 1) long = true;
      else if ((short += v.length) >= OFF_THREAD_TEXT_BYTES) return "worker";
    } else if (Array.isArray(v)) for (const x of v) stack.push([x, text]);
    else if (v !== null && typeof v === "object") for (const x of Object.values(v)) stack.push([x, text]);
  }
  return long ? "long-texts" : "here";
}

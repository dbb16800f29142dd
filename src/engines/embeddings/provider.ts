// LocalSentenceEncoder: the local EmbeddingsProvider (src/providers/types.ts). The model runs in a
// pool of worker threads; this thread only splits the work into tasks, counts tokens and puts
// the vectors back in order. See README.md beside this file.
import type { EmbedOptions, EmbedResult, EmbeddingsProvider } from "../../providers/types.js";
import { WorkerPool, workerScript } from "../pool/index.js";
import { getEncoding } from "../tokenizer/index.js";
import { LOCAL_EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL, WINDOW_CHARS, WINDOWS_PER_PASS } from "./constants.js";
import type { EncodeResult, EncodeTask } from "./task.js";

export interface LocalSentenceEncoderOptions {
  /** Worker threads; default ATRIUM_EMBED_WORKERS, else 1. */
  workers?: number;
  /** Time limit of one embed() call in ms (the providers config's `timeout_ms`); none if undefined. */
  timeoutMs?: number;
}

/** A request the local model cannot serve; `param` names the option at fault. */
export class LocalEmbeddingsError extends Error {
  override readonly name = "LocalEmbeddingsError";
  constructor(
    readonly param: "model" | "dimensions",
    message: string,
  ) {
    super(message);
  }
}

/** embed() took longer than its time limit (the work left was cancelled). */
export class LocalEmbeddingsTimeout extends Error {
  override readonly name = "LocalEmbeddingsTimeout";
}

/** ATRIUM_EMBED_WORKERS as a pool size (default 1: this runs on small machines). */
export function workersFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.ATRIUM_EMBED_WORKERS;
  if (raw === undefined || raw === "") return 1;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 64) throw new Error(`ATRIUM_EMBED_WORKERS must be an integer from 1 to 64, got '${raw}'`);
  return n;
}

/** Characters of text counted between two turns of the event loop (~5 ms of counting). */
const COUNT_SLICE_CHARS = 64_000;

/**
 * Token counts of `texts` in cl100k_base, the encoding of the platform's embedding models (usage
 * and the 8192-token limit are in these units). Yields to the event loop every ~64 K characters.
 */
export async function countEmbeddingTokens(texts: readonly string[]): Promise<number[]> {
  const enc = getEncoding("cl100k_base");
  const counts = new Array<number>(texts.length);
  let sinceYield = 0;
  for (let i = 0; i < texts.length; i++) {
    counts[i] = enc.countTokens(texts[i]!);
    sinceYield += texts[i]!.length;
    if (sinceYield >= COUNT_SLICE_CHARS) {
      sinceYield = 0;
      await new Promise((r) => setImmediate(r));
    }
  }
  return counts;
}

/** Windows an input of `chars` characters makes (an estimate: sentences pack a little looser). */
const windowsOf = (chars: number) => Math.max(1, Math.ceil(chars / WINDOW_CHARS));

export class LocalSentenceEncoder implements EmbeddingsProvider {
  readonly id = LOCAL_EMBEDDING_MODEL;
  readonly local = true;
  readonly dimensions = LOCAL_EMBEDDING_DIMENSIONS;
  /** The worker threads (exposed for tests and stats). */
  readonly pool: WorkerPool<EncodeTask, EncodeResult>;
  private readonly timeoutMs: number | undefined;
  private loaded: EncodeResult["model"] | undefined;

  constructor(opts: LocalSentenceEncoderOptions = {}) {
    this.pool = new WorkerPool<EncodeTask, EncodeResult>({
      script: workerScript(import.meta.url, "worker"),
      size: opts.workers ?? workersFromEnv(),
      name: "atrium-embeddings",
      // tfjs with the model takes ~60 MB; a runaway input must not take the process with it.
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
    this.timeoutMs = opts.timeoutMs;
  }

  /** How the model loaded in the first worker that ran (undefined before any work). */
  get modelInfo(): EncodeResult["model"] | undefined {
    return this.loaded;
  }

  async embed(inputs: string[], opts: EmbedOptions): Promise<EmbedResult> {
    // Never local vectors under another model's name (docs/architecture.md, "Providers").
    if (opts.model !== LOCAL_EMBEDDING_MODEL)
      throw new LocalEmbeddingsError("model", `The local sentence encoder serves only '${LOCAL_EMBEDDING_MODEL}', not '${opts.model}'.`);
    const dims = opts.dimensions ?? LOCAL_EMBEDDING_DIMENSIONS;
    if (!Number.isInteger(dims) || dims < 1 || dims > LOCAL_EMBEDDING_DIMENSIONS)
      throw new LocalEmbeddingsError("dimensions", `'${LOCAL_EMBEDDING_MODEL}' gives 1 to ${LOCAL_EMBEDDING_DIMENSIONS} dimensions, not ${dims}.`);

    const timeout = this.timeoutMs === undefined ? undefined : AbortSignal.timeout(this.timeoutMs);
    const signals = [opts.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];

    const counts = await countEmbeddingTokens(inputs);
    const vectors = new Array<Float32Array>(inputs.length);
    try {
      await this.runChunks(inputs, dims, vectors, signal);
    } catch (e) {
      if (timeout?.aborted && !opts.signal?.aborted)
        throw new LocalEmbeddingsTimeout(`The local sentence encoder did not finish ${inputs.length} inputs within ${this.timeoutMs} ms.`, { cause: e });
      throw e;
    }
    const tokens = counts.reduce((a, b) => a + b, 0);
    return { vectors, model: LOCAL_EMBEDDING_MODEL, usage: { promptTokens: tokens, totalTokens: tokens } };
  }

  /**
   * Cuts the inputs into tasks of about WINDOWS_PER_PASS windows, shortest inputs first (the model
   * pads a pass to its longest row, so similar lengths share a task), and keeps at most one task
   * per worker in flight: a large request fills every worker, yet a request that arrives after it
   * waits behind one task per worker, not behind the whole request.
   */
  private async runChunks(inputs: string[], dims: number, out: Float32Array[], signal: AbortSignal | undefined): Promise<void> {
    const order = inputs.map((_, i) => i).sort((a, b) => inputs[a]!.length - inputs[b]!.length);
    const chunks: number[][] = [];
    for (let start = 0; start < order.length; ) {
      let end = start;
      let windows = 0;
      while (end < order.length && (end === start || windows + windowsOf(inputs[order[end]!]!.length) <= WINDOWS_PER_PASS)) {
        windows += windowsOf(inputs[order[end]!]!.length);
        end++;
      }
      chunks.push(order.slice(start, end));
      start = end;
    }

    let next = 0;
    const lane = async () => {
      while (next < chunks.length) {
        const chunk = chunks[next++]!;
        let res: EncodeResult;
        try {
          res = await this.pool.run({ texts: chunk.map((i) => inputs[i]!), dimensions: dims }, { signal });
        } catch (e) {
          next = chunks.length; // the other lanes take no more chunks
          throw e;
        }
        this.loaded ??= res.model;
        chunk.forEach((i, j) => (out[i] = res.vectors.subarray(j * dims, (j + 1) * dims)));
      }
    };
    const lanes = Array.from({ length: Math.min(this.pool.size, chunks.length) }, lane);
    // Every lane must stop before the error goes up, or a failed request would keep queuing work.
    const results = await Promise.allSettled(lanes);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** Stops the workers; pending calls fail with PoolClosedError. */
  close(): Promise<void> {
    return this.pool.close();
  }
}

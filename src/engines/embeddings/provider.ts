// LocalSentenceEncoder: the local EmbeddingsProvider (src/providers/types.ts). The model runs in a
// pool of worker threads; this thread only cuts the work into units (units.ts), has the lane
// scheduler (src/engines/pool/lanes.ts) run them, counts tokens and pools the vectors back in
// order. See README.md beside this file.
import type { EmbedOptions, EmbedResult, EmbeddingsProvider } from "../../providers/types.js";
import { bulkEveryFromEnv, LaneScheduler, laneLimitsFromEnv, WorkerPool, workerScript, type Lane, type LaneLimits } from "../pool/index.js";
import { getEncoding } from "../tokenizer/index.js";
import { LOCAL_EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL } from "./constants.js";
import type { EncodeResult, EncodeTask } from "./task.js";
import { cutIntoUnits, poolWindows, unitCharsFromEnv, type EncodeUnit } from "./units.js";

export interface LocalSentenceEncoderOptions {
  /** Worker threads; default ATRIUM_EMBED_WORKERS, else 1. */
  workers?: number;
  /** Time limit of one unit of work on a worker in ms (the providers config's `timeout_ms`); none if undefined. */
  timeoutMs?: number;
  /** Most characters per unit of work; default ATRIUM_ENCODER_UNIT_CHARS, else DEFAULT_UNIT_CHARS. */
  unitChars?: number;
  /** Bounds of each lane's queue; default from the environment (laneLimitsFromEnv). */
  limits?: Record<Lane, LaneLimits>;
  /** Interactive units in a row before a waiting bulk unit goes; default ATRIUM_ENCODER_BULK_EVERY, else 8. */
  bulkEvery?: number;
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

/** A unit of embed()'s work took longer than the time limit (the work left was cancelled). */
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

export class LocalSentenceEncoder implements EmbeddingsProvider {
  readonly id = LOCAL_EMBEDDING_MODEL;
  readonly local = true;
  readonly dimensions = LOCAL_EMBEDDING_DIMENSIONS;
  /** The worker threads (exposed for tests and stats). */
  readonly pool: WorkerPool<EncodeTask, EncodeResult>;
  /** What runs next on the workers: lanes, projects, the bounded queue (exposed for tests and stats). */
  readonly scheduler: LaneScheduler<EncodeUnit, Float32Array>;
  private readonly timeoutMs: number | undefined;
  private readonly unitChars: number;
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
    this.unitChars = opts.unitChars ?? unitCharsFromEnv();
    this.scheduler = new LaneScheduler<EncodeUnit, Float32Array>({
      run: (unit, signal) => this.runUnit(unit, signal),
      slots: this.pool.size,
      limits: opts.limits ?? laneLimitsFromEnv(),
      bulkEvery: opts.bulkEvery ?? bulkEveryFromEnv(),
      name: "The local sentence encoder",
    });
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

    const counts = await countEmbeddingTokens(inputs);
    const units = await cutIntoUnits(inputs, this.unitChars);
    const results = await this.scheduler.submit(units, { lane: opts.lane, project: opts.project, signal: opts.signal });
    const vectors = poolWindows(inputs.length, units, results, dims);
    const tokens = counts.reduce((a, b) => a + b, 0);
    return { vectors, model: LOCAL_EMBEDDING_MODEL, usage: { promptTokens: tokens, totalTokens: tokens } };
  }

  /**
   * One unit on a worker: its windows' full vectors. The time limit is per unit (a few hundred
   * milliseconds of work): a worker that does not answer within it is stuck, whereas a large
   * request is many units and is never cut short for being large.
   */
  private async runUnit(unit: EncodeUnit, signal: AbortSignal | undefined): Promise<Float32Array> {
    // One controller per unit, unhooked when it ends: a job's long-lived signal collects no
    // listeners or dependent signals however many units the job runs.
    const stop = new AbortController();
    let timedOut = false;
    const timer = this.timeoutMs === undefined ? undefined : setTimeout(() => ((timedOut = true), stop.abort(new Error("unit timed out"))), this.timeoutMs);
    const onAbort = () => stop.abort(signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const res = await this.pool.run({ texts: unit.texts, dimensions: LOCAL_EMBEDDING_DIMENSIONS }, { signal: stop.signal });
      this.loaded ??= res.model;
      return res.vectors;
    } catch (e) {
      if (timedOut && !signal?.aborted)
        throw new LocalEmbeddingsTimeout(`The local sentence encoder did not finish a unit of ${unit.texts.length} windows within ${this.timeoutMs} ms.`, { cause: e });
      throw e;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** Stops the workers; pending calls fail with PoolClosedError. */
  close(): Promise<void> {
    return this.pool.close();
  }
}

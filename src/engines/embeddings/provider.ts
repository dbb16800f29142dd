// LocalSentenceEncoder: the local EmbeddingsProvider (src/providers/types.ts). The model runs in a
// pool of worker threads; this thread only cuts the work into units (units.ts), has the lane
// scheduler (src/engines/pool/lanes.ts) run them, counts tokens and pools the vectors back in
// order. See README.md beside this file.
import { availableParallelism } from "node:os";
import { integerFromEnv } from "../../common/env.js";
import type { EmbedOptions, EmbedResult, EmbeddingsProvider } from "../../providers/types.js";
import { bulkEveryFromEnv, LaneScheduler, laneLimitsFromEnv, WorkerPool, workerScript, type Lane, type LaneLimits } from "../pool/index.js";
import { getEncoding } from "../tokenizer/index.js";
import { LOCAL_EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL } from "./constants.js";
import type { EncodeResult, EncodeTask } from "./task.js";
import { cutIntoUnits, poolWindows, unitCharsFromEnv, type EncodeUnit } from "./units.js";

export interface LocalSentenceEncoderOptions {
  /** Worker threads for interactive work; default ATRIUM_EMBED_WORKERS, else 2 (1 on one core). */
  workers?: number;
  /** Worker threads of the bulk lane's own (0: bulk shares the interactive workers); default ATRIUM_EMBED_BULK_WORKERS, else 1. */
  bulkWorkers?: number;
  /** How much lower the bulk workers' priority is (nice, 0 to 19); default ATRIUM_EMBED_BULK_NICE, else 10. */
  bulkNice?: number;
  /** Time limit of one unit of work on a worker in ms (the providers config's `timeout_ms`); none if undefined. */
  timeoutMs?: number;
  /** Most characters per unit of work; default ATRIUM_ENCODER_UNIT_CHARS, else DEFAULT_UNIT_CHARS. */
  unitChars?: number;
  /** Bounds of each lane's queue; default from the environment (laneLimitsFromEnv). */
  limits?: Record<Lane, LaneLimits>;
  /** With no bulk workers: interactive units in a row before a waiting bulk unit goes; default ATRIUM_ENCODER_BULK_EVERY, else 8. */
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

/**
 * ATRIUM_EMBED_WORKERS: the request workers. Default 2 (1 on a one-core machine): requests do not
 * queue behind each other while the other core is free, and one request is shared by both.
 */
export function workersFromEnv(env: NodeJS.ProcessEnv = process.env, cores = availableParallelism()): number {
  return integerFromEnv(env, "ATRIUM_EMBED_WORKERS", Math.min(2, cores), 1, 64);
}

/**
 * ATRIUM_EMBED_BULK_WORKERS: the bulk lane's own worker threads (default 1; 0: bulk units share the
 * interactive workers, between interactive units). With its own, a search never waits for an
 * ingestion unit to end, and the niced thread takes the cores only when requests leave them idle.
 */
export function bulkWorkersFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  return integerFromEnv(env, "ATRIUM_EMBED_BULK_WORKERS", 1, 0, 64);
}

/**
 * ATRIUM_EMBED_BULK_NICE: how much lower the bulk workers' priority is (default 10: under full
 * load they get about a tenth of a core that requests want, as ATRIUM_ENCODER_BULK_EVERY's
 * default gives bulk work on shared workers).
 */
export function bulkNiceFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  return integerFromEnv(env, "ATRIUM_EMBED_BULK_NICE", 10, 0, 19);
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
  /** The worker threads of interactive work, and of bulk work when it has none of its own (exposed for tests and stats). */
  readonly pool: WorkerPool<EncodeTask, EncodeResult>;
  /** The bulk lane's own worker threads, at a lower priority; undefined when bulk shares `pool`. */
  readonly bulkPool: WorkerPool<EncodeTask, EncodeResult> | undefined;
  /** What runs next on the workers: lanes, projects, the bounded queue (exposed for tests and stats). */
  readonly scheduler: LaneScheduler<EncodeUnit, Float32Array>;
  private readonly timeoutMs: number | undefined;
  private readonly unitChars: number;
  private loaded: EncodeResult["model"] | undefined;

  constructor(opts: LocalSentenceEncoderOptions = {}) {
    const pool = (name: string, size: number, nice?: number) =>
      new WorkerPool<EncodeTask, EncodeResult>({
        script: workerScript(import.meta.url, "worker"),
        size,
        name,
        nice,
        // tfjs with the model takes ~60 MB; a runaway input must not take the process with it.
        resourceLimits: { maxOldGenerationSizeMb: 512 },
        // A worker replaced after its task budget serves on until its successor has loaded the
        // model (~1–3 s): no request waits for that load.
        warmUp: { texts: ["warm up"] } satisfies EncodeTask,
      });
    this.pool = pool("atrium-embeddings", opts.workers ?? workersFromEnv());
    const bulkWorkers = opts.bulkWorkers ?? bulkWorkersFromEnv();
    this.bulkPool = bulkWorkers > 0 ? pool("atrium-embeddings-bulk", bulkWorkers, opts.bulkNice ?? bulkNiceFromEnv()) : undefined;
    this.timeoutMs = opts.timeoutMs;
    this.unitChars = opts.unitChars ?? unitCharsFromEnv();
    this.scheduler = new LaneScheduler<EncodeUnit, Float32Array>({
      run: (unit, signal, lane) => this.runUnit(lane === "bulk" && this.bulkPool ? this.bulkPool : this.pool, unit, signal),
      slots: this.bulkPool ? { interactive: this.pool.size, bulk: this.bulkPool.size } : this.pool.size,
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
    // A request someone waits for is spread over the request workers (idle ones take a share);
    // bulk work has units enough to keep its workers busy.
    const lane = opts.lane ?? "interactive";
    const units = await cutIntoUnits(inputs, this.unitChars, lane === "interactive" ? this.pool.size : 1);
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
  private async runUnit(pool: WorkerPool<EncodeTask, EncodeResult>, unit: EncodeUnit, signal: AbortSignal | undefined): Promise<Float32Array> {
    // One controller per unit, unhooked when it ends: a job's long-lived signal collects no
    // listeners or dependent signals however many units the job runs.
    const stop = new AbortController();
    let timedOut = false;
    const timer = this.timeoutMs === undefined ? undefined : setTimeout(() => ((timedOut = true), stop.abort(new Error("unit timed out"))), this.timeoutMs);
    const onAbort = () => stop.abort(signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const res = await pool.run({ texts: unit.texts, dimensions: LOCAL_EMBEDDING_DIMENSIONS }, { signal: stop.signal });
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
  async close(): Promise<void> {
    await Promise.all([this.pool.close(), this.bulkPool?.close()]);
  }
}

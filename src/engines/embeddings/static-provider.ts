// StaticEmbedder: the static embedding model as an EmbeddingsProvider (src/providers/types.ts).
// A table lookup is cheap but tokenizing a megabyte is not free, and the first call may have to
// build the table with the teacher (tens of seconds): both run in a worker thread, never on the
// event loop; so does counting the inputs' cl100k_base tokens for `usage` (~0.25 s per MB of
// text, which held the event loop during ingestion when the main thread counted). See README.md
// beside this file.
import type { EmbedOptions, EmbedResult, EmbeddingsProvider } from "../../providers/types.js";
import { WorkerPool, workerScript } from "../pool/index.js";
import { LocalEmbeddingsError, LocalEmbeddingsTimeout } from "./provider.js";
import { STATIC_EMBEDDING_DIMENSIONS, STATIC_EMBEDDING_MODEL } from "./static-constants.js";
import type { StaticEncodeResult, StaticEncodeTask } from "./static-task.js";

export interface StaticEmbedderOptions {
  /** Where the distilled table is cached (the server's model cache dir); none: rebuilt per process. */
  cacheDir?: string;
  /** Time limit of one embed() call in ms; none if undefined. The first call may build the table. */
  timeoutMs?: number;
}

/** Characters of text per worker task (~10-30 ms of tokenizing): large requests still share the worker fairly. */
const TASK_CHARS = 128_000;

export class StaticEmbedder implements EmbeddingsProvider {
  readonly id = STATIC_EMBEDDING_MODEL;
  readonly local = true;
  readonly dimensions = STATIC_EMBEDDING_DIMENSIONS;
  /** The worker thread (exposed for tests and stats). */
  readonly pool: WorkerPool<StaticEncodeTask, StaticEncodeResult>;
  private readonly cacheDir: string | undefined;
  private readonly timeoutMs: number | undefined;
  private loaded: StaticEncodeResult["model"] | undefined;

  constructor(opts: StaticEmbedderOptions = {}) {
    // One worker: a lookup keeps up with ingestion; a second would hold a second table (16 MB).
    this.pool = new WorkerPool<StaticEncodeTask, StaticEncodeResult>({
      script: workerScript(import.meta.url, "static-worker"),
      size: 1,
      name: "atrium-embeddings-static",
      resourceLimits: { maxOldGenerationSizeMb: 512 },
    });
    this.cacheDir = opts.cacheDir;
    this.timeoutMs = opts.timeoutMs;
  }

  /** Whether the worker built the table or read it from the cache (undefined before any work). */
  get modelInfo(): StaticEncodeResult["model"] | undefined {
    return this.loaded;
  }

  async embed(inputs: string[], opts: EmbedOptions): Promise<EmbedResult> {
    // Never static vectors under another model's name (docs/architecture.md, "Providers").
    if (opts.model !== STATIC_EMBEDDING_MODEL)
      throw new LocalEmbeddingsError("model", `The static embedding model serves only '${STATIC_EMBEDDING_MODEL}', not '${opts.model}'.`);
    const dims = opts.dimensions ?? STATIC_EMBEDDING_DIMENSIONS;
    if (!Number.isInteger(dims) || dims < 1 || dims > STATIC_EMBEDDING_DIMENSIONS)
      throw new LocalEmbeddingsError("dimensions", `'${STATIC_EMBEDDING_MODEL}' gives 1 to ${STATIC_EMBEDDING_DIMENSIONS} dimensions, not ${dims}.`);

    const timeout = this.timeoutMs === undefined ? undefined : AbortSignal.timeout(this.timeoutMs);
    const signals = [opts.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];

    let tokens = 0;
    const vectors: Float32Array[] = [];
    try {
      for (let start = 0; start < inputs.length; ) {
        let end = start + 1;
        let chars = inputs[start]!.length;
        while (end < inputs.length && chars + inputs[end]!.length <= TASK_CHARS) chars += inputs[end++]!.length;
        const res = await this.pool.run({ texts: inputs.slice(start, end), dimensions: dims, cacheDir: this.cacheDir }, { signal });
        this.loaded ??= res.model;
        tokens += res.tokens;
        for (let j = 0; j < end - start; j++) vectors.push(res.vectors.subarray(j * dims, (j + 1) * dims));
        start = end;
      }
    } catch (e) {
      if (timeout?.aborted && !opts.signal?.aborted)
        throw new LocalEmbeddingsTimeout(`The static embedding model did not finish ${inputs.length} inputs within ${this.timeoutMs} ms.`, { cause: e });
      throw e;
    }
    return { vectors, model: STATIC_EMBEDDING_MODEL, usage: { promptTokens: tokens, totalTokens: tokens } };
  }

  /** Stops the worker; pending calls fail with PoolClosedError. */
  close(): Promise<void> {
    return this.pool.close();
  }
}

// The text classifier's main-thread side. It embeds the example bank once with the local sentence
// encoder (or reads the vectors from the cache file a previous start wrote), has the text worker
// calibrate on them, then classifies: each text is cut into windows of whole sentences, the
// windows are embedded by the encoder's workers and scored by the text worker; a text's score per
// category is its highest window's. Nothing here computes more than bookkeeping.
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { LOCAL_EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL, splitIntoWindows } from "../../embeddings/index.js";
import { WorkerPool, workerScript } from "../../pool/index.js";
import type { EmbeddingsProvider, WorkLane } from "../../../providers/types.js";
import { BANK, BANK_SOURCE } from "../bank/index.js";
import type { Calibration } from "../calibrate.js";
import { readPrecomputed } from "./precomputed-bank.js";
import { CATEGORY_COUNT } from "../categories.js";
import type { SharedBankVectors, TextResult, TextTask } from "./task.js";
import { raceAbort } from "../../../common/abort.js";

/** Longest window scored on its own: a sentence or a few. Longer texts are scored window by window. */
export const MODERATION_WINDOW_CHARS = 300;
/** Windows per scoring task (a few milliseconds of the text worker's time each). */
const SCORE_SLICE = 32;
/** Bank examples per call to the encoder while the bank is embedded. */
const BANK_SLICE = 64;
/** Bank examples re-embedded on every start to check the cached vectors still match the encoder. */
const PROBES = 3;
/** How close a probe's vector must be to the stored one (the same encoder gives ≥ 0.9999). */
export const PROBE_MIN_COSINE = 0.999;
/**
 * The bank is embedded for the first moderation request, so in the interactive lane, as a
 * project of its own: other projects' requests take turns with its slices instead of waiting.
 */
const BANK_WORK = { lane: "interactive", project: "(moderation bank)" } as const;

/** Names the bank's text and the encoder that embeds it (cache files, the precomputed bank). */
export function bankKey(): string {
  return createHash("sha256").update(`${LOCAL_EMBEDDING_MODEL}\n${BANK_SOURCE}`).digest("hex");
}

export interface TextClassifierOptions {
  /** The local sentence encoder (atrium-embed-use-lite), whatever the embeddings provider is. */
  encoder: () => EmbeddingsProvider;
  /** Where the bank's vectors and calibration are kept between starts (none: recomputed each start). */
  cacheDir?: string;
  /** Use the committed vectors and calibration (precomputed.json) when they apply; default true. */
  precomputed?: boolean;
}

interface Ready {
  bank: SharedBankVectors;
  calibration: Calibration;
  /** How the bank vectors and calibration were obtained, for logs and the benchmark. */
  source: "precomputed" | "cache" | "encoder";
  ms: number;
}

export class TextClassifier {
  readonly pool: WorkerPool<TextTask, TextResult>;
  private loading: Promise<Ready> | undefined;

  constructor(private readonly opts: TextClassifierOptions) {
    this.pool = new WorkerPool<TextTask, TextResult>({
      script: workerScript(import.meta.url, "worker"),
      size: 1, // scoring a window takes a millisecond or two, embedding it several: one thread keeps up
      name: "atrium-moderation-text",
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
  }

  /** Bank vectors and calibration, prepared once (concurrent callers share the work). */
  ready(): Promise<Ready> {
    this.loading ??= this.prepare().catch((e) => {
      this.loading = undefined; // a later request may try again
      throw e;
    });
    return this.loading;
  }

  /** Per text, CATEGORY_COUNT calibrated probabilities (the highest of its windows). `work`: the encoder's lane and project. */
  async classify(texts: string[], signal?: AbortSignal, work: { lane?: WorkLane; project?: string } = {}): Promise<Float32Array[]> {
    const { bank, calibration } = await raceAbort(this.ready(), signal);
    const windows: string[] = [];
    const owner: number[] = [];
    texts.forEach((t, i) => {
      for (const w of splitIntoWindows(t, MODERATION_WINDOW_CHARS)) {
        if (w.trim() === "") continue; // nothing to classify
        windows.push(w);
        owner.push(i);
      }
    });
    const out = texts.map(() => new Float32Array(CATEGORY_COUNT));
    if (!windows.length) return out;
    const embedded = await this.opts.encoder().embed(windows, { model: LOCAL_EMBEDDING_MODEL, signal, ...work });
    const calibrated = { probe: calibration.probe, models: calibration.models };
    // Scored in tasks of SCORE_SLICE windows: a large request never holds the text worker for long.
    for (let start = 0; start < windows.length; start += SCORE_SLICE) {
      const end = Math.min(windows.length, start + SCORE_SLICE);
      const vectors = new Float32Array((end - start) * bank.dim);
      for (let w = start; w < end; w++) vectors.set(embedded.vectors[w]!, (w - start) * bank.dim);
      const res = await this.pool.run(
        { kind: "score", bank, calibration: calibrated, texts: windows.slice(start, end), vectors },
        { signal, transfer: [vectors.buffer as ArrayBuffer] },
      );
      if (res.kind !== "score") throw new Error("the text worker answered a score task with something else");
      for (let w = start; w < end; w++) {
        const into = out[owner[w]!]!;
        for (let c = 0; c < CATEGORY_COUNT; c++) into[c] = Math.max(into[c]!, res.probabilities[(w - start) * CATEGORY_COUNT + c]!);
      }
    }
    return out;
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private async prepare(): Promise<Ready> {
    const started = performance.now();
    const key = bankKey();
    const dim = LOCAL_EMBEDDING_DIMENSIONS;
    // The committed vectors and calibration (precomputed.json) when they are this bank's and this
    // encoder still embeds as they say: the first request then waits only for the encoder and the
    // text worker to start, which start together.
    const precomputed = this.opts.precomputed === false ? undefined : await readPrecomputed(key, dim);
    if (precomputed) {
      const [matches] = await Promise.all([this.probesMatch(precomputed.bank), this.pool.run({ kind: "index", bank: precomputed.bank })]);
      if (matches) return { ...precomputed, source: "precomputed", ms: performance.now() - started };
    }
    // The vectors depend only on the bank and the encoder, so they are cached; the calibration
    // also depends on this code (features, lexicon), so it is redone here (~1 s).
    let bank = await this.readCache(key, dim);
    const source = bank ? "cache" : "encoder";
    if (!bank) {
      // In slices: each call stays far inside the encoder's time limit on a busy machine, and
      // requests for embeddings queue behind one slice at a time, not behind the whole bank.
      const vectors = new Float32Array(new SharedArrayBuffer(BANK.length * dim * 4));
      for (let start = 0; start < BANK.length; start += BANK_SLICE) {
        const slice = BANK.slice(start, start + BANK_SLICE).map((e) => e.text);
        const embedded = await this.opts.encoder().embed(slice, { model: LOCAL_EMBEDDING_MODEL, ...BANK_WORK });
        embedded.vectors.forEach((v, i) => vectors.set(v, (start + i) * dim));
      }
      bank = { key, dim, vectors };
      await this.writeCache(bank);
    }
    const res = await this.pool.run({ kind: "calibrate", bank });
    if (res.kind !== "calibrate") throw new Error("the text worker answered a calibrate task with something else");
    return { bank, calibration: res.calibration, source, ms: performance.now() - started };
  }

  /** The encoder may have changed under the same name: a few examples must still embed as `bank` says. */
  private async probesMatch(bank: SharedBankVectors): Promise<boolean> {
    const probes = await this.opts.encoder().embed(
      BANK.slice(0, PROBES).map((e) => e.text),
      { model: LOCAL_EMBEDDING_MODEL, ...BANK_WORK },
    );
    for (let p = 0; p < PROBES; p++) {
      let dot = 0;
      for (let d = 0; d < bank.dim; d++) dot += probes.vectors[p]![d]! * bank.vectors[p * bank.dim + d]!;
      if (dot < PROBE_MIN_COSINE) return false;
    }
    return true;
  }

  private cachePath(key: string): string | undefined {
    return this.opts.cacheDir && join(this.opts.cacheDir, `moderation-bank-${key.slice(0, 16)}.bin`);
  }

  /** The cache file: a 4-byte header length, the header (JSON: the key), the vectors. */
  private async readCache(key: string, dim: number): Promise<SharedBankVectors | undefined> {
    const path = this.cachePath(key);
    if (!path) return undefined;
    let file: Buffer;
    try {
      file = await readFile(path);
    } catch {
      return undefined;
    }
    try {
      const headerLength = file.readUInt32LE(0);
      const header = JSON.parse(file.subarray(4, 4 + headerLength).toString("utf8")) as { key: string };
      const body = file.subarray(4 + headerLength);
      if (header.key !== key || body.length !== BANK.length * dim * 4) return undefined;
      const vectors = new Float32Array(new SharedArrayBuffer(body.length));
      new Uint8Array(vectors.buffer).set(body);
      const bank = { key, dim, vectors };
      return (await this.probesMatch(bank)) ? bank : undefined;
    } catch {
      return undefined; // unreadable: recomputed and rewritten
    }
  }

  private async writeCache(bank: SharedBankVectors): Promise<void> {
    const path = this.cachePath(bank.key);
    if (!path) return;
    try {
      await mkdir(this.opts.cacheDir!, { recursive: true });
      const header = Buffer.from(JSON.stringify({ key: bank.key }), "utf8");
      const length = Buffer.alloc(4);
      length.writeUInt32LE(header.length);
      const tmp = `${path}.${process.pid}.tmp`;
      await writeFile(tmp, Buffer.concat([length, header, Buffer.from(bank.vectors.buffer, bank.vectors.byteOffset, bank.vectors.byteLength)]));
      await rename(tmp, path);
    } catch {
      // A cache that cannot be written only costs the next start some time.
    }
  }
}

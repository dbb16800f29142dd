// What crosses the thread boundary between the ingest pool (pool.ts) and its workers (worker.ts).
import type { ChunkingOptions } from "./chunk.js";
import type { Format } from "./detect.js";

export interface IngestTask {
  /** The file's bytes (the buffer is transferred, not copied). */
  bytes: Uint8Array;
  filename: string;
  /** Omitted: extract only (no chunks). */
  chunking?: ChunkingOptions;
  maxTotalTokens?: number;
}

/** Chunk i is text.slice(start[i], end[i]), `tokens[i]` tokens long: one string crosses, not one per chunk. */
export interface IngestResult {
  format: Format;
  text: string;
  start: Uint32Array;
  end: Uint32Array;
  tokens: Uint32Array;
  /** UTF-8 bytes of all the chunks' texts together (what a store's usage counts), measured here, off the main thread. */
  chunkBytes: number;
}

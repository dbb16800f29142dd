// What the main thread asks of an encoder worker, and what comes back.

export interface EncodeTask {
  texts: string[];
  /** Output length (first components, renormalised); default LOCAL_EMBEDDING_DIMENSIONS. */
  dimensions?: number;
}

export interface EncodeResult {
  /** texts.length vectors of `dimensions` floats, back to back (transferred, not copied). */
  vectors: Float32Array;
  /** How the worker's model was loaded (measured once, in the worker). */
  model: { backend: string; simd: boolean; loadMs: number };
}

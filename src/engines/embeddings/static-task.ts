// What the main thread asks of the static model's worker, and what comes back.

export interface StaticEncodeTask {
  texts: string[];
  /** Output length (first components, renormalised). */
  dimensions: number;
  /** Where the table is cached (built there on first use when absent); none: built in memory. */
  cacheDir: string | undefined;
}

export interface StaticEncodeResult {
  /** texts.length vectors of `dimensions` floats, back to back (transferred, not copied). */
  vectors: Float32Array;
  /** cl100k_base tokens of the texts, for `usage` (counted here, off the event loop). */
  tokens: number;
  /** Whether this worker built the table or read it, and how long that took. */
  model: { built: boolean; loadMs: number };
}

// What the static embedding model is, for code that must not load it (the main thread, the API).

/** The id the static model answers to, in /v1/embeddings and /v1/models. */
export const STATIC_EMBEDDING_MODEL = "atrium-embed-static-use-lite";

/** Its output size: the teacher's (Universal Sentence Encoder lite): its piece vectors, weighted, two common directions taken out, not rotated. */
export const STATIC_EMBEDDING_DIMENSIONS = 512;

/** Bumped when the way the table is built changes, so that a cached table is rebuilt. */
export const STATIC_TABLE_VERSION = 3;

// What the local sentence encoder is, for code that must not load it (the main thread, the API).

/** The id the local model answers to, in /v1/embeddings and /v1/models. */
export const LOCAL_EMBEDDING_MODEL = "atrium-embed-use-lite";

/** Universal Sentence Encoder lite's output size. */
export const LOCAL_EMBEDDING_DIMENSIONS = 512;

/**
 * Longest piece of text the model sees at once, in UTF-16 code units. 1000 characters of English
 * are ~260 of the model's sentencepiece tokens (measured: 3.75 characters per token): longer
 * inputs are cut into windows of whole sentences and their vectors pooled (README).
 */
export const WINDOW_CHARS = 1000;

/** Most windows in one forward pass of the model. */
export const WINDOWS_PER_PASS = 32;

/**
 * Most padded tokens (windows × the longest window's tokens) in one forward pass: a pass of
 * sentences takes up to WINDOWS_PER_PASS of them, one of full windows (~260 tokens) three or four.
 * 512 to 2048 measured alike (README); far larger budgets put short and long rows together.
 */
export const PASS_TOKEN_BUDGET = 1024;

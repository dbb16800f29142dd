/**
 * The local sentence encoder (no HTTP): Universal Sentence Encoder lite in worker threads.
 * See README.md beside this file.
 */
export { LOCAL_EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL, WINDOW_CHARS, WINDOWS_PER_PASS } from "./constants.js";
export {
  countEmbeddingTokens,
  LocalEmbeddingsError,
  LocalEmbeddingsTimeout,
  LocalSentenceEncoder,
  bulkNiceFromEnv,
  bulkWorkersFromEnv,
  workersFromEnv,
  type LocalSentenceEncoderOptions,
} from "./provider.js";
export { splitIntoWindows } from "./windows.js";
export { STATIC_EMBEDDING_DIMENSIONS, STATIC_EMBEDDING_MODEL } from "./static-constants.js";
export { StaticEmbedder, type StaticEmbedderOptions } from "./static-provider.js";
export { LOCAL_EMBEDDING_MODELS, LOCAL_MODEL_DIMENSIONS, LocalEmbeddings } from "./local-models.js";

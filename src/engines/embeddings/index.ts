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
  workersFromEnv,
  type LocalSentenceEncoderOptions,
} from "./provider.js";
export { splitIntoWindows } from "./windows.js";

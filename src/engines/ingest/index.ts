// The ingest engine (no HTTP in it): file bytes → text → token-bounded chunks. The vector store
// service runs it (through Ingester, in worker threads) inside its ingestion jobs; errors are
// IngestError with the code a vector store file's last_error reports.
export { IngestError, type IngestErrorCode } from "./errors.js";
export { detectFormat, extensionOf, type Format } from "./detect.js";
export { extractText, decodeText, type Extracted, type ExtractOptions } from "./extract.js";
export { htmlToText, decodeEntities } from "./html.js";
export {
  AUTO_CHUNKING,
  MAX_CHUNK_TOKENS,
  MAX_FILE_TOKENS,
  MIN_CHUNK_TOKENS,
  checkChunking,
  chunkText,
  type Chunk,
  type ChunkingOptions,
  type ChunkTextOptions,
} from "./chunk.js";
export { Ingester, type IngesterOptions } from "./pool.js";

/**
 * The search engine behind vector stores (spec 4.3/4.4), as an interface: the embedded SQLite
 * implementation is `SqliteSearchIndex` (sqlite-index.ts), the shared one `PostgresSearchIndex`
 * (postgres/); the service sees only this interface. No HTTP in it. README.md beside this file has the semantics.
 */

/** A file's attribute value (spec: string up to 512 chars, number or boolean). */
export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue>;

export interface ChunkInput {
  /** Unique within the store. Re-adding a chunk id replaces the chunk, never duplicates it. */
  chunkId: string;
  fileId: string;
  /** Position of the chunk in its file. */
  index: number;
  text: string;
  tokens: number;
  /** The chunk's embedding (any length, the same for the whole store); normalised on the way in. */
  vector?: Float32Array;
  /** The file's attributes. Attributes belong to the file: the last chunk added for a file sets them. */
  attributes: Attributes;
}

export type ComparisonType = "eq" | "ne" | "gt" | "gte" | "lt" | "lte" | "in" | "nin";
export type CompoundType = "and" | "or";

export interface ComparisonFilter {
  type: ComparisonType;
  key: string;
  value: AttributeValue | Array<string | number>;
}

export interface CompoundFilter {
  type: CompoundType;
  filters: Filter[];
}

/** The spec's comparison and compound filters (validate JSON with `validateFilter`). */
export type Filter = ComparisonFilter | CompoundFilter;

/**
 * - `hybrid`: lexical (BM25) and dense rankings fused (reciprocal rank fusion); needs `vector`
 *   (without it, it is `lexical`). The default when vectors are given.
 * - `lexical`: BM25 only. The default without vectors.
 * - `dense`: vector similarity only; needs `vector`.
 */
export type SearchMode = "hybrid" | "lexical" | "dense";

/** Most query texts one search takes (the API's `query` array has the same cap). */
export const MAX_QUERIES = 20;

export interface SearchQuery {
  /** One to MAX_QUERIES queries; hits of all of them are merged. */
  text: string[];
  /**
   * One embedding per entry of `text` (same order), for the dense retriever; or a promise of them,
   * so that the lexical retriever runs while the query is being embedded.
   */
  vector?: Float32Array[] | Promise<Float32Array[]>;
  /** Maximum number of hits, 1..1000 (the API allows 1..50). */
  limit: number;
  filter?: Filter;
  /** Hits scoring below it are dropped (0..1). */
  scoreThreshold?: number;
  mode?: SearchMode;
}

export interface SearchHit {
  fileId: string;
  chunkId: string;
  /** The chunk's `index` in its file. */
  index: number;
  tokens: number;
  /** In [0, 1], never NaN; hits come best first. */
  score: number;
  text: string;
  /** The file's current attributes. */
  attributes: Attributes;
}

export interface IndexStats {
  chunks: number;
  /** UTF-8 bytes of the chunk texts plus 4 bytes per vector component stored. */
  bytes: number;
}

export interface SearchIndex {
  /** Idempotent by chunk id: re-adding a chunk id replaces that chunk. */
  addChunks(storeId: string, chunks: ChunkInput[]): Promise<void>;
  removeFile(storeId: string, fileId: string): Promise<void>;
  /** Replaces the file's attributes; the next search's filters see them. */
  updateAttributes(storeId: string, fileId: string, attributes: Attributes): Promise<void>;
  dropStore(storeId: string): Promise<void>;
  search(storeId: string, query: SearchQuery): Promise<SearchHit[]>;
  stats(storeId: string): Promise<IndexStats>;
}

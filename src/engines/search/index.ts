/**
 * Search engine for vector stores (no HTTP). See README.md beside this file.
 */
export type {
  AttributeValue,
  Attributes,
  ChunkInput,
  ComparisonFilter,
  ComparisonType,
  CompoundFilter,
  CompoundType,
  Filter,
  IndexStats,
  SearchHit,
  SearchIndex,
  SearchMode,
  SearchQuery,
} from "./types.js";
export { MAX_QUERIES } from "./types.js";
export { FilterError, matchesFilter, validateFilter, MAX_FILTER_COMPARISONS, MAX_FILTER_DEPTH, MAX_FILTER_VALUES } from "./filter.js";
export { rewriteQuery, queryTerms, STOP_WORDS } from "./text.js";
export { SqliteSearchIndex, denseCacheBytesFromEnv, type DenseInfo, type SqliteSearchOptions } from "./sqlite-index.js";
export { SEARCH_MIGRATION, SEARCH_MIGRATION_ID, SEARCH_MIGRATION_SQL } from "./schema.js";

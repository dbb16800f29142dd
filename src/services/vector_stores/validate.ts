// Request checks of the vector store area (spec 2.1, 4.3, 4.4, 8): every bad input is a 400 that
// names its field, before anything is written.
import { toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import type { ChunkingStrategy, RankingOptions, VectorStoreExpiresAfter } from "../../../gen/atrium/v1/vector_stores_pb.js";
import { ApiError, invalidParam, missingParam } from "../../common/errors.js";
import { checkAttributes, checkMetadata } from "../../common/metadata.js";
import { AUTO_CHUNKING, MAX_CHUNK_TOKENS, MIN_CHUNK_TOKENS } from "../../engines/ingest/index.js";
import { FilterError, MAX_QUERIES, validateFilter, type Filter } from "../../engines/search/index.js";
import { FILE_STATUSES, type Attributes, type Chunking, type FileStatus } from "./records.js";

/** Spec 8: at most 2000 files per batch (and, here, per store creation). */
export const MAX_BATCH_FILES = 2000;
export const MAX_RESULTS = 50;
export const DEFAULT_RESULTS = 10;
export const MAX_EXPIRY_DAYS = 365;
/** A store's name and description: the platform publishes no cap for them, so an assistant's (256 and 512 characters). */
export const MAX_NAME_CHARS = 256;
export const MAX_DESCRIPTION_CHARS = 512;
export const RANKERS = ["none", "auto", "default-2024-11-15"] as const;
export type Ranker = (typeof RANKERS)[number];

/** The JSON a google.protobuf.Value holds; undefined when the field was not given. */
export function jsonOf(v: Value | undefined): JsonValue | undefined {
  return v === undefined ? undefined : toJson(ValueSchema, v);
}

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

const typeError = (param: string, expected: string, got: unknown) =>
  new ApiError(400, `Invalid type for '${param}': expected ${expected}, but got ${kindOf(got)} instead.`, { param, code: "invalid_type" });

const outOfRange = (param: string, what: string, got: number) =>
  invalidParam(param, `Invalid '${param}': expected ${what}, got ${got}.`, "integer_out_of_range");

/** `{type: auto}` or `{type: static, static: {...}}`; absent is auto. */
export function checkChunking(cs: ChunkingStrategy | undefined, param = "chunking_strategy"): Chunking {
  if (cs === undefined) return { ...AUTO_CHUNKING };
  if (cs.type === undefined) throw missingParam(`${param}.type`);
  if (cs.type === "auto") {
    if (cs.static !== undefined) throw invalidParam(`${param}.static`, `'${param}.static' is only allowed with type 'static'.`);
    return { ...AUTO_CHUNKING };
  }
  if (cs.type !== "static") throw invalidParam(`${param}.type`, `Invalid value for '${param}.type': expected 'auto' or 'static', got '${cs.type}'.`);
  if (cs.static === undefined) throw missingParam(`${param}.static`);
  const maxParam = `${param}.static.max_chunk_size_tokens`;
  const overlapParam = `${param}.static.chunk_overlap_tokens`;
  const maxTokens = cs.static.maxChunkSizeTokens ?? AUTO_CHUNKING.maxTokens;
  if (maxTokens < MIN_CHUNK_TOKENS || maxTokens > MAX_CHUNK_TOKENS) throw outOfRange(maxParam, `${MIN_CHUNK_TOKENS} to ${MAX_CHUNK_TOKENS}`, maxTokens);
  // The default overlap (400) shrinks to half of a smaller chunk size rather than being refused.
  const overlapTokens = cs.static.chunkOverlapTokens ?? Math.min(AUTO_CHUNKING.overlapTokens, Math.floor(maxTokens / 2));
  if (overlapTokens < 0) throw outOfRange(overlapParam, "a non-negative integer", overlapTokens);
  if (overlapTokens > maxTokens / 2)
    throw invalidParam(
      overlapParam,
      `Invalid '${overlapParam}': it must not exceed half of max_chunk_size_tokens (${maxTokens}), got ${overlapTokens}.`,
      "integer_out_of_range",
    );
  return { maxTokens, overlapTokens };
}

export interface ExpiresAfter {
  anchor: "last_active_at";
  days: number;
}

export function checkExpiresAfter(ea: VectorStoreExpiresAfter | undefined, param = "expires_after"): ExpiresAfter | null {
  if (ea === undefined) return null;
  return expiresAfterOf(ea.anchor, ea.days, param);
}

/** expires_after of an update: an object sets it, null removes it, absent (undefined) keeps it. */
export function checkExpiresAfterJson(json: JsonValue | undefined, param = "expires_after"): ExpiresAfter | null | undefined {
  if (json === undefined || json === null) return json === null ? null : undefined;
  if (typeof json !== "object" || Array.isArray(json)) throw typeError(param, "an object or null", json);
  for (const k of Object.keys(json))
    if (k !== "anchor" && k !== "days") throw new ApiError(400, `Unrecognized request argument supplied: ${param}.${k}`, { param: `${param}.${k}`, code: "unknown_parameter" });
  const { anchor, days } = json as { anchor?: unknown; days?: unknown };
  if (anchor !== undefined && anchor !== null && typeof anchor !== "string") throw typeError(`${param}.anchor`, "a string", anchor);
  if (days !== undefined && days !== null && (typeof days !== "number" || !Number.isInteger(days))) throw typeError(`${param}.days`, "an integer", days);
  return expiresAfterOf((anchor ?? undefined) as string | undefined, (days ?? undefined) as number | undefined, param);
}

function expiresAfterOf(anchor: string | undefined, days: number | undefined, param: string): ExpiresAfter {
  if (anchor === undefined) throw missingParam(`${param}.anchor`);
  if (anchor !== "last_active_at")
    throw invalidParam(`${param}.anchor`, `Invalid value for '${param}.anchor': expected 'last_active_at', got '${anchor}'.`);
  if (days === undefined) throw missingParam(`${param}.days`);
  if (days < 1 || days > MAX_EXPIRY_DAYS) throw outOfRange(`${param}.days`, `1 to ${MAX_EXPIRY_DAYS}`, days);
  return { anchor, days };
}

/** Metadata from a Value: an object (checked), or null / absent: none. */
export function checkMetadataJson(json: JsonValue | undefined, param = "metadata"): Record<string, string> | undefined {
  if (json === undefined) return undefined;
  if (json === null) return {};
  if (typeof json !== "object" || Array.isArray(json)) throw typeError(param, "an object or null", json);
  return checkMetadata(json, param) ?? {};
}

/** Attributes from a Value: an object (checked), or null / absent: none. */
export function checkAttributesJson(json: JsonValue | undefined, param = "attributes"): Attributes | null {
  if (json === undefined || json === null) return null;
  if (typeof json !== "object" || Array.isArray(json)) throw typeError(param, "an object or null", json);
  return checkAttributes(json, param);
}

export function checkStatusFilter(filter: string | undefined): FileStatus | undefined {
  if (filter === undefined) return undefined;
  if (!(FILE_STATUSES as readonly string[]).includes(filter))
    throw invalidParam("filter", `Invalid value for 'filter': expected one of ${FILE_STATUSES.join(", ")}, got '${filter}'.`);
  return filter as FileStatus;
}

/**
 * Longest search query, in UTF-16 code units (this server's choice; the platform publishes none):
 * about a thousand tokens, far beyond a question, and every character is work for the shared
 * encoder and the full-text index, checked before either sees it.
 */
export const MAX_QUERY_CHARS = 4096;
/** All queries of one search together (up to MAX_QUERIES of them). */
export const MAX_QUERY_TOTAL_CHARS = 16_384;

export interface SearchParams {
  queries: string[];
  maxResults: number;
  filter: Filter | undefined;
  ranker: Ranker;
  scoreThreshold: number;
  rewrite: boolean;
}

export function checkSearch(req: {
  query?: Value;
  filters?: Value;
  maxNumResults?: number;
  rankingOptions?: RankingOptions;
  rewriteQuery?: boolean;
}): SearchParams {
  const query = jsonOf(req.query);
  let queries: string[];
  if (query === undefined || query === null) throw missingParam("query");
  if (typeof query === "string") queries = [query];
  else if (Array.isArray(query)) {
    if (query.length === 0) throw invalidParam("query", "Invalid 'query': expected a non-empty array of strings.", "empty_array");
    if (query.length > MAX_QUERIES) throw invalidParam("query", `Invalid 'query': at most ${MAX_QUERIES} queries, got ${query.length}.`, "array_above_max_length");
    queries = query.map((q, i) => {
      if (typeof q !== "string") throw typeError(`query[${i}]`, "a string", q);
      return q;
    });
  } else throw typeError("query", "a string or an array of strings", query);
  let total = 0;
  queries.forEach((q, i) => {
    const param = typeof query === "string" ? "query" : `query[${i}]`;
    if (q.length > MAX_QUERY_CHARS)
      throw invalidParam(param, `Invalid '${param}': a query is at most ${MAX_QUERY_CHARS} characters, but got ${q.length}.`, "string_above_max_length");
    if (q.trim() === "") throw invalidParam(param, `Invalid '${param}': the query is empty.`, "empty_string");
    total += q.length;
  });
  if (total > MAX_QUERY_TOTAL_CHARS)
    throw invalidParam("query", `Invalid 'query': the queries are at most ${MAX_QUERY_TOTAL_CHARS} characters together, but got ${total}.`, "string_above_max_length");

  const maxResults = req.maxNumResults ?? DEFAULT_RESULTS;
  if (maxResults < 1 || maxResults > MAX_RESULTS) throw outOfRange("max_num_results", `1 to ${MAX_RESULTS}`, maxResults);

  const filtersJson = jsonOf(req.filters);
  let filter: Filter | undefined;
  if (filtersJson !== undefined && filtersJson !== null) {
    try {
      filter = validateFilter(filtersJson, "filters");
    } catch (e) {
      if (e instanceof FilterError) throw new ApiError(400, e.message, { param: e.path, code: filterErrorCode(e.message) });
      throw e;
    }
  }

  const ranker = req.rankingOptions?.ranker ?? "auto";
  if (!(RANKERS as readonly string[]).includes(ranker))
    throw invalidParam("ranking_options.ranker", `Invalid value for 'ranking_options.ranker': expected one of ${RANKERS.join(", ")}, got '${ranker}'.`);
  const scoreThreshold = req.rankingOptions?.scoreThreshold ?? 0;
  if (!(scoreThreshold >= 0 && scoreThreshold <= 1))
    throw invalidParam("ranking_options.score_threshold", `Invalid 'ranking_options.score_threshold': expected a number from 0 to 1, got ${scoreThreshold}.`, "number_out_of_range");

  return { queries, maxResults, filter, ranker: ranker as Ranker, scoreThreshold, rewrite: req.rewriteQuery ?? false };
}

function filterErrorCode(message: string): string {
  if (message.startsWith("Missing required")) return "missing_required_parameter";
  if (message.startsWith("Invalid type")) return "invalid_type";
  if (message.startsWith("Unrecognized")) return "unknown_parameter";
  return "invalid_value";
}

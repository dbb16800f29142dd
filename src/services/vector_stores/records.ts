// What the vector store area keeps in the record store, and how its record ids are made.
//
//   vector_store                 id vs_…                 the store
//   vector_store.file            id <store>:<file>       a File attached to a store; parent: store; tag: status
//   vector_store.file_ref        id <file>:<store>       parent: the File: finds its stores when the File is deleted
//   vector_store.file_batch      id vsfb_…               parent: store
//   vector_store.file_batch.file id <batch>:<file>       a batch's member; parent: batch; tag: its file's status
//
// A store's file counts, status and a batch's counts are counted from the tags (indexed), never
// kept as counters, so they cannot drift from the files they count. Ingestion progress lives in
// the job runner; the chunks live in the search index.
import type { AttributeValue } from "../../common/metadata.js";

export const STORE_KIND = "vector_store";
export const VS_FILE_KIND = "vector_store.file";
export const FILE_REF_KIND = "vector_store.file_ref";
export const FILE_BATCH_KIND = "vector_store.file_batch";
export const FILE_BATCH_MEMBER_KIND = "vector_store.file_batch.file";
/** The durable expiry timer of a store: timerKind(VECTOR_STORES_EXPIRE_TIMER), one per (store, due time). */
export const VECTOR_STORES_EXPIRE_TIMER = "vector_stores.expire";

/**
 * Renames queued or running ingestion jobs and pending expiry timers of a data directory written
 * with the kinds `vector_store.ingest` and `timer:vector_store_expiry` to the <area>.<verb> names,
 * so their work is still picked up (a job or timer of an unregistered kind never runs). It has no
 * `postgres` form: a PostgreSQL database never held the old names.
 */
export const KIND_NAMES_MIGRATION = {
  id: "vector_stores/0001_kind_names",
  sql: `
    UPDATE jobs SET kind = 'vector_stores.ingest' WHERE kind = 'vector_store.ingest';
    UPDATE records SET kind = 'timer:vector_stores.expire' WHERE kind = 'timer:vector_store_expiry';
  `,
};

export type FileStatus = "in_progress" | "completed" | "failed" | "cancelled";
export const FILE_STATUSES: readonly FileStatus[] = ["in_progress", "completed", "failed", "cancelled"];

export type Attributes = Record<string, AttributeValue>;

export interface Chunking {
  maxTokens: number;
  overlapTokens: number;
}

/** Which model made a store's vectors; null for a lexical-only store (no vectors). */
export interface Embedder {
  /** The provider's id: a local model id, or `upstream:<base_url>`. */
  provider: string;
  model: string;
  dimensions: number;
}

export interface StoreRecord {
  id: string;
  name: string;
  description: string | null;
  metadata: Record<string, string>;
  createdAt: number;
  /** Unix seconds; moves on search and on file changes. */
  lastActiveAt: number;
  expiresAfter: { anchor: "last_active_at"; days: number } | null;
  /** Set once the store expired: durable, whatever happens to expires_after afterwards. */
  expired: boolean;
  embedder: Embedder | null;
}

export interface FileError {
  code: "server_error" | "unsupported_file" | "invalid_file";
  message: string;
}

export interface VsFileRecord {
  storeId: string;
  fileId: string;
  /** The File's name when attached (search results carry it). */
  filename: string;
  createdAt: number;
  status: FileStatus;
  lastError: FileError | null;
  attributes: Attributes | null;
  chunking: Chunking;
  /** Bytes of this file's chunks in the index (text and vectors). */
  usageBytes: number;
  chunks: number;
  /** Names one attachment: a re-attach gets a new one, and the jobs of older ones stand down. */
  attachId: string;
  /** The ingestion job of an earlier attachment that must have ended before this one indexes. */
  supersedes: string | null;
  batchId: string | null;
}

export interface FileRefRecord {
  storeId: string;
}

export interface FileBatchRecord {
  id: string;
  storeId: string;
  createdAt: number;
  cancelled: boolean;
}

export interface FileBatchMemberRecord {
  storeId: string;
  fileId: string;
}

export const vsFileId = (storeId: string, fileId: string) => `${storeId}:${fileId}`;
export const fileRefId = (fileId: string, storeId: string) => `${fileId}:${storeId}`;
export const batchFileId = (batchId: string, fileId: string) => `${batchId}:${fileId}`;
/** Deterministic per attachment: enqueueing it twice is one job. */
export const ingestJobId = (storeId: string, fileId: string, attachId: string) => `vs_ingest:${storeId}:${fileId}:${attachId}`;
/** A chunk's id in the search index: the file and the chunk's position (re-adding replaces). */
export const chunkId = (fileId: string, index: number) => `${fileId}:${index}`;

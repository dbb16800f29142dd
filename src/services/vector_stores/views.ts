// What the vector store area's rules hand out: stores and file batches with their counts and
// status, the files a request attaches, and where an attachment stands for its ingestion job.
import type { Scope, StoredRecord } from "../../storage/types.js";
import { FILE_STATUSES, type Attributes, type Chunking, type FileBatchRecord, type StoreRecord, type VsFileRecord } from "./records.js";

export interface FileCounts {
  in_progress: number;
  completed: number;
  failed: number;
  cancelled: number;
  total: number;
}

export type StoreStatus = "expired" | "in_progress" | "completed";
export type BatchStatus = "in_progress" | "completed" | "cancelled" | "failed";

export interface StoreView {
  store: StoreRecord;
  counts: FileCounts;
  usageBytes: number;
  status: StoreStatus;
  expiresAt: number | null;
}

export interface BatchView {
  batch: FileBatchRecord;
  counts: FileCounts;
  status: BatchStatus;
}

/** One file to attach: from AttachVectorStoreFile, a batch's file_ids or files, or CreateVectorStore. */
export interface AttachItem {
  fileId: string;
  /** The request field that named it (404s name it). */
  param: string;
  attributes: Attributes | null;
  chunking: Chunking;
}

export interface IngestPayload {
  storeId: string;
  fileId: string;
  attachId: string;
  /**
   * The attachment this one replaces (the file was attached before), if any. The job is enqueued
   * before the request writes the file's record, so another instance can run it while the record
   * still shows the earlier attachment: that is "not written yet", not "superseded".
   */
  replaces?: string;
}

/** What became of an attachment while its job was away. */
export type Attachment =
  | { state: "current"; record: StoredRecord<VsFileRecord> }
  /** Attached again since: a newer job owns the file's chunks. */
  | { state: "superseded" }
  /** Detached, its store deleted, or no longer in progress (cancelled): its chunks must go. */
  | { state: "gone" }
  /** No record, or still the attachment this one replaces: the request that enqueued the job may not have written it yet. */
  | { state: "unwritten" };

/** Where attachment `p` stands, given the file's record now (undefined: none) and whether its store exists. */
export function attachmentState(record: StoredRecord<VsFileRecord> | undefined, storeExists: boolean, p: IngestPayload): Attachment {
  if (!record) return { state: storeExists ? "unwritten" : "gone" };
  if (record.data.attachId !== p.attachId) return { state: p.replaces !== undefined && record.data.attachId === p.replaces ? "unwritten" : "superseded" };
  if (record.data.status !== "in_progress") return { state: "gone" };
  return { state: "current", record };
}

/** Counts by status of a store's files (parent: store) or a batch's members (parent: batch). */
export async function countByStatus(scope: Scope, c: { count(scope: Scope, q: { parentId: string; tag: string }): Promise<number> }, parentId: string): Promise<FileCounts> {
  const out: FileCounts = { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: 0 };
  for (const status of FILE_STATUSES) {
    out[status] = await c.count(scope, { parentId, tag: status });
    out.total += out[status];
  }
  return out;
}


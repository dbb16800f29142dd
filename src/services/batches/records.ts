// The batches area's record kinds: the batch itself, and the slices a run commits until
// finalizing writes them into the output and error files.
import type { Principal } from "../../auth/principal.js";
import type { Endpoint, Usage } from "./endpoints.js";
import type { LineError } from "./input.js";

export const BATCH_KIND = "batch";

export type BatchStatus = "validating" | "failed" | "in_progress" | "finalizing" | "completed" | "expired" | "cancelling" | "cancelled";

export interface BatchRecord {
  id: string;
  createdAt: number;
  endpoint: Endpoint;
  inputFileId: string;
  completionWindow: string;
  status: BatchStatus;
  errors: LineError[] | null;
  outputFileId: string | null;
  errorFileId: string | null;
  inProgressAt: number | null;
  expiresAt: number;
  finalizingAt: number | null;
  completedAt: number | null;
  failedAt: number | null;
  expiredAt: number | null;
  cancellingAt: number | null;
  cancelledAt: number | null;
  requestCounts: { total: number; completed: number; failed: number };
  metadata: Record<string, string> | null;
  model: string | null;
  usage: Usage;
  /** Output and error files' lifetime (output_expires_after.seconds), or null. */
  outputTtl: number | null;
  /** The creator: requests run as this principal, in its project. */
  principal: Principal;
}

/** One committed slice of a run: its output and error lines (children of the batch). */
export const SLICE_KIND = "batch_slice";

export interface SliceRecord {
  output: string;
  errors: string;
}

/** Slices are numbered 0, 1, … in input order. */
export const sliceId = (batchId: string, n: number) => `${batchId}:${String(n).padStart(6, "0")}`;

// The uploads area's record kinds and row types, private to src/services/uploads/.
import type { FileView } from "../files/index.js";

export const UPLOAD_KIND = "upload";
export const PART_KIND = "upload_part";

export type UploadStatus = "pending" | "completed" | "cancelled" | "expired";

export interface UploadRecord {
  id: string;
  bytes: number;
  createdAt: number;
  expiresAt: number;
  filename: string;
  purpose: string;
  mimeType: string;
  status: UploadStatus;
  /** Lifetime of the file this upload completes into (expires_after), if given. */
  fileTtl: number | null;
  /** Snapshot of the File created on completion. */
  file: UploadedFile | null;
}

/** The File an upload completed into, as it was created (the files area's view of it, less where its bytes are). */
export type UploadedFile = Omit<FileView, "status" | "blobKey">;

export interface PartRecord {
  id: string;
  uploadId: string;
  createdAt: number;
  bytes: number;
}

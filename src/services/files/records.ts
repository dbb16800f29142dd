// The files area's record kinds. Private to src/services/files/: other areas go through the
// FilesApi exported by index.ts.

/** One File: metadata here, the bytes in the BlobStore under the file's id. */
export const FILE_KIND = "file";

export interface FileRecord {
  id: string;
  bytes: number;
  createdAt: number;
  filename: string;
  purpose: string;
  mimeType: string;
  expiresAt: number | null;
}

/**
 * Other holders of a File's bytes: a container file made from a file_id shares the File's blob
 * instead of copying it, and records that as one record of this kind (id: the holder's id,
 * parentId: the file id).
 */
export const FILE_SHARE_KIND = "file_share";

export interface FileShareRecord {
  containerId: string;
}

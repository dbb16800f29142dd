// Files: the domain rules (purposes, limits, expiry), shared by the Files service and by Uploads,
// which complete into a File. Record metadata and bytes are kept apart: the record in the
// RecordStore, the content in the BlobStore under the file's id (api.ts).
import { ApiError, invalidParam, missingParam } from "../../common/errors.js";
import type { Scope } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { newId } from "../../common/ids.js";
import { keysOfPresentRecords, removeBlobsOfDeleted } from "../../common/blobs.js";
import { FILE_KIND, FILE_SHARE_KIND } from "./records.js";

export const MAX_FILE_BYTES = 512 * 1024 * 1024;
export const MAX_BATCH_FILE_BYTES = 200 * 1024 * 1024;
export const BATCH_DEFAULT_TTL = 30 * 24 * 3600;
export const MIN_EXPIRY_SECONDS = 3600;
export const MAX_EXPIRY_SECONDS = 2_592_000;

/** Purposes a caller may upload with; the *_output / *-results ones are written by the platform. */
export const UPLOAD_PURPOSES = ["assistants", "batch", "fine-tune", "vision", "user_data", "evals"] as const;
export const ALL_PURPOSES = [...UPLOAD_PURPOSES, "assistants_output", "batch_output", "fine-tune-results"] as const;

export interface ExpiresAfterInput {
  anchor?: string;
  seconds?: bigint;
}

export function checkPurpose(purpose: string | undefined, param = "purpose"): string {
  if (purpose === undefined || purpose === "") throw missingParam(param);
  if (!(UPLOAD_PURPOSES as readonly string[]).includes(purpose))
    throw invalidParam(
      param,
      `Invalid value for '${param}': '${purpose}'. Supported values are: ${UPLOAD_PURPOSES.map((p) => `'${p}'`).join(", ")}.`,
    );
  return purpose;
}

/** Validates expires_after and returns its lifetime in seconds (undefined = none given). */
export function checkExpiresAfter(ea: ExpiresAfterInput | undefined, param = "expires_after"): number | undefined {
  if (!ea) return undefined;
  if (ea.anchor === undefined) throw missingParam(`${param}.anchor`);
  if (ea.anchor !== "created_at") throw invalidParam(`${param}.anchor`, `Invalid value for '${param}.anchor': expected 'created_at', got '${ea.anchor}'.`);
  if (ea.seconds === undefined) throw missingParam(`${param}.seconds`);
  const s = Number(ea.seconds);
  if (s < MIN_EXPIRY_SECONDS || s > MAX_EXPIRY_SECONDS)
    throw invalidParam(
      `${param}.seconds`,
      `Invalid value for '${param}.seconds': expected ${MIN_EXPIRY_SECONDS} to ${MAX_EXPIRY_SECONDS}, got ${s}.`,
      "integer_out_of_range",
    );
  return s;
}

/** Purpose-specific format rules the spec states (JSONL for batch and fine-tuning, 200 MB batches). */
/** Longest filename a File or Upload keeps. */
export const MAX_FILENAME_CHARS = 512;

/** A filename, trimmed: present and at most MAX_FILENAME_CHARS (`param` names where it came from). */
export function checkFilename(raw: string | undefined, param: string): string {
  const filename = raw?.trim();
  if (!filename) throw missingParam(param);
  if (filename.length > MAX_FILENAME_CHARS)
    throw invalidParam(
      param,
      `Invalid '${param}': a filename is at most ${MAX_FILENAME_CHARS} characters, but got one of ${filename.length}.`,
      "string_above_max_length",
    );
  return filename;
}

export function checkContentRules(purpose: string, filename: string, bytes: number, param = "file") {
  if ((purpose === "batch" || purpose === "fine-tune" || purpose === "evals") && !filename.toLowerCase().endsWith(".jsonl"))
    throw invalidParam(param, `Files with purpose '${purpose}' must be JSONL (a .jsonl filename), got '${filename}'.`, "invalid_file_format");
  if (purpose === "batch" && bytes > MAX_BATCH_FILE_BYTES)
    throw new ApiError(413, `Batch input files can be at most ${MAX_BATCH_FILE_BYTES} bytes; this one is ${bytes}.`, { param, code: "file_too_large" });
}

export function expiryFor(purpose: string, createdAt: number, ttl: number | undefined): number | null {
  if (ttl !== undefined) return createdAt + ttl;
  if (purpose === "batch") return createdAt + BATCH_DEFAULT_TTL;
  return null;
}

const MIME_BY_EXT: Record<string, string> = {
  jsonl: "application/jsonl",
  json: "application/json",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  html: "text/html",
  pdf: "application/pdf",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  mp4: "video/mp4",
};

export function mimeFor(filename: string): string {
  const ext = filename.toLowerCase().split(".").pop() ?? "";
  return MIME_BY_EXT[ext] ?? "application/octet-stream";
}

export function newFileId(): string {
  return newId("file-");
}

/**
 * Deletes a File's bytes once nothing holds them: neither the File (deleted, or expired) nor a
 * share. Every holder removes its own record first and then calls this, so whatever the
 * interleaving, the last one to go frees the bytes. Bytes that cannot be removed are left to the
 * orphan sweeper (common/blobs.ts).
 */
export async function releaseFileBytes(deps: Pick<ServiceDeps, "records" | "blobs" | "log">, scope: Scope, fileId: string): Promise<void> {
  if (await deps.records.collection(FILE_KIND).get(scope, fileId)) return;
  if ((await deps.records.collection(FILE_SHARE_KIND).count(scope, { parentId: fileId })) > 0) return;
  await removeBlobsOfDeleted(deps, [fileId]);
}

/**
 * Of File blob keys (a File's key is its id), the ones a File record (expired or not) or a share
 * still holds, in any project: the files area's answer to the orphan sweeper.
 */
export async function heldFileBlobs(deps: Pick<ServiceDeps, "records">, keys: string[]): Promise<Set<string>> {
  const held = await keysOfPresentRecords(deps.records, FILE_KIND, keys);
  const rest = keys.filter((k) => !held.has(k));
  for (const k of await deps.records.present(FILE_SHARE_KIND, rest, "parentId")) held.add(k);
  return held;
}

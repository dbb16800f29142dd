// Uploads (spec 4.6, 2.7, state table in 3): pending → completed | cancelled | expired.
// Parts are records under the upload with their bytes in their own blobs, so parts can arrive in
// parallel; completion streams them, in the caller's order, into the new file's blob.
import { removeBlobsOfDeleted } from "../../common/blobs.js";
import type { Scope, StoredRecord, WriteOp } from "../../storage/types.js";
import { capChars, capIds } from "../../common/caps.js";
import { ApiError, invalidParam, missingParam, notFound } from "../../common/errors.js";
import { BlobTooLarge, VersionConflict } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { newId } from "../../common/ids.js";
import { setTimer } from "../../jobs/expiry.js";
import { PART_KIND, UPLOAD_KIND, type PartRecord, type UploadedFile, type UploadRecord } from "./records.js";
import { checkContentRules, checkExpiresAfter, checkFilename, checkPurpose, expiryFor, filesApi, type ExpiresAfterInput, type FilesApi } from "../files/index.js";

export const UPLOAD_TIMER = "uploads.expire";
export const MAX_UPLOAD_BYTES = 8 * 1024 ** 3;
export const MAX_PART_BYTES = 64 * 1024 * 1024;
export const UPLOAD_TTL = 3600;
/** Parts one completion may list (the platform publishes none; S3 multipart uploads stop at the same number). */
export const MAX_PARTS = 10_000;
/** RFC 6838: a type and a subtype of at most 127 characters each, with room for parameters. */
export const MAX_MIME_TYPE_CHARS = 255;

const JSONL_TYPES = ["application/jsonl", "application/x-ndjson", "application/json", "application/jsonlines", "text/jsonl"];
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];

/** "mime_type must fit the purpose": JSONL for batch/fine-tune/evals, images for vision. */
export function checkMimeType(mime: string | undefined, purpose: string): string {
  if (mime === undefined || mime === "") throw missingParam("mime_type");
  capChars(mime, "mime_type", MAX_MIME_TYPE_CHARS);
  const base = mime.split(";")[0].trim().toLowerCase();
  if (!/^[a-z0-9][a-z0-9!#$&^_.+-]*\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(base))
    throw invalidParam("mime_type", `Invalid 'mime_type': '${mime}' is not a MIME type.`);
  const allowed = purpose === "vision" ? IMAGE_TYPES : ["batch", "fine-tune", "evals"].includes(purpose) ? JSONL_TYPES : undefined;
  if (allowed && !allowed.includes(base))
    throw invalidParam("mime_type", `Invalid 'mime_type' for purpose '${purpose}': '${mime}'. Supported: ${allowed.join(", ")}.`, "unsupported_mime_type");
  return base;
}

export class Uploads {
  private readonly files: FilesApi;
  constructor(private readonly deps: ServiceDeps) {
    this.files = filesApi(deps);
  }

  get uploads() {
    return this.deps.records.collection<UploadRecord>(UPLOAD_KIND);
  }
  get parts() {
    return this.deps.records.collection<PartRecord>(PART_KIND);
  }

  async create(scope: Scope, req: { bytes?: bigint; filename?: string; mimeType?: string; purpose?: string; expiresAfter?: ExpiresAfterInput }) {
    if (req.bytes === undefined) throw missingParam("bytes");
    const bytes = Number(req.bytes);
    if (bytes < 1 || bytes > MAX_UPLOAD_BYTES)
      throw invalidParam("bytes", `Invalid 'bytes': expected 1 to ${MAX_UPLOAD_BYTES} (8 GB), got ${bytes}.`, "integer_out_of_range");
    const filename = checkFilename(req.filename, "filename");
    const purpose = checkPurpose(req.purpose);
    const mimeType = checkMimeType(req.mimeType, purpose);
    checkContentRules(purpose, filename, bytes, "filename");
    const fileTtl = checkExpiresAfter(req.expiresAfter) ?? null;
    const createdAt = this.deps.clock.now();
    const rec: UploadRecord = {
      id: newId("upload_"),
      bytes,
      createdAt,
      expiresAt: createdAt + UPLOAD_TTL,
      filename,
      purpose,
      mimeType,
      status: "pending",
      fileTtl,
      file: null,
    };
    await this.uploads.insert(scope, { id: rec.id, createdAt, tag: rec.status, data: rec });
    await setTimer(this.deps.records, UPLOAD_TIMER, scope, rec.id, rec.expiresAt);
    return rec;
  }

  async get(scope: Scope, id: string): Promise<StoredRecord<UploadRecord>> {
    const r = await this.uploads.get(scope, id);
    if (!r) throw notFound("Upload object", id, "upload_id");
    // Past its deadline but not yet swept: it is expired all the same.
    if (r.data.status === "pending" && this.deps.clock.now() >= r.data.expiresAt) {
      await this.expire(scope, id);
      return this.get(scope, id);
    }
    return r;
  }

  private requirePending(u: UploadRecord, action: string) {
    if (u.status !== "pending")
      throw new ApiError(400, `Cannot ${action} an Upload with status '${u.status}'; it must be 'pending'.`, {
        param: "upload_id",
        code: "invalid_upload_state",
      });
  }

  async addPart(scope: Scope, uploadId: string, data: AsyncIterable<Uint8Array>): Promise<PartRecord> {
    const upload = (await this.get(scope, uploadId)).data;
    this.requirePending(upload, "add parts to");
    const id = newId("part_");
    let bytes: number;
    try {
      bytes = (await this.deps.blobs.put(id, data, { maxBytes: MAX_PART_BYTES })).bytes;
    } catch (e) {
      if (e instanceof BlobTooLarge)
        throw new ApiError(413, `Upload parts can be at most ${MAX_PART_BYTES} bytes (64 MB).`, { param: "data", code: "part_too_large" });
      throw e;
    }
    const part: PartRecord = { id, uploadId, createdAt: this.deps.clock.now(), bytes };
    try {
      if (bytes === 0) throw invalidParam("data", "An upload part cannot be empty.", "empty_part");
      await this.parts.insert(scope, { id, parentId: uploadId, createdAt: part.createdAt, data: part });
      // The upload may have been cancelled or completed while this part streamed in; a part
      // recorded after that would be orphaned, so it removes itself.
      const now = (await this.uploads.get(scope, uploadId))?.data;
      if (!now || now.status !== "pending") {
        await this.parts.delete(scope, id);
        this.requirePending(now ?? { ...upload, status: "expired" }, "add parts to");
      }
    } catch (e) {
      await this.deps.blobs.delete(id);
      throw e;
    }
    return part;
  }

  async complete(scope: Scope, uploadId: string, partIds: string[], md5: string | undefined): Promise<UploadRecord> {
    const stored = await this.get(scope, uploadId);
    const upload = stored.data;
    this.requirePending(upload, "complete");
    if (!partIds.length) throw missingParam("part_ids");
    capIds(partIds, "part_ids", MAX_PARTS);
    const seen = new Set<string>();
    const parts: PartRecord[] = [];
    for (const [i, pid] of partIds.entries()) {
      if (seen.has(pid)) throw invalidParam(`part_ids[${i}]`, `Invalid 'part_ids[${i}]': part '${pid}' is listed more than once.`);
      seen.add(pid);
      const p = await this.parts.get(scope, pid);
      if (!p || p.data.uploadId !== uploadId) throw invalidParam(`part_ids[${i}]`, `Invalid 'part_ids[${i}]': no such part '${pid}' in upload ${uploadId}.`, "invalid_part");
      parts.push(p.data);
    }
    const total = parts.reduce((n, p) => n + p.bytes, 0);
    if (total !== upload.bytes)
      throw invalidParam("part_ids", `The parts listed in 'part_ids' add up to ${total} bytes, but the upload was created with bytes=${upload.bytes}.`, "bytes_mismatch");
    if (md5 !== undefined && !/^[0-9a-fA-F]{32}$/.test(md5)) throw invalidParam("md5", "Invalid 'md5': expected 32 hexadecimal characters.");
    const fileId = this.files.newId();
    const info = await this.files.concatContent(fileId, parts.map((p) => p.id));
    try {
      if (md5 !== undefined && info.md5?.toLowerCase() !== md5.toLowerCase())
        throw invalidParam("md5", `The MD5 checksum of the assembled content (${info.md5}) does not match 'md5' (${md5}).`, "checksum_mismatch");
      const createdAt = this.deps.clock.now();
      const created = this.files.prepare(scope, fileId, info.bytes, {
        filename: upload.filename,
        purpose: upload.purpose,
        mimeType: upload.mimeType,
        createdAt,
        expiresAt: expiryFor(upload.purpose, createdAt, upload.fileTtl ?? undefined),
      });
      const { id, bytes, filename, purpose, mimeType, expiresAt } = created.file;
      const file: UploadedFile = { id, bytes, createdAt, filename, purpose, mimeType, expiresAt };
      const done: UploadRecord = { ...upload, status: "completed", file };
      // The cap is a condition of the write that records the File (limits/storage.ts).
      const ops: WriteOp[] = [...created.ops, { op: "update", kind: UPLOAD_KIND, scope, id: uploadId, data: done, expectVersion: stored.version, tag: "completed" }];
      await this.deps.storageCap.commit(scope, ops, info.bytes, "part_ids");
      await this.dropParts(scope, uploadId);
      return done;
    } catch (e) {
      await this.files.discardContent(fileId);
      if (e instanceof VersionConflict) throw new ApiError(400, "The upload changed while completing; retrieve it and try again.", { param: "upload_id", code: "invalid_upload_state" });
      throw e;
    }
  }

  async cancel(scope: Scope, uploadId: string): Promise<UploadRecord> {
    const stored = await this.get(scope, uploadId);
    this.requirePending(stored.data, "cancel");
    const rec: UploadRecord = { ...stored.data, status: "cancelled" };
    await this.transition(scope, stored, rec);
    return rec;
  }

  /** Timer handler: a still-pending upload past its hour becomes expired and its parts go. */
  async expire(scope: Scope, uploadId: string): Promise<void> {
    const stored = await this.uploads.get(scope, uploadId);
    if (!stored || stored.data.status !== "pending") return;
    await this.transition(scope, stored, { ...stored.data, status: "expired" });
  }

  private async transition(scope: Scope, stored: StoredRecord<UploadRecord>, next: UploadRecord) {
    try {
      await this.uploads.update(scope, stored.id, next, { expectVersion: stored.version, tag: next.status });
    } catch (e) {
      if (e instanceof VersionConflict) throw new ApiError(400, "The upload changed concurrently; retrieve it and try again.", { param: "upload_id", code: "invalid_upload_state" });
      throw e;
    }
    await this.dropParts(scope, stored.id);
  }

  private async dropParts(scope: Scope, uploadId: string) {
    for (;;) {
      const page = await this.parts.list(scope, { parentId: uploadId, limit: 500, order: "asc" });
      // Record first: a part whose bytes could not be removed is an orphan for the sweeper,
      // never a recorded part without bytes.
      for (const p of page.records) {
        await this.parts.delete(scope, p.id);
        await removeBlobsOfDeleted(this.deps, [p.id]);
      }
      if (!page.hasMore) return;
    }
  }
}

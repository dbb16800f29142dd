// FilesService (spec 4.5): upload, list, retrieve, download, delete.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  FilesService,
  type CreateFileRequest,
  type FileSchema,
} from "../../../gen/atrium/v1/files_pb.js";
import { scopeOf } from "../../auth/principal.js";
import { invalidParam } from "../../common/errors.js";
import { downloadBlob } from "../../common/download.js";
import type { StoredRecord } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { envelope, listQuery, runList } from "../../common/list.js";
import { FilesApi, type FileView } from "./api.js";
import { ALL_PURPOSES, MAX_FILE_BYTES, checkContentRules, checkExpiresAfter, checkFilename, checkPurpose, expiryFor } from "./files.js";
import type { FileRecord } from "./records.js";

/** The File message of a File record or view (the fields every form of a File carries). */
export function fileMessage(r: Pick<FileRecord, "id" | "bytes" | "createdAt" | "filename" | "purpose" | "expiresAt">): MessageInitShape<typeof FileSchema> {
  return {
    id: r.id,
    object: "file",
    bytes: BigInt(r.bytes),
    createdAt: BigInt(r.createdAt),
    filename: r.filename,
    purpose: r.purpose,
    status: "processed",
    expiresAt: r.expiresAt === null ? undefined : BigInt(r.expiresAt),
  };
}

const toMessage = (r: StoredRecord<FileView>) => fileMessage(r.data) as MessageInitShape<typeof FileSchema> & { id: string };

export function createFilesService(deps: ServiceDeps): ServiceImpl<typeof FilesService> {
  const files = new FilesApi(deps);
  return {
    async createFile(requests: AsyncIterable<CreateFileRequest>, ctx: HandlerContext) {
      const scope = scopeOf(ctx);
      const id = files.newId();
      const meta: { purpose?: string; filename?: string; ttl?: number } = {};
      // Metadata may arrive before or after the bytes (the official SDK sends the file first);
      // each piece is checked as soon as it arrives, so a bad purpose stops the upload early.
      async function* chunks() {
        for await (const r of requests) {
          if (r.purpose !== undefined) meta.purpose = checkPurpose(r.purpose);
          if (r.filename !== undefined) meta.filename = r.filename;
          if (r.expiresAfter) meta.ttl = checkExpiresAfter(r.expiresAfter);
          if (r.chunk.length) yield r.chunk;
        }
      }
      const bytes = await files.writeContent(id, chunks(), { maxBytes: MAX_FILE_BYTES, param: "file" });
      try {
        const purpose = checkPurpose(meta.purpose);
        const filename = checkFilename(meta.filename, "file");
        if (bytes === 0) throw invalidParam("file", "The file is empty.", "empty_file");
        checkContentRules(purpose, filename, bytes);
        const createdAt = deps.clock.now();
        const { file, ops } = files.prepare(scope, id, bytes, { filename, purpose, createdAt, expiresAt: expiryFor(purpose, createdAt, meta.ttl) });
        // The cap is a condition of the write that records the File (limits/storage.ts).
        await deps.storageCap.commit(scope, ops, bytes, "file");
        return fileMessage(file);
      } catch (e) {
        await files.discardContent(id);
        throw e;
      }
    },

    async listFiles(req, ctx) {
      const scope = scopeOf(ctx);
      const q = listQuery(req, { defaultLimit: 10_000, maxLimit: 10_000 });
      if (req.purpose !== undefined && !(ALL_PURPOSES as readonly string[]).includes(req.purpose))
        throw invalidParam("purpose", `Invalid value for 'purpose': '${req.purpose}'.`);
      const page = await runList(q, (q) => files.list(scope, { ...q, tag: req.purpose }));
      return envelope(page, toMessage);
    },

    async getFile(req, ctx) {
      return fileMessage(await files.get(scopeOf(ctx), req.fileId));
    },

    async *getFileContent(req, ctx) {
      const file = await files.get(scopeOf(ctx), req.fileId);
      yield* downloadBlob(deps.blobs, { key: file.blobKey, size: file.bytes, contentType: file.mimeType, range: req.range });
    },

    async deleteFile(req, ctx) {
      await files.delete(scopeOf(ctx), req.fileId);
      return { id: req.fileId, object: "file", deleted: true };
    },
  };
}

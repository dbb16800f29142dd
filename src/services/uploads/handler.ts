// UploadsService (spec 4.6): create, add parts (streamed), complete, cancel.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import { UploadsService, type AddUploadPartRequest, type UploadSchema } from "../../../gen/atrium/v1/uploads_pb.js";
import { scopeOf } from "../../auth/principal.js";
import { withClientStream } from "../../common/client-stream.js";
import { missingParam } from "../../common/errors.js";
import type { ServiceDeps } from "../deps.js";
import { fileMessage } from "../files/index.js";
import type { UploadRecord } from "./records.js";
import { Uploads } from "./uploads.js";

export function uploadMessage(u: UploadRecord): MessageInitShape<typeof UploadSchema> {
  return {
    id: u.id,
    object: "upload",
    bytes: BigInt(u.bytes),
    createdAt: BigInt(u.createdAt),
    expiresAt: BigInt(u.expiresAt),
    filename: u.filename,
    purpose: u.purpose,
    status: u.status,
    file: u.file ? fileMessage(u.file) : undefined,
  };
}

export function createUploadsService(deps: ServiceDeps, uploads = new Uploads(deps)): ServiceImpl<typeof UploadsService> {
  return {
    async createUpload(req, ctx) {
      return uploadMessage(await uploads.create(scopeOf(ctx), req));
    },

    async addUploadPart(requests: AsyncIterable<AddUploadPartRequest>, ctx: HandlerContext) {
      const scope = scopeOf(ctx);
      return withClientStream(requests, async (it) => {
        // The upload id comes with the first message (the REST path parameter, or the RPC caller's).
        let first = await it.next();
        const uploadId = first.done ? "" : first.value.uploadId;
        if (!uploadId) throw missingParam("upload_id");
        async function* data() {
          for (; !first.done; first = await it.next()) if (first.value.data.length) yield first.value.data;
        }
        const part = await uploads.addPart(scope, uploadId, data());
        return { id: part.id, object: "upload.part", createdAt: BigInt(part.createdAt), uploadId };
      });
    },

    async completeUpload(req, ctx) {
      return uploadMessage(await uploads.complete(scopeOf(ctx), req.uploadId, req.partIds, req.md5));
    },

    async cancelUpload(req, ctx) {
      return uploadMessage(await uploads.cancel(scopeOf(ctx), req.uploadId));
    },
  };
}

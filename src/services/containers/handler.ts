// ContainersService (spec 4.2): containers, and their files (upload, share a File, list,
// retrieve, download, delete). The rules live in containers.ts; this maps messages.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  ContainersService,
  type ContainerFileSchema,
  type ContainerSchema,
  type CreateContainerFileRequest,
} from "../../../gen/atrium/v1/containers_pb.js";
import { scopeOf } from "../../auth/principal.js";
import { capChars } from "../../common/caps.js";
import { ApiError, invalidParam, missingParam } from "../../common/errors.js";
import { withClientStream } from "../../common/client-stream.js";
import { downloadBlob } from "../../common/download.js";
import { envelope, listQuery, runList } from "../../common/list.js";
import type { Scope, StoredRecord } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { MAX_NAME_CHARS, type Containers } from "./containers.js";
import type { ContainerFileRecord, ContainerRecord } from "./records.js";

export function containerMessage(r: ContainerRecord): MessageInitShape<typeof ContainerSchema> & { id: string } {
  return {
    id: r.id,
    object: "container",
    createdAt: BigInt(r.createdAt),
    name: r.name,
    status: r.status,
    expiresAfter: { anchor: "last_active_at", minutes: r.minutes },
    lastActiveAt: BigInt(r.lastActiveAt),
    memoryLimit: r.memoryLimit,
    // Only the policy itself: domain secrets are never returned.
    networkPolicy: r.networkPolicy ? { type: r.networkPolicy.type, allowedDomains: r.networkPolicy.allowedDomains } : undefined,
  };
}

export function containerFileMessage(r: ContainerFileRecord): MessageInitShape<typeof ContainerFileSchema> & { id: string } {
  return {
    id: r.id,
    object: "container.file",
    bytes: BigInt(r.bytes),
    containerId: r.containerId,
    createdAt: BigInt(r.createdAt),
    path: r.path,
    source: r.source,
  };
}

const bothGiven = () => invalidParam("file_id", "Give either the content (multipart 'file') or 'file_id', not both.");

/**
 * CreateContainerFile's request stream: REST sends one message (JSON {file_id}) or the multipart
 * stream (path and form fields first, then one message per chunk); RPC callers name the
 * container in the first message.
 */
async function addFile(containers: Containers, scope: Scope, it: AsyncIterator<CreateContainerFileRequest>) {
  const first = await it.next();
  const head = first.done ? undefined : first.value;
  if (!head?.containerId) throw missingParam("container_id");
  const containerId = head.containerId;

  if (head.fileId !== undefined) {
    if (head.filename !== undefined || head.chunk.length || !(await it.next()).done) throw bothGiven();
    return containers.addSharedFile(scope, containerId, head.fileId);
  }
  let filename = head.filename;
  let next = await it.next();
  if (next.done && filename === undefined && !head.chunk.length)
    throw new ApiError(400, "Missing required parameter: 'file_id' (JSON) or 'file' (multipart/form-data).", {
      param: "file_id",
      code: "missing_required_parameter",
    });
  async function* chunks() {
    if (head!.chunk.length) yield head!.chunk;
    for (; !next.done; next = await it.next()) {
      const r = next.value;
      if (r.containerId && r.containerId !== containerId) throw invalidParam("container_id", "'container_id' differs between messages of one upload.");
      if (r.fileId !== undefined) throw bothGiven();
      if (r.filename !== undefined) filename = r.filename;
      if (r.chunk.length) yield r.chunk;
    }
  }
  return containers.addUploadedFile(scope, containerId, () => filename, chunks());
}

export function createContainersService(deps: ServiceDeps, containers: Containers): ServiceImpl<typeof ContainersService> {
  return {
    async createContainer(req, ctx) {
      const rec = await containers.create(scopeOf(ctx), {
        name: req.name,
        expiresAfter: req.expiresAfter,
        fileIds: req.fileIds,
        memoryLimit: req.memoryLimit,
        networkPolicy: req.networkPolicy,
        skills: req.skills,
      });
      return containerMessage(rec);
    },

    async listContainers(req, ctx) {
      const scope = scopeOf(ctx);
      const q = listQuery(req);
      const name = capChars(req.name, "name", MAX_NAME_CHARS) || undefined;
      const page = await runList(q, (q) => containers.list(scope, q, name));
      return envelope(page, (r: StoredRecord<ContainerRecord>) => containerMessage(r.data));
    },

    async getContainer(req, ctx) {
      return containerMessage(await containers.retrieve(scopeOf(ctx), req.containerId));
    },

    async deleteContainer(req, ctx) {
      await containers.delete(scopeOf(ctx), req.containerId);
      return { id: req.containerId, object: "container.deleted", deleted: true };
    },

    async createContainerFile(requests: AsyncIterable<CreateContainerFileRequest>, ctx: HandlerContext) {
      return containerFileMessage(await withClientStream(requests, (it) => addFile(containers, scopeOf(ctx), it)));
    },

    async listContainerFiles(req, ctx) {
      const scope = scopeOf(ctx);
      const q = listQuery(req);
      const page = await runList(q, (q) => containers.listFiles(scope, req.containerId, q));
      return envelope(page, (r: StoredRecord<ContainerFileRecord>) => containerFileMessage(r.data));
    },

    async getContainerFile(req, ctx) {
      return containerFileMessage(await containers.getFile(scopeOf(ctx), req.containerId, req.fileId));
    },

    async *getContainerFileContent(req, ctx) {
      const f = await containers.getFile(scopeOf(ctx), req.containerId, req.fileId);
      yield* downloadBlob(deps.blobs, { key: f.blobKey, size: f.bytes, contentType: f.mimeType, range: req.range });
    },

    async deleteContainerFile(req, ctx) {
      await containers.deleteFile(scopeOf(ctx), req.containerId, req.fileId);
      return { id: req.fileId, object: "container.file.deleted", deleted: true };
    },
  };
}

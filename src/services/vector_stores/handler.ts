// VectorStoresService (spec 4.3, 4.4): stores, their files, file batches and search. The rules
// live in vector-stores.ts; this checks requests (validate.ts) and maps records to messages.
import { fromJson, type JsonValue, type MessageInitShape } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  VectorStoresService,
  type ChunkingStrategy,
  type CreateFileBatchRequest,
  type VectorStoreFileBatchSchema,
  type VectorStoreFileSchema,
  type VectorStoreSchema,
} from "../../../gen/atrium/v1/vector_stores_pb.js";
import { principalOf, scopeOf } from "../../auth/principal.js";
import type { AreaCharge, RateLimits } from "../../limits/index.js";
import { capChars, MAX_ID_CHARS } from "../../common/caps.js";
import { invalidParam, missingParam } from "../../common/errors.js";
import { envelope, listQuery, runList } from "../../common/list.js";
import type { StoredRecord } from "../../storage/types.js";
import type { FileBatchRecord, StoreRecord, VsFileRecord } from "./records.js";
import {
  MAX_BATCH_FILES,
  MAX_DESCRIPTION_CHARS,
  MAX_NAME_CHARS,
  checkAttributesJson,
  checkChunking,
  checkExpiresAfter,
  checkExpiresAfterJson,
  checkMetadataJson,
  checkSearch,
  checkStatusFilter,
  jsonOf,
} from "./validate.js";
import type { FileBatches } from "./file-batches.js";
import type { AttachItem, BatchView, StoreView, VectorStores } from "./vector-stores.js";

/**
 * How often the official SDKs' pollers should ask again while something is in progress: 250 ms
 * keeps one poller at 240 requests a minute, inside its store's 300 (spec 8), with room for the
 * calls that started the work.
 */
const POLL_AFTER_MS = "250";

const valueOf = (json: JsonValue | null | undefined): Value | undefined => (json === null || json === undefined ? undefined : fromJson(ValueSchema, json));

function storeMessage(v: StoreView): MessageInitShape<typeof VectorStoreSchema> & { id: string } {
  const s = v.store;
  return {
    id: s.id,
    object: "vector_store",
    createdAt: BigInt(s.createdAt),
    name: s.name,
    usageBytes: BigInt(v.usageBytes),
    fileCounts: countsMessage(v.counts),
    status: v.status,
    lastActiveAt: BigInt(s.lastActiveAt),
    metadata: valueOf(s.metadata),
    expiresAfter: s.expiresAfter ?? undefined,
    expiresAt: v.expiresAt === null ? undefined : BigInt(v.expiresAt),
  };
}

function countsMessage(c: StoreView["counts"]) {
  return {
    inProgress: BigInt(c.in_progress),
    completed: BigInt(c.completed),
    failed: BigInt(c.failed),
    cancelled: BigInt(c.cancelled),
    total: BigInt(c.total),
  };
}

export function fileMessage(r: VsFileRecord): MessageInitShape<typeof VectorStoreFileSchema> & { id: string } {
  return {
    id: r.fileId,
    object: "vector_store.file",
    createdAt: BigInt(r.createdAt),
    vectorStoreId: r.storeId,
    status: r.status,
    usageBytes: BigInt(r.usageBytes),
    lastError: r.lastError ?? undefined,
    attributes: valueOf(r.attributes),
    chunkingStrategy: { type: "static", static: { maxChunkSizeTokens: r.chunking.maxTokens, chunkOverlapTokens: r.chunking.overlapTokens } },
  };
}

function batchMessage(v: BatchView): MessageInitShape<typeof VectorStoreFileBatchSchema> & { id: string } {
  return {
    id: v.batch.id,
    object: "vector_store.files_batch",
    createdAt: BigInt(v.batch.createdAt),
    vectorStoreId: v.batch.storeId,
    status: v.status,
    fileCounts: countsMessage(v.counts),
  };
}

const pollHint = (ctx: HandlerContext, inProgress: boolean) => {
  if (inProgress) ctx.responseHeader.set("openai-poll-after-ms", POLL_AFTER_MS);
};

function fileIdOf(id: string | undefined, param: string): string {
  if (id === undefined || id === "") throw missingParam(param);
  return capChars(id, param, MAX_ID_CHARS);
}

/** A batch's files: `file_ids` (with the top-level attributes and chunking) or `files`, not both. */
function batchItems(req: CreateFileBatchRequest): AttachItem[] {
  const hasIds = req.fileIds.length > 0;
  const hasFiles = req.files.length > 0;
  if (hasIds && hasFiles) throw invalidParam("files", "Give either 'file_ids' or 'files', not both.", "mutually_exclusive_parameters");
  if (!hasIds && !hasFiles) throw missingParam("file_ids");
  const n = hasIds ? req.fileIds.length : req.files.length;
  if (n > MAX_BATCH_FILES)
    throw invalidParam(hasIds ? "file_ids" : "files", `A file batch holds at most ${MAX_BATCH_FILES} files; got ${n}.`, "array_above_max_length");
  if (hasIds) {
    const attributes = checkAttributesJson(jsonOf(req.attributes));
    const chunking = checkChunking(req.chunkingStrategy);
    return req.fileIds.map((id, i) => ({ fileId: fileIdOf(id, `file_ids[${i}]`), param: `file_ids[${i}]`, attributes, chunking }));
  }
  // With `files`, the top-level attributes and chunking strategy are ignored (spec 4.4).
  return req.files.map((f, i) => ({
    fileId: fileIdOf(f.fileId, `files[${i}].file_id`),
    param: `files[${i}].file_id`,
    attributes: checkAttributesJson(jsonOf(f.attributes), `files[${i}].attributes`),
    chunking: checkChunking(f.chunkingStrategy as ChunkingStrategy | undefined, `files[${i}].chunking_strategy`),
  }));
}

/** Distinct files of an attach (a file named twice is attached once). */
const distinctFiles = (items: AttachItem[]) => new Set(items.map((i) => i.fileId)).size;

/**
 * Spec 8's vector-store limits: the /files and /file_batches endpoints of one store share 300
 * requests per minute (`storeId`), and an organization attaches at most 2,000 files per minute
 * (`attached`: 1 for a file, N for a batch or a store created with N files). Charged together,
 * all or nothing, before the call changes anything: a refused call attaches nothing and costs
 * nothing. Both rates come from the organization's `rate_limits` (src/limits/config.ts).
 */
function vectorStoreLimits(limits: RateLimits | undefined) {
  return (ctx: HandlerContext, storeId: string | undefined, attached = 0): void | Promise<void> => {
    if (limits === undefined) return;
    const p = principalOf(ctx);
    const charges: AreaCharge[] = [];
    // A store is charged under its project: another project naming the same id spends nothing of it.
    if (storeId)
      charges.push({
        key: `${p.projectId}:${storeId}`,
        rule: limits.organizationRule(p.organizationId, "vector_store_file_requests_per_minute"),
        what: `requests per minute to the files and file batches of vector store ${storeId}`,
      });
    if (attached > 0)
      charges.push({
        key: "",
        rule: limits.organizationRule(p.organizationId, "vector_store_attached_files_per_minute"),
        what: `files attached to vector stores per minute in organization ${p.organizationId}`,
        cost: attached,
      });
    return limits.enforceAll(p.organizationId, charges);
  };
}

/**
 * Checks an attach request, then charges the limits. A request that fails the checks still
 * counts toward its store's requests (failed requests count, spec 8), but attaches no files.
 */
async function chargedAttach<T>(limited: ReturnType<typeof vectorStoreLimits>, ctx: HandlerContext, storeId: string | undefined, check: () => T, files: (t: T) => number): Promise<T> {
  let checked: T;
  try {
    checked = check();
  } catch (e) {
    await limited(ctx, storeId);
    throw e;
  }
  await limited(ctx, storeId, files(checked));
  return checked;
}

type Impl = ServiceImpl<typeof VectorStoresService>;
type Limited = ReturnType<typeof vectorStoreLimits>;

export function createVectorStoresService(vs: VectorStores, fileBatches: FileBatches, limits?: RateLimits): Impl {
  const limited = vectorStoreLimits(limits);
  const batchCalls = fileBatchCalls(fileBatches, limited);
  return {
    ...storeCalls(vs, limited),
    ...fileCalls(vs, limited),
    // The API names the file batch calls two ways; both reach the same calls.
    createFileBatch: batchCalls.create,
    getFileBatch: batchCalls.get,
    cancelFileBatch: batchCalls.cancel,
    listFileBatchFiles: batchCalls.listFiles,
    createFilesBatch: batchCalls.create,
    getFilesBatch: batchCalls.get,
    cancelFilesBatch: batchCalls.cancel,
    listFilesBatchFiles: batchCalls.listFiles,
  };
}

type StoreCall = "createVectorStore" | "listVectorStores" | "getVectorStore" | "updateVectorStore" | "deleteVectorStore" | "searchVectorStore";

function storeCalls(vs: VectorStores, limited: Limited): Pick<Impl, StoreCall> {
  const storeOut = async (ctx: HandlerContext, rec: StoredRecord<StoreRecord>) => {
    const v = await vs.view(scopeOf(ctx), rec);
    pollHint(ctx, v.status === "in_progress");
    return storeMessage(v);
  };
  return {
    async createVectorStore(req, ctx) {
      if (req.fileIds.length > MAX_BATCH_FILES)
        throw invalidParam("file_ids", `At most ${MAX_BATCH_FILES} files can be attached when creating a vector store; got ${req.fileIds.length}.`, "array_above_max_length");
      const chunking = checkChunking(req.chunkingStrategy); // checked even when there are no files to apply it to
      const input = {
        name: capChars(req.name, "name", MAX_NAME_CHARS),
        description: capChars(req.description, "description", MAX_DESCRIPTION_CHARS),
        metadata: checkMetadataJson(jsonOf(req.metadata)),
        expiresAfter: checkExpiresAfter(req.expiresAfter),
        items: req.fileIds.map((id, i) => ({ fileId: fileIdOf(id, `file_ids[${i}]`), param: `file_ids[${i}]`, attributes: null, chunking })),
      };
      await limited(ctx, undefined, distinctFiles(input.items));
      const rec = await vs.create(scopeOf(ctx), input);
      return storeOut(ctx, rec);
    },

    async listVectorStores(req, ctx) {
      const scope = scopeOf(ctx);
      const page = await runList(listQuery(req), (q) => vs.list(scope, q));
      const data = [];
      for (const r of page.records) data.push(storeMessage(await vs.view(scope, r)));
      return { object: "list", data, firstId: data[0]?.id, lastId: data[data.length - 1]?.id, hasMore: page.hasMore };
    },

    async getVectorStore(req, ctx) {
      return storeOut(ctx, await vs.get(scopeOf(ctx), req.vectorStoreId));
    },

    async updateVectorStore(req, ctx) {
      const rec = await vs.update(scopeOf(ctx), req.vectorStoreId, {
        name: capChars(req.name, "name", MAX_NAME_CHARS),
        metadata: checkMetadataJson(jsonOf(req.metadata)),
        expiresAfter: checkExpiresAfterJson(jsonOf(req.expiresAfter)),
      });
      return storeOut(ctx, rec);
    },

    async deleteVectorStore(req, ctx) {
      await vs.delete(scopeOf(ctx), req.vectorStoreId);
      return { id: req.vectorStoreId, object: "vector_store.deleted", deleted: true };
    },

    async searchVectorStore(req, ctx) {
      const params = checkSearch(req);
      const { queries, hits } = await vs.search(scopeOf(ctx), req.vectorStoreId, params, ctx.signal);
      return {
        object: "vector_store.search_results.page",
        searchQuery: queries,
        data: hits.map((h) => ({
          fileId: h.fileId,
          filename: h.filename,
          score: h.score,
          attributes: valueOf(h.attributes),
          content: [{ type: "text", text: h.text }],
        })),
        hasMore: false,
      };
    },
  };
}

type FileCall = "createVectorStoreFile" | "listVectorStoreFiles" | "getVectorStoreFile" | "updateVectorStoreFile" | "deleteVectorStoreFile" | "getVectorStoreFileContent";

function fileCalls(vs: VectorStores, limited: Limited): Pick<Impl, FileCall> {
  return {
    async createVectorStoreFile(req, ctx) {
      const scope = scopeOf(ctx);
      const item: AttachItem = await chargedAttach(
        limited,
        ctx,
        req.vectorStoreId,
        () => ({
          fileId: fileIdOf(req.fileId, "file_id"),
          param: "file_id",
          attributes: checkAttributesJson(jsonOf(req.attributes)),
          chunking: checkChunking(req.chunkingStrategy),
        }),
        () => 1,
      );
      const store = await vs.getUsable(scope, req.vectorStoreId);
      await vs.attach(scope, store, [item], await vs.loadFiles(scope, [item]), null);
      const rec = await vs.getFile(scope, req.vectorStoreId, item.fileId);
      pollHint(ctx, rec.data.status === "in_progress");
      return fileMessage(rec.data);
    },

    async listVectorStoreFiles(req, ctx) {
      await limited(ctx, req.vectorStoreId);
      const q = listQuery(req);
      const status = checkStatusFilter(req.filter);
      const page = await runList(q, (q) => vs.listFiles(scopeOf(ctx), req.vectorStoreId, q, status));
      return envelope(page, (r) => fileMessage(r.data));
    },

    async getVectorStoreFile(req, ctx) {
      await limited(ctx, req.vectorStoreId);
      const rec = await vs.getFile(scopeOf(ctx), req.vectorStoreId, req.fileId);
      pollHint(ctx, rec.data.status === "in_progress");
      return fileMessage(rec.data);
    },

    async updateVectorStoreFile(req, ctx) {
      await limited(ctx, req.vectorStoreId);
      const json = jsonOf(req.attributes);
      if (json === undefined) throw missingParam("attributes");
      const rec = await vs.updateFileAttributes(scopeOf(ctx), req.vectorStoreId, req.fileId, checkAttributesJson(json));
      return fileMessage(rec.data);
    },

    async deleteVectorStoreFile(req, ctx) {
      await limited(ctx, req.vectorStoreId);
      await vs.detach(scopeOf(ctx), req.vectorStoreId, req.fileId);
      return { id: req.fileId, object: "vector_store.file.deleted", deleted: true };
    },

    async getVectorStoreFileContent(req, ctx) {
      await limited(ctx, req.vectorStoreId);
      const texts = await vs.fileContent(scopeOf(ctx), req.vectorStoreId, req.fileId);
      return { object: "vector_store.file_content.page", data: texts.map((text) => ({ type: "text", text })), hasMore: false };
    },
  };
}

function fileBatchCalls(fileBatches: FileBatches, limited: Limited) {
  const batchOut = async (ctx: HandlerContext, rec: StoredRecord<FileBatchRecord>) => {
    const v = await fileBatches.view(scopeOf(ctx), rec);
    pollHint(ctx, v.status === "in_progress");
    return batchMessage(v);
  };
  return {
    async create(req: CreateFileBatchRequest, ctx: HandlerContext) {
      const items = await chargedAttach(limited, ctx, req.vectorStoreId, () => batchItems(req), distinctFiles);
      return batchOut(ctx, await fileBatches.create(scopeOf(ctx), req.vectorStoreId, items));
    },
    async get(req: { vectorStoreId: string; batchId: string }, ctx: HandlerContext) {
      await limited(ctx, req.vectorStoreId);
      return batchOut(ctx, await fileBatches.get(scopeOf(ctx), req.vectorStoreId, req.batchId));
    },
    async cancel(req: { vectorStoreId: string; batchId: string }, ctx: HandlerContext) {
      await limited(ctx, req.vectorStoreId);
      return batchOut(ctx, await fileBatches.cancel(scopeOf(ctx), req.vectorStoreId, req.batchId));
    },
    async listFiles(
      req: { vectorStoreId: string; batchId: string; after?: string; before?: string; limit?: number; order?: string; filter?: string },
      ctx: HandlerContext,
    ) {
      await limited(ctx, req.vectorStoreId);
      const q = listQuery(req);
      const status = checkStatusFilter(req.filter);
      const page = await runList(q, (q) => fileBatches.listFiles(scopeOf(ctx), req.vectorStoreId, req.batchId, q, status));
      return envelope(page, (r) => fileMessage(r.data));
    },
  };
}

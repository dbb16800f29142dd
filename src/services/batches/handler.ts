// BatchesService (spec 2.13, 4.10): RPC messages ↔ batches.ts.
import type { ServiceImpl } from "@connectrpc/connect";
import { BatchesService } from "../../../gen/atrium/v1/batches_pb.js";
import { principalOf, scopeOf } from "../../auth/principal.js";
import { envelope, listQuery, runList } from "../../common/list.js";
import type { StoredRecord } from "../../storage/types.js";
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import type { Batches } from "./batches.js";
import type { BatchRecord } from "./records.js";

const jsonOf = (v: Value | undefined) => (v === undefined ? undefined : toJson(ValueSchema, v));
const valueOf = (j: unknown) => fromJson(ValueSchema, j as JsonValue);
const big = (n: number | null) => (n === null ? undefined : BigInt(n));

export function batchMessage(b: BatchRecord) {
  return {
    id: b.id,
    object: "batch",
    endpoint: b.endpoint,
    errors: b.errors ? { object: "list", data: b.errors.map((e) => ({ code: e.code, line: big(e.line), message: e.message, param: e.param ?? undefined })) } : undefined,
    inputFileId: b.inputFileId,
    completionWindow: b.completionWindow,
    status: b.status,
    outputFileId: b.outputFileId ?? undefined,
    errorFileId: b.errorFileId ?? undefined,
    createdAt: BigInt(b.createdAt),
    inProgressAt: big(b.inProgressAt),
    expiresAt: BigInt(b.expiresAt),
    finalizingAt: big(b.finalizingAt),
    completedAt: big(b.completedAt),
    failedAt: big(b.failedAt),
    expiredAt: big(b.expiredAt),
    cancellingAt: big(b.cancellingAt),
    cancelledAt: big(b.cancelledAt),
    requestCounts: { completed: BigInt(b.requestCounts.completed), failed: BigInt(b.requestCounts.failed), total: BigInt(b.requestCounts.total) },
    metadata: b.metadata ? valueOf(b.metadata) : undefined,
    model: b.model ?? undefined,
    usage: {
      inputTokens: BigInt(b.usage.input_tokens),
      inputTokensDetails: { cachedTokens: BigInt(b.usage.cached_tokens) },
      outputTokens: BigInt(b.usage.output_tokens),
      outputTokensDetails: { reasoningTokens: BigInt(b.usage.reasoning_tokens) },
      totalTokens: BigInt(b.usage.total_tokens),
    },
  };
}

export function createBatchesService(batches: Batches): ServiceImpl<typeof BatchesService> {
  return {
    async createBatch(req, ctx) {
      const rec = await batches.create(scopeOf(ctx), principalOf(ctx), {
        inputFileId: req.inputFileId,
        endpoint: req.endpoint,
        completionWindow: req.completionWindow,
        metadata: jsonOf(req.metadata),
        outputExpiresAfter: req.outputExpiresAfter && { anchor: req.outputExpiresAfter.anchor, seconds: req.outputExpiresAfter.seconds },
      });
      return batchMessage(rec);
    },

    async getBatch(req, ctx) {
      return batchMessage((await batches.get(scopeOf(ctx), req.batchId)).data);
    },

    async listBatches(req, ctx) {
      const scope = scopeOf(ctx);
      const q = listQuery(req);
      const page = await runList(q, (q) => batches.list(scope, { after: q.after, limit: q.limit }));
      return envelope(page, (r: StoredRecord<BatchRecord>) => batchMessage(r.data));
    },

    async cancelBatch(req, ctx) {
      return batchMessage(await batches.cancel(scopeOf(ctx), req.batchId));
    },
  };
}

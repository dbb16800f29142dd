// Vector stores through typed RPC clients: Connect (JSON over HTTP/1.1, binary over h2c) and gRPC,
// on the same port and against the same implementation as REST. Union and nullable JSON fields
// (query, filters, attributes, metadata) travel as google.protobuf.Value.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { VectorStoresService } from "../../../gen/atrium/v1/vector_stores_pb.js";
import { API_KEY, KEYS, startTestServer, type TestServer } from "../../shared/server.js";
import { as, expectRpcError, registry, restUpload } from "../../shared/rpc.js";
import { TOPICS, longText } from "../../shared/vector-stores.js";

const value = (json: JsonValue) => fromJson(ValueSchema, json);
const me = as(API_KEY);

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

const transports: Array<[string, (s: TestServer) => Transport]> = [
  ["Connect JSON over HTTP/1.1", (s) => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1", useBinaryFormat: false, jsonOptions: { registry } })],
  ["Connect binary over h2c", (s) => createConnectTransport({ baseUrl: s.url, httpVersion: "2", useBinaryFormat: true })],
  ["gRPC over h2c", (s) => createGrpcTransport({ baseUrl: s.url })],
];

async function waitFile(c: Client<typeof VectorStoresService>, vectorStoreId: string, fileId: string) {
  for (let i = 0; i < 600; i++) {
    const f = await c.getVectorStoreFile({ vectorStoreId, fileId }, me);
    if (f.status !== "in_progress") return f;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("file still in progress");
}

describe.each(transports)("%s", (_name, make) => {
  let c: Client<typeof VectorStoresService>;
  const fileIds: string[] = [];
  beforeAll(async () => {
    c = createClient(VectorStoresService, make(s));
    for (const [i, t] of TOPICS.slice(0, 4).entries()) fileIds.push((await restUpload(s.baseURL, API_KEY, `t${i}.txt`, "assistants", Buffer.from(t))).id);
  });

  it("creates a store, attaches files with attributes, searches with a filter", async () => {
    const vs = await c.createVectorStore({ name: "rpc", metadata: value({ owner: "rpc" }) }, me);
    expect(vs).toMatchObject({ object: "vector_store", name: "rpc", status: "completed" });
    expect(vs.id).toMatch(/^vs_/);
    expect(vs.metadata?.kind).toEqual({ case: "structValue", value: expect.anything() });

    for (const [i, fileId] of fileIds.entries()) {
      const f = await c.createVectorStoreFile({ vectorStoreId: vs.id, fileId, attributes: value({ n: i, even: i % 2 === 0 }) }, me);
      expect(f).toMatchObject({ id: fileId, object: "vector_store.file", vectorStoreId: vs.id });
    }
    for (const fileId of fileIds) expect((await waitFile(c, vs.id, fileId)).status).toBe("completed");
    const got = await c.getVectorStore({ vectorStoreId: vs.id }, me);
    expect(got.fileCounts).toMatchObject({ completed: 4n, total: 4n });
    expect(got.usageBytes).toBeGreaterThan(0n);

    const r = await c.searchVectorStore({ vectorStoreId: vs.id, query: value("largest planet gas giant"), maxNumResults: 3 }, me);
    expect(r.object).toBe("vector_store.search_results.page");
    expect(r.searchQuery).toEqual(["largest planet gas giant"]);
    expect(r.data[0]).toMatchObject({ fileId: fileIds[2], filename: "t2.txt", content: [{ type: "text", text: TOPICS[2] }] });

    const filtered = await c.searchVectorStore(
      { vectorStoreId: vs.id, query: value(["bread", "orchestra", "planet", "marathon"]), maxNumResults: 50, filters: value({ type: "eq", key: "even", value: true }) },
      me,
    );
    expect(new Set(filtered.data.map((d) => d.fileId))).toEqual(new Set([fileIds[0], fileIds[2]]));

    const listed = await c.listVectorStoreFiles({ vectorStoreId: vs.id, order: "asc", filter: "completed" }, me);
    expect(listed.data.map((f) => f.id)).toEqual(fileIds);
    const upd = await c.updateVectorStoreFile({ vectorStoreId: vs.id, fileId: fileIds[0], attributes: value(null) }, me);
    expect(upd.attributes).toBeUndefined();
    const del = await c.deleteVectorStoreFile({ vectorStoreId: vs.id, fileId: fileIds[3] }, me);
    expect(del).toMatchObject({ id: fileIds[3], object: "vector_store.file.deleted", deleted: true });
    expect((await c.deleteVectorStore({ vectorStoreId: vs.id }, me)).deleted).toBe(true);
  });

  it("file batches: create, get, list files, cancel (both spellings are one implementation)", async () => {
    const vs = await c.createVectorStore({ name: "rpc-batch" }, me);
    const b = await c.createFileBatch({ vectorStoreId: vs.id, fileIds: fileIds.slice(0, 2) }, me);
    expect(b).toMatchObject({ object: "vector_store.files_batch", vectorStoreId: vs.id });
    let got = b;
    for (let i = 0; i < 600 && got.status === "in_progress"; i++) {
      await new Promise((r) => setTimeout(r, 50));
      got = await c.getFilesBatch({ vectorStoreId: vs.id, batchId: b.id }, me);
    }
    expect(got).toMatchObject({ status: "completed", fileCounts: { completed: 2n, total: 2n } });
    const files = await c.listFileBatchFiles({ vectorStoreId: vs.id, batchId: b.id }, me);
    expect(files.data.map((f) => f.id).sort()).toEqual(fileIds.slice(0, 2).sort());
    // Nothing left to stop: the batch stays completed.
    expect((await c.cancelFileBatch({ vectorStoreId: vs.id, batchId: b.id }, me)).status).toBe("completed");
  });

  it("every filter operator and nested compounds, a paraphrase and expiry: the same answers as REST", async () => {
    const attrs: JsonValue[] = [{ region: "eu", year: 2020, draft: false }, { region: "us", year: 2021, draft: true }, { region: "eu", year: 2022, draft: true }, { year: "2022" }];
    const vs = await c.createVectorStore({ name: "rpc-filters", expiresAfter: { anchor: "last_active_at", days: 2 } }, me);
    expect(vs.expiresAfter).toMatchObject({ anchor: "last_active_at", days: 2 });
    expect(vs.expiresAt).toBe(vs.lastActiveAt! + 2n * 86400n);
    for (const [i, fileId] of fileIds.entries()) await c.createVectorStoreFile({ vectorStoreId: vs.id, fileId, attributes: value(attrs[i]!) }, me);
    for (const fileId of fileIds) expect((await waitFile(c, vs.id, fileId)).status).toBe("completed");
    const query = TOPICS.slice(0, 4).map((t) => t.split(" ").slice(0, 6).join(" "));
    const rest = async (body: Record<string, unknown>) => {
      const res = await fetch(`${s.baseURL}/vector_stores/${vs.id}/search`, { method: "POST", headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" }, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      return ((await res.json()) as { data: Array<{ file_id: string; score: number }> }).data.map((d) => [d.file_id, d.score]);
    };
    const rpc = async (body: { query: JsonValue; filters?: JsonValue; max_num_results: number }) =>
      (await c.searchVectorStore({ vectorStoreId: vs.id, query: value(body.query), maxNumResults: body.max_num_results, ...(body.filters !== undefined && { filters: value(body.filters) }) }, me)).data.map((d) => [d.fileId, d.score]);
    const filters: Array<[JsonValue, number[]]> = [
      [{ type: "eq", key: "region", value: "eu" }, [0, 2]],
      [{ type: "ne", key: "region", value: "eu" }, [1, 3]],
      [{ type: "gt", key: "year", value: 2020 }, [1, 2]],
      [{ type: "gte", key: "year", value: 2021 }, [1, 2]],
      [{ type: "lt", key: "year", value: 2021 }, [0]],
      [{ type: "lte", key: "year", value: 2021 }, [0, 1]],
      [{ type: "in", key: "year", value: [2020, 2022] }, [0, 2]],
      [{ type: "nin", key: "region", value: ["us"] }, [0, 2, 3]],
      [{ type: "eq", key: "draft", value: true }, [1, 2]],
      [{ type: "eq", key: "year", value: "2022" }, [3]],
      [{ type: "or", filters: [{ type: "and", filters: [{ type: "eq", key: "region", value: "eu" }, { type: "eq", key: "draft", value: false }] }, { type: "eq", key: "region", value: "us" }] }, [0, 1]],
    ];
    for (const [f, want] of filters) {
      const body = { query, filters: f, max_num_results: 50 };
      const got = await rpc(body);
      expect(got, JSON.stringify(f)).toEqual(await rest(body));
      expect([...new Set(got.map(([id]) => fileIds.indexOf(id as string)))].sort(), JSON.stringify(f)).toEqual(want);
    }
    // A question sharing no keyword with its document (TOPICS[2]: Jupiter) ranks it first on both.
    const paraphrase = { query: "Which is the biggest world circling our sun?", max_num_results: 4 };
    expect(await rpc(paraphrase)).toEqual(await rest(paraphrase));
    expect((await rpc(paraphrase))[0]![0]).toBe(fileIds[2]);
  });

  it("cancelling a batch in progress: the batch ends cancelled, its outstanding files failed", async () => {
    const vs = await c.createVectorStore({ name: "rpc-cancel" }, me);
    const ids: string[] = [];
    for (let i = 0; i < 12; i++) ids.push((await restUpload(s.baseURL, API_KEY, `long${i}.txt`, "assistants", Buffer.from(longText(400 + i, 40)))).id);
    const b = await c.createFileBatch({ vectorStoreId: vs.id, fileIds: ids }, me);
    const cancelled = await c.cancelFileBatch({ vectorStoreId: vs.id, batchId: b.id }, me);
    expect(cancelled.status).toBe("cancelled");
    const statuses = await Promise.all(ids.map(async (id) => (await waitFile(c, vs.id, id)).status));
    expect(statuses.every((st) => st === "completed" || st === "failed")).toBe(true);
    expect(statuses).toContain("failed");
    const got = await c.getFilesBatch({ vectorStoreId: vs.id, batchId: b.id }, me);
    expect(got).toMatchObject({ status: "cancelled", fileCounts: { inProgress: 0n, total: 12n } });
    const failed = await c.listFileBatchFiles({ vectorStoreId: vs.id, batchId: b.id, filter: "failed", limit: 100 }, me);
    expect(failed.data.length).toBe(statuses.filter((st) => st === "failed").length);
    expect(failed.data[0]?.lastError).toMatchObject({ code: "server_error", message: expect.stringContaining("cancelled") });
  });

  it("errors carry ErrorInfo with the REST status, param and code", async () => {
    const vs = await c.createVectorStore({}, me);
    await expectRpcError(() => c.getVectorStore({ vectorStoreId: "vs_nope" }, me), Code.NotFound, { param: "vector_store_id", httpStatus: 404 });
    await expectRpcError(() => c.getVectorStore({ vectorStoreId: vs.id }, as(KEYS.projectB)), Code.NotFound, { param: "vector_store_id", httpStatus: 404 });
    await expectRpcError(() => c.searchVectorStore({ vectorStoreId: vs.id, query: value("x"), maxNumResults: 0 }, me), Code.InvalidArgument, {
      param: "max_num_results",
      code: "integer_out_of_range",
      httpStatus: 400,
    });
    await expectRpcError(() => c.searchVectorStore({ vectorStoreId: vs.id }, me), Code.InvalidArgument, { param: "query", code: "missing_required_parameter", httpStatus: 400 });
    await expectRpcError(
      () => c.searchVectorStore({ vectorStoreId: vs.id, query: value("x"), filters: value({ type: "or", filters: [{ type: "gt", key: "a", value: "b" }] }) }, me),
      Code.InvalidArgument,
      { param: "filters.filters[0].value", code: "invalid_type", httpStatus: 400 },
    );
    await expectRpcError(
      () => c.createVectorStoreFile({ vectorStoreId: vs.id, fileId: fileIds[0], chunkingStrategy: { type: "static", static: { maxChunkSizeTokens: 800, chunkOverlapTokens: 500 } } }, me),
      Code.InvalidArgument,
      { param: "chunking_strategy.static.chunk_overlap_tokens", httpStatus: 400 },
    );
    await expectRpcError(() => c.createFileBatch({ vectorStoreId: vs.id }, me), Code.InvalidArgument, { param: "file_ids", code: "missing_required_parameter", httpStatus: 400 });
    await expectRpcError(() => c.deleteVectorStore({ vectorStoreId: vs.id }, as(KEYS.reader)), Code.PermissionDenied, { httpStatus: 403 });
  });
});

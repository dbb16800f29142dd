// The vector stores' own limits (spec 8): the /files and /file_batches endpoints of one store share
// N requests per minute (300 by default), and an organization attaches at most M files per minute
// (2,000 by default; a batch of N files counts N, a store created with N files too). Both through
// the official SDK — with maxRetries 0 (the 429, its headers and body) and with retries (which
// end once the wait is over) — and over Connect and gRPC (RESOURCE_EXHAUSTED). A refused attach
// attaches nothing. The limits here are set low through the organizations' rate_limits.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import type OpenAI from "openai";
import { VectorStoresService } from "../../../gen/atrium/v1/vector_stores_pb.js";
import { ErrorInfoSchema } from "../../../gen/atrium/v1/options_pb.js";
import type { TestServer } from "../../shared/server.js";
import { api, expectRetriesAsTold, sdk, sdkError } from "../../shared/rest.js";
import { registry } from "../../shared/rpc.js";
import { startConfiguredServer } from "../../shared/operability.js";
import { upload } from "../../shared/vector-stores.js";

// Lexical retrieval only: these tests are about the limits, not the encoder.
process.env.ATRIUM_VECTOR_STORES_DENSE = "false";

const REQ_KEY = "sk-atrium-test-vs-requests-key-01";
const FILES_KEY = "sk-atrium-test-vs-files-key-0001";
const RPC_KEY = "sk-atrium-test-vs-rpc-key-000001";
const OTHER_PROJECT_KEY = "sk-atrium-test-vs-other-proj-0001";
const RETRY_KEY = "sk-atrium-test-vs-retry-key-00001";

const config = {
  organizations: [
    // 12 per minute per store: a burst of 12, then one every 5 s (no refill within a test's few calls).
    { id: "org-vs-req", rate_limits: { vector_store_file_requests_per_minute: 12 }, projects: [{ id: "proj_req" }, { id: "proj_req_b" }] },
    // 120 per minute per store: one comes back every 500 ms, which the SDK's retry waits for.
    { id: "org-vs-retry", rate_limits: { vector_store_file_requests_per_minute: 120 }, projects: [{ id: "proj_retry" }] },
    // 4 attached files per minute: one comes back every 15 s.
    { id: "org-vs-files", rate_limits: { vector_store_attached_files_per_minute: 4 }, projects: [{ id: "proj_files" }] },
    { id: "org-vs-rpc", rate_limits: { vector_store_file_requests_per_minute: 3 }, projects: [{ id: "proj_rpc" }] },
  ],
  keys: [
    { key: REQ_KEY, organization: "org-vs-req", projects: ["proj_req"], role: "member" },
    { key: OTHER_PROJECT_KEY, organization: "org-vs-req", projects: ["proj_req_b"], role: "member" },
    { key: RETRY_KEY, organization: "org-vs-retry", projects: ["proj_retry"], role: "member" },
    { key: FILES_KEY, organization: "org-vs-files", projects: ["proj_files"], role: "member" },
    { key: RPC_KEY, organization: "org-vs-rpc", projects: ["proj_rpc"], role: "member" },
  ],
};

let s: TestServer;
beforeAll(async () => {
  s = await startConfiguredServer(config);
});
afterAll(async () => s?.stop());

async function rejections(limit: string): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  const m = new RegExp(`^atrium_rate_limit_rejections_total\\{limit="${limit}",scope="area"\\} (\\d+)$`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}

/** Calls GET /vector_stores/{id}/files until the store's allowance is spent (the first 429). */
async function exhaust(storeId: string, key: string): Promise<number> {
  for (let n = 1; n < 1000; n++) {
    const r = await api(s.baseURL, `/vector_stores/${storeId}/files`, { key });
    await r.arrayBuffer();
    if (r.status === 429) return n;
    expect(r.status).toBe(200);
  }
  throw new Error("never refused");
}

describe("requests per minute per store: /files and /file_batches share one allowance", () => {
  let client: OpenAI;
  let storeA: string;
  let storeB: string;
  beforeAll(async () => {
    client = sdk(s.baseURL, REQ_KEY);
    storeA = (await client.vectorStores.create({ name: "a" })).id;
    storeB = (await client.vectorStores.create({ name: "b" })).id;
  });

  it("maxRetries 0: the 429 with retry-after, retry-after-ms and the platform's body; other stores and endpoints are not affected", async () => {
    const before = await rejections("vector_store_file_requests_per_minute");
    // A burst of 12 (plus what comes back meanwhile), then the 429.
    expect(await exhaust(storeA, REQ_KEY)).toBeGreaterThan(12);
    const e = await sdkError(client.vectorStores.files.list(storeA), 429);
    expect(e.type).toBe("requests");
    expect(e.code).toBe("rate_limit_exceeded");
    expect(e.message).toMatch(
      new RegExp(`Rate limit reached for requests per minute to the files and file batches of vector store ${storeA}: Limit 12, Used 12, Requested 1\\. Please try again in \\d+(\\.\\d+)?m?s\\.$`),
    );
    const ms = Number(e.headers?.get("retry-after-ms"));
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThanOrEqual(5000);
    expect(e.headers?.get("retry-after")).toBe(String(Math.ceil(ms / 1000)));
    expect(e.headers?.get("x-should-retry")).toBeNull();
    // The organization's own x-ratelimit-* headers are still there (not this limit's).
    expect(e.headers?.get("x-ratelimit-limit-requests")).toBe("10000");

    // The batch endpoints (both spellings) and the file endpoints share the store's allowance.
    await sdkError(client.vectorStores.fileBatches.retrieve("vsfb_none", { vector_store_id: storeA }), 429);
    expect((await api(s.baseURL, `/vector_stores/${storeA}/files_batches/vsfb_none`, { key: REQ_KEY })).status).toBe(429);
    expect((await api(s.baseURL, `/vector_stores/${storeA}/files/file-none`, { key: REQ_KEY })).status).toBe(429);
    // The store itself, its search and another store are outside this limit.
    expect((await client.vectorStores.retrieve(storeA)).id).toBe(storeA);
    await client.vectorStores.search(storeA, { query: "anything" });
    expect((await client.vectorStores.files.list(storeB)).data).toEqual([]);
    // Another project naming the same store id spends nothing of its allowance (and gets its 404).
    expect((await api(s.baseURL, `/vector_stores/${storeA}/files`, { key: OTHER_PROJECT_KEY })).status).toBe(404);
    expect((await rejections("vector_store_file_requests_per_minute")) - before).toBeGreaterThanOrEqual(5);
  });

  it("with retries: the SDK waits retry-after-ms and then succeeds", async () => {
    const store = (await sdk(s.baseURL, RETRY_KEY).vectorStores.create({ name: "retried" })).id;
    await expectRetriesAsTold({
      refusals: () => rejections("vector_store_file_requests_per_minute"),
      exhaust: () => exhaust(store, RETRY_KEY),
      async call(fetch) {
        const page = await sdk(s.baseURL, RETRY_KEY, { maxRetries: 3, fetch }).vectorStores.files.list(store);
        expect(page.data).toEqual([]);
      },
    });
  });
});

describe("attached files per minute per organization", () => {
  let client: OpenAI;
  let fileIds: string[];
  beforeAll(async () => {
    client = sdk(s.baseURL, FILES_KEY);
    fileIds = [];
    for (let i = 0; i < 5; i++) fileIds.push(await upload(client, `Document ${i} about sourdough, marathons and honeybees.`, `doc${i}.txt`));
  });

  it("a batch of N counts N; a refused batch, attach or store creation attaches nothing; a request larger than the limit is not retried", async () => {
    const store = await client.vectorStores.create({ name: "limited" });
    const before = await rejections("vector_store_attached_files_per_minute");
    // 2 of 4 (a file named twice is attached once, and counted once).
    const first = await client.vectorStores.fileBatches.create(store.id, { file_ids: [fileIds[0]!, fileIds[1]!, fileIds[0]!] });
    expect(first.file_counts.total).toBe(2);

    // 3 more do not fit in the 2 left: refused whole.
    const e = await sdkError(client.vectorStores.fileBatches.create(store.id, { file_ids: fileIds.slice(2, 5) }), 429);
    expect(e.code).toBe("rate_limit_exceeded");
    expect(e.type).toBe("requests");
    expect(e.message).toMatch(/Rate limit reached for files attached to vector stores per minute in organization org-vs-files: Limit 4, Used 2, Requested 3\. Please try again in \d+(\.\d+)?s\.$/);
    const ms = Number(e.headers?.get("retry-after-ms"));
    expect(ms).toBeGreaterThan(5_000);
    expect(ms).toBeLessThanOrEqual(15_000);
    expect(e.headers?.get("retry-after")).toBe(String(Math.ceil(ms / 1000)));
    // A store created with 3 files is refused too, and not created.
    const storesBefore = (await client.vectorStores.list()).data.length;
    await sdkError(client.vectorStores.create({ name: "refused", file_ids: fileIds.slice(2, 5) }), 429);
    expect((await client.vectorStores.list()).data.length).toBe(storesBefore);
    // Nothing of the refused batch was attached.
    const attached = (await client.vectorStores.files.list(store.id)).data.map((f) => f.id).sort();
    expect(attached).toEqual(fileIds.slice(0, 2).sort());

    // Single attaches count 1 each: two fit, the third does not.
    await client.vectorStores.files.create(store.id, { file_id: fileIds[2]! });
    await client.vectorStores.files.create(store.id, { file_id: fileIds[3]! });
    const single = await sdkError(client.vectorStores.files.create(store.id, { file_id: fileIds[4]! }), 429);
    expect(single.message).toMatch(/Limit 4, Used 4, Requested 1\./);
    expect((await client.vectorStores.files.list(store.id)).data).toHaveLength(4);

    // More than a whole minute's allowance can never pass: no retry-after, and the SDK does not retry.
    const t0 = Date.now();
    const tooLarge = await sdkError(sdk(s.baseURL, FILES_KEY, { maxRetries: 3 }).vectorStores.fileBatches.create(store.id, { file_ids: fileIds }), 429);
    expect(Date.now() - t0).toBeLessThan(5000);
    expect(tooLarge.message).toMatch(/Request too large for files attached to vector stores per minute in organization org-vs-files: Limit 4, Requested 5\./);
    expect(tooLarge.headers?.get("x-should-retry")).toBe("false");
    expect(tooLarge.headers?.get("retry-after")).toBeNull();
    expect((await rejections("vector_store_attached_files_per_minute")) - before).toBe(4);
  });
});

describe("Connect and gRPC callers", () => {
  for (const [name, transport] of [
    ["Connect (HTTP/1.1)", () => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1", jsonOptions: { registry } })],
    ["gRPC (h2c)", () => createGrpcTransport({ baseUrl: s.url })],
  ] as const) {
    it(`${name}: RESOURCE_EXHAUSTED with the platform's detail and retry metadata`, async () => {
      const stores = createClient(VectorStoresService, transport());
      const opts = { headers: { authorization: `Bearer ${RPC_KEY}` } };
      const store = await stores.createVectorStore({ name: name }, opts);
      let err: ConnectError | undefined;
      let admitted = 0;
      for (let i = 0; i < 6 && !err; i++) {
        try {
          await stores.listVectorStoreFiles({ vectorStoreId: store.id }, opts);
          admitted++;
        } catch (e) {
          err = ConnectError.from(e);
        }
      }
      // 3 per minute per store: the fourth call on this (new) store is refused.
      expect(admitted).toBe(3);
      expect(err?.code).toBe(Code.ResourceExhausted);
      const [info] = err!.findDetails(ErrorInfoSchema);
      expect(info).toMatchObject({ type: "requests", code: "rate_limit_exceeded", httpStatus: 429 });
      expect(err!.rawMessage).toMatch(new RegExp(`^Rate limit reached for requests per minute to the files and file batches of vector store ${store.id}: Limit 3, Used 3, Requested 1\\.`));
      expect(Number(err!.metadata.get("retry-after-ms"))).toBeGreaterThan(10_000);
      expect(err!.metadata.get("retry-after")).toMatch(/^\d+$/);
    });
  }
});

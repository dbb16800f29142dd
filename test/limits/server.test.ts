// Rate limits end to end (spec 8, 7.5, 5.8): the x-ratelimit-* headers on every /v1 response, the
// 429s through the official SDK — with no retries, with retries (which succeed once the wait is
// over), and the spend cap (which the SDK must not retry) — a project's own cap inside its
// organization's, the same refusals as RESOURCE_EXHAUSTED with metadata for Connect and gRPC
// callers, and the header budget.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ModelsService } from "../../gen/atrium/v1/models_pb.js";
import { ErrorInfoSchema } from "../../gen/atrium/v1/options_pb.js";
import { API_KEY, KEYS, type TestServer } from "../shared/server.js";
import { join } from "node:path";
import { api, blobKeys, expectError, expectRetriesAsTold, filesUnder, sdk, sdkError, toFile } from "../shared/rest.js";
import { registry } from "../shared/rpc.js";
import { startConfiguredServer } from "../shared/operability.js";
import { completeUploadsAtOnce, createFilesAtOnce, deleteAllFiles, expectWithinCap } from "../shared/storage-cap.js";

const RPC_KEY = "sk-atrium-test-rpc-limits-key-0001";
const HEADERS_KEY = "sk-atrium-test-headers-key-00001";
const TOKENS_KEY = "sk-atrium-test-tokens-key-000001";

const config = {
  organizations: [
    // 120 per minute: a burst of 120, then one every 500 ms.
    { id: "org-default", rate_limits: { requests_per_minute: 120 }, projects: [{ id: "proj_default" }] },
    { id: "org-proj", rate_limits: { requests_per_minute: 500 }, projects: [{ id: "proj_b", rate_limits: { requests_per_minute: 5 } }] },
    { id: "org-other", spend_limit_tokens_per_month: 100, projects: [{ id: "proj_other" }] },
    { id: "org-rpc", rate_limits: { requests_per_minute: 2 }, projects: [{ id: "proj_rpc" }] },
    // One request per 600 ms comes back: a quick pair of calls sees the count go down.
    { id: "org-headers", rate_limits: { requests_per_minute: 100 }, projects: [{ id: "proj_headers" }] },
    // 6,000 tokens a minute: 100 come back each second, so a charge of 1,000 shows.
    { id: "org-tokens", rate_limits: { tokens_per_minute: 6000 }, projects: [{ id: "proj_tokens" }] },
  ],
  keys: [
    { key: KEYS.projectB, organization: "org-proj", projects: ["proj_b"], role: "member" },
    { key: KEYS.otherOrg, organization: "org-other", projects: ["proj_other"], role: "member" },
    { key: RPC_KEY, organization: "org-rpc", projects: ["proj_rpc"], role: "member" },
    { key: HEADERS_KEY, organization: "org-headers", projects: ["proj_headers"], role: "member" },
    { key: TOKENS_KEY, organization: "org-tokens", projects: ["proj_tokens"], role: "member" },
  ],
};

let s: TestServer;
beforeAll(async () => {
  s = await startConfiguredServer(config);
});
afterAll(async () => s?.stop());

const RATE_HEADERS = ["limit-requests", "remaining-requests", "reset-requests", "limit-tokens", "remaining-tokens", "reset-tokens"].map((h) => `x-ratelimit-${h}`);
const DURATION = /^(\d+h)?(\d+m)?\d+(\.\d+)?s$|^\d+ms$/;

function rateHeaders(res: { headers: Headers }) {
  return Object.fromEntries(RATE_HEADERS.map((h) => [h, res.headers.get(h)]));
}

async function rejections(limit: string): Promise<number> {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  const m = new RegExp(`^atrium_rate_limit_rejections_total\\{limit="${limit}",scope="[a-z]+"\\} (\\d+)$`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}

describe("x-ratelimit-* on every /v1 response", () => {
  it("successes carry the caller's state, counting down", async () => {
    const a = await api(s.baseURL, "/models", { key: HEADERS_KEY });
    const b = await api(s.baseURL, "/models", { key: HEADERS_KEY });
    expect(a.status).toBe(200);
    expect(rateHeaders(a)).toMatchObject({ "x-ratelimit-limit-requests": "100", "x-ratelimit-remaining-requests": "99", "x-ratelimit-limit-tokens": "10000000", "x-ratelimit-remaining-tokens": "10000000" });
    expect(b.headers.get("x-ratelimit-remaining-requests")).toBe("98");
    expect(a.headers.get("x-ratelimit-reset-requests")).toMatch(DURATION);
    expect(b.headers.get("x-ratelimit-reset-tokens")).toBe("0s");
  });

  it("errors after authentication (404, 400) carry the caller's state; calls refused before it the defaults", async () => {
    const cases: Array<[string, RequestInit & { key?: string | null }, number]> = [
      ["/models/no-such-model", { key: HEADERS_KEY }, 404],
      ["/models?bogus=1", { key: HEADERS_KEY }, 400],
      ["/files", { key: HEADERS_KEY, method: "POST", headers: { "content-type": "application/json" }, body: "{" }, 400],
      ["/models", { key: null }, 401],
      ["/models", { key: "sk-not-a-known-key-000000000" }, 401],
      ["/no-such-route", { key: HEADERS_KEY }, 404],
      ["/models", { key: HEADERS_KEY, method: "PATCH" }, 405],
    ];
    for (const [path, init, status] of cases) {
      const res = await api(s.baseURL, path, init);
      await res.arrayBuffer();
      expect(res.status, path).toBe(status);
      for (const h of RATE_HEADERS) expect(res.headers.get(h), `${h} on ${init.method ?? "GET"} ${path} (${status})`).not.toBeNull();
    }
    const counted = await api(s.baseURL, "/models/no-such-model", { key: HEADERS_KEY });
    expect(Number(counted.headers.get("x-ratelimit-remaining-requests"))).toBeLessThan(98);
  });

  it("a request refused at validation is charged its token estimate: failed requests count (spec 8)", async () => {
    // 4,025 characters in all (input, model, format): an estimate of 1,007 tokens, charged before
    // the body is judged.
    const body = { model: "text-embedding-3-small", input: "a".repeat(4000), encoding_format: "hex" };
    const first = await api(s.baseURL, "/embeddings", { key: TOKENS_KEY, method: "POST", json: body });
    await expectError(first, 400, { param: "encoding_format" });
    expect(first.headers.get("x-ratelimit-limit-tokens")).toBe("6000");
    const afterFirst = Number(first.headers.get("x-ratelimit-remaining-tokens"));
    expect(afterFirst).toBeGreaterThanOrEqual(4993);
    expect(afterFirst).toBeLessThan(5100); // what came back between the charge and the answer
    // Five more such refusals leave too little for a sixth within the minute: it is a 429.
    for (let i = 0; i < 5; i++) await (await api(s.baseURL, "/embeddings", { key: TOKENS_KEY, method: "POST", json: body })).arrayBuffer();
    const refused = await api(s.baseURL, "/embeddings", { key: TOKENS_KEY, method: "POST", json: body });
    await expectError(refused, 429, { code: "rate_limit_exceeded" });
    expect(Number(refused.headers.get("retry-after-ms"))).toBeGreaterThan(0);
  });

  it("operator endpoints outside /v1 carry none", async () => {
    const res = await fetch(`${s.url}/healthz`);
    expect(res.headers.get("x-ratelimit-limit-requests")).toBeNull();
  });
});

describe("429 through the official SDK", () => {
  it("maxRetries 0: the first 429, with retry-after, retry-after-ms and the platform's error body", async () => {
    // Spend the organization's burst (120, plus what comes back meanwhile); the next call is refused.
    for (;;) {
      const r = await api(s.baseURL, "/models");
      await r.arrayBuffer();
      if (r.status === 429) break;
    }
    const e = await sdkError(sdk(s.baseURL).models.list(), 429);
    expect(e.type).toBe("requests");
    expect(e.code).toBe("rate_limit_exceeded");
    expect(e.message).toMatch(/Rate limit reached for requests per min \(RPM\) in organization org-default: Limit 120, Used 120, Requested 1\. Please try again in \d+ms\./);
    const ms = Number(e.headers?.get("retry-after-ms"));
    expect(ms).toBeGreaterThan(0);
    expect(ms).toBeLessThanOrEqual(500);
    expect(e.headers?.get("retry-after")).toBe("1");
    expect(e.headers?.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(e.headers?.get("x-ratelimit-limit-requests")).toBe("120");
    expect(e.headers?.get("x-should-retry")).toBeNull();
  });

  it("with retries: the SDK waits retry-after-ms and then succeeds", async () => {
    await expectRetriesAsTold({
      refusals: () => rejections("requests"),
      // One request per 500 ms comes back: the first 429 ends it.
      async exhaust() {
        for (;;) {
          const r = await api(s.baseURL, "/models");
          await r.arrayBuffer();
          if (r.status === 429) return;
        }
      },
      async call(fetch) {
        const page = await sdk(s.baseURL, API_KEY, { maxRetries: 3, fetch }).models.list();
        expect(page.data.length).toBeGreaterThan(0);
      },
    });
  });

  it("a project's own cap applies inside its organization's", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const r = await api(s.baseURL, "/files", { key: KEYS.projectB });
      statuses.push(r.status);
      if (i === 0) expect(r.headers.get("x-ratelimit-limit-requests")).toBe("5");
      if (r.status === 429) expect((await r.json()).error.message).toMatch(/in project proj_b: Limit 5/);
      else await r.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it("the monthly spend cap: 429 insufficient_quota with x-should-retry: false, which the SDK does not retry", async () => {
    const client = sdk(s.baseURL, KEYS.otherOrg, { maxRetries: 3 });
    // 240 characters: 60 tokens of the 100 the organization may spend this month.
    const ok = await client.responses.inputTokens.count({ model: "gpt-4o", input: "a".repeat(234) });
    expect(ok.input_tokens).toBeGreaterThan(0);
    const before = await rejections("spend");
    const t0 = Date.now();
    const e = await sdkError(client.responses.inputTokens.count({ model: "gpt-4o", input: "b".repeat(234) }), 429);
    expect(Date.now() - t0).toBeLessThan(400);
    expect(e.code).toBe("insufficient_quota");
    expect(e.type).toBe("insufficient_quota");
    expect(e.headers?.get("x-should-retry")).toBe("false");
    expect(e.headers?.get("retry-after")).toBeNull();
    expect((await rejections("spend")) - before).toBe(1);
    // Calls that spend no tokens still work.
    expect((await api(s.baseURL, "/models", { key: KEYS.otherOrg })).status).toBe(200);
  });
});

describe("Connect and gRPC callers", () => {
  for (const [name, transport] of [
    ["Connect (HTTP/1.1)", () => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1", jsonOptions: { registry } })],
    ["gRPC (h2c)", () => createGrpcTransport({ baseUrl: s.url })],
  ] as const) {
    it(`${name}: headers as response metadata, RESOURCE_EXHAUSTED with the same detail and retry metadata`, async () => {
      const models = createClient(ModelsService, transport());
      // org-rpc allows 2 per minute; both transports share it, so wait until it has room again.
      await new Promise((r) => setTimeout(r, 100));
      let header: Headers | undefined;
      let err: ConnectError | undefined;
      for (let i = 0; i < 4 && !err; i++) {
        try {
          await models.getModel({ model: "gpt-4o" }, { headers: { authorization: `Bearer ${RPC_KEY}` }, onHeader: (h) => (header = h) });
          expect(header?.get("x-ratelimit-limit-requests")).toBe("2");
          expect(header?.get("x-ratelimit-reset-requests")).toMatch(DURATION);
        } catch (e) {
          err = ConnectError.from(e);
        }
      }
      expect(err?.code).toBe(Code.ResourceExhausted);
      const [info] = err!.findDetails(ErrorInfoSchema);
      expect(info).toMatchObject({ type: "requests", code: "rate_limit_exceeded", httpStatus: 429 });
      expect(err!.rawMessage).toMatch(/^Rate limit reached for requests per min \(RPM\) in organization org-rpc: Limit 2/);
      expect(Number(err!.metadata.get("retry-after-ms"))).toBeGreaterThan(0);
      expect(err!.metadata.get("retry-after")).toMatch(/^\d+$/);
      expect(err!.metadata.get("x-ratelimit-remaining-requests")).toBe("0");
    });
  }
});

describe("header budget (spec 5.8)", () => {
  it("a custom header value over 60 KiB, or custom values summing over 60 KiB, is a 431", async () => {
    const one = await api(s.baseURL, "/models", { key: HEADERS_KEY, headers: { "x-big": "a".repeat(61 * 1024) } });
    await expectError(one, 431, { code: "header_too_large", param: "x-big" });
    const sum = await api(s.baseURL, "/models", { key: HEADERS_KEY, headers: { "x-one": "a".repeat(31 * 1024), "x-two": "b".repeat(31 * 1024) } });
    await expectError(sum, 431, { code: "headers_too_large" });
    expect(sum.headers.get("x-request-id")).toMatch(/^req_/);
    expect(sum.headers.get("x-ratelimit-limit-requests")).not.toBeNull();
  });

  it("all headers together over 64 KiB are refused before the API (431)", async () => {
    // A standard header, so that only the total (not the custom-value budget) is over.
    const res = await api(s.baseURL, "/models", { key: HEADERS_KEY, headers: { cookie: "d".repeat(66 * 1024) } });
    expect(res.status).toBe(431);
  });

  it("within budget: 59 KiB of custom values pass", async () => {
    const res = await api(s.baseURL, "/models", { key: HEADERS_KEY, headers: { "x-fine": "e".repeat(59 * 1024) } });
    expect(res.status).toBe(200);
  });

  it("X-Client-Request-Id: at most 512 ASCII characters, else 400", async () => {
    await expectError(await api(s.baseURL, "/models", { key: HEADERS_KEY, headers: { "x-client-request-id": "f".repeat(513) } }), 400, { code: "invalid_client_request_id" });
    expect((await api(s.baseURL, "/models", { key: HEADERS_KEY, headers: { "x-client-request-id": "f".repeat(512) } })).status).toBe(200);
  });
});


describe("file storage per project (spec 8; ATRIUM_STORAGE_LIMIT_BYTES)", () => {
  let small: TestServer;
  beforeAll(async () => {
    small = await startConfiguredServer({ organizations: [{ id: "org-default", projects: [{ id: "proj_default" }] }] }, { ATRIUM_STORAGE_LIMIT_BYTES: "10000" });
  });
  afterAll(async () => small?.stop());

  it("an upload that would pass the cap is refused whole; deleting files makes room", async () => {
    const client = sdk(small.baseURL);
    const first = await client.files.create({ file: await toFile(Buffer.alloc(6000, 1), "a.bin"), purpose: "user_data" });
    const e = await sdkError(client.files.create({ file: await toFile(Buffer.alloc(6000, 2), "b.bin"), purpose: "user_data" }), 400);
    expect(e.code).toBe("storage_limit_exceeded");
    expect(e.param).toBe("file");
    expect(e.message).toMatch(/6000 of its 10000 bytes are in use/);
    expect(blobKeys(small.dataDir)).toEqual([first.id]);
    expect(filesUnder(join(small.dataDir, "tmp"))).toEqual([]);
    expect((await client.files.list()).data.map((f) => f.id)).toEqual([first.id]);

    // Uploads: checked against the declared size, then part by part.
    await expectError(await api(small.baseURL, "/uploads", { method: "POST", json: { bytes: 5000, filename: "c.jsonl", mime_type: "application/jsonl", purpose: "batch" } }), 400, {
      code: "storage_limit_exceeded",
      param: "bytes",
    });
    const upload = await (await api(small.baseURL, "/uploads", { method: "POST", json: { bytes: 3000, filename: "c.jsonl", mime_type: "application/jsonl", purpose: "batch" } })).json();
    const form = new FormData();
    form.set("data", new Blob([Buffer.alloc(3000, 3)]), "part");
    expect((await api(small.baseURL, `/uploads/${upload.id}/parts`, { method: "POST", body: form })).status).toBe(200);

    await client.files.delete(first.id);
    expect((await client.files.create({ file: await toFile(Buffer.alloc(6000, 4), "d.bin"), purpose: "user_data" })).bytes).toBe(6000);
  });

  it("uploads racing for the last bytes: the File that would pass the cap is refused when it is recorded", async () => {
    const instances = [{ baseURL: small.baseURL, dataDir: small.dataDir }];
    // Every upload passed its early checks (declared bytes, streamed part) while the project was
    // empty; 3 of 3000 bytes fit in 10000, so the other 5 are refused at completion.
    await deleteAllFiles(instances);
    const completed = await completeUploadsAtOnce(instances, 8, 3000);
    expect(await expectWithinCap(instances, completed, 10_000, "part_ids")).toEqual({ won: 3, refused: 5 });
    const refused = completed.find((o) => o.status === 400)!;
    expect(refused.body.error.message).toMatch(/9000 of its 10000 bytes are in use, and this upload needs at least 3000 more/);
    // The refused Upload is still pending with its part: once there is room it completes.
    await deleteAllFiles(instances);
    const { baseURL, uploadId, partId } = refused.upload!;
    const retried = await api(baseURL, `/uploads/${uploadId}/complete`, { method: "POST", json: { part_ids: [partId] } });
    expect(await retried.json()).toMatchObject({ status: "completed", file: { bytes: 3000 } });

    await deleteAllFiles(instances);
    expect(await expectWithinCap(instances, await createFilesAtOnce(instances, 8, 3000), 10_000, "file")).toEqual({ won: 3, refused: 5 });
  });
});

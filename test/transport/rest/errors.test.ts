// Cross-cutting REST behaviour (spec 5, 7, 8, 9): authentication and tenancy, organization and
// project selection headers, response headers, the request-header rules, and the one error body
// `{error: {message, type, param, code}}` for every failure a caller can provoke.
import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { ADMIN_KEY, API_KEY, KEYS, startTestServer, type TestServer } from "../../shared/server.js";
import { api, expectError, expectErrorShape, sdk, sdkError, toFile } from "../../shared/rest.js";

let s: TestServer;
let client: OpenAI;
/** A file in proj_default (API_KEY) and one in proj_b (KEYS.projectB). */
let fileA: string;
let fileB: string;

beforeAll(async () => {
  s = await startTestServer();
  client = sdk(s.baseURL);
  fileA = (await client.files.create({ file: await toFile(Buffer.from("in project default"), "a.txt"), purpose: "user_data" })).id;
  fileB = (await sdk(s.baseURL, KEYS.projectB).files.create({ file: await toFile(Buffer.from("in project b"), "b.txt"), purpose: "user_data" })).id;
});
afterAll(async () => s?.stop());

/** A raw HTTP/1.1 request with full control over header bytes (fetch normalises some). */
function rawRequest(path: string, headers: Record<string, string>, method = "GET"): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  const u = new URL(s.baseURL + path);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: u.hostname, port: u.port, path: u.pathname + u.search, method, headers }, (res) => {
      let body = "";
      res.setEncoding("latin1");
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("authentication", () => {
  it("no Authorization header is a 401 with the error body", async () => {
    const e = await expectError(await api(s.baseURL, "/files", { key: null }), 401);
    expect(e.message).toMatch(/API key/);
    await expectError(await api(s.baseURL, "/models", { key: null }), 401);
    await expectError(await api(s.baseURL, `/files/${fileA}/content`, { key: null }), 401);
  });

  it("an unknown key is a 401 invalid_api_key, and the key is not echoed back in full", async () => {
    const bad = "sk-atrium-this-key-does-not-exist-123456";
    const e = await expectError(await api(s.baseURL, "/files", { key: bad }), 401, { code: "invalid_api_key" });
    expect(e.message).not.toContain(bad);
    const se = await sdkError(sdk(s.baseURL, bad).models.list(), 401);
    expect(se).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(se.code).toBe("invalid_api_key");
  });

  it("a malformed Authorization header is a 401", async () => {
    await expectError(await api(s.baseURL, "/files", { key: null, headers: { authorization: `Basic ${API_KEY}` } }), 401);
    await expectError(await api(s.baseURL, "/files", { key: null, headers: { authorization: "Bearer" } }), 401);
  });

  it("a reader key reads but cannot write (403 on create and delete)", async () => {
    const reader = sdk(s.baseURL, KEYS.reader);
    expect((await reader.files.retrieve(fileA)).id).toBe(fileA);
    const e = await sdkError(reader.files.create({ file: await toFile(Buffer.from("x"), "x.txt"), purpose: "user_data" }), 403);
    expect(e).toBeInstanceOf(OpenAI.PermissionDeniedError);
    await expectError(await api(s.baseURL, `/files/${fileA}`, { method: "DELETE", key: KEYS.reader }), 403);
    await expectError(
      await api(s.baseURL, "/uploads", { method: "POST", key: KEYS.reader, json: { bytes: 1, filename: "a.txt", mime_type: "text/plain", purpose: "assistants" } }),
      403,
    );
    expect((await client.files.retrieve(fileA)).id).toBe(fileA);
  });
});

describe("tenancy", () => {
  it("unknown ids are 404 with the error body", async () => {
    for (const [method, path] of [
      ["GET", "/files/file-nope"],
      ["GET", "/files/file-nope/content"],
      ["DELETE", "/files/file-nope"],
      ["POST", "/uploads/upload_nope/cancel"],
    ] as const)
      await expectError(await api(s.baseURL, path, { method }), 404);
  });

  it("another project's file is 404 for retrieve, content and delete, and absent from the list", async () => {
    const b = sdk(s.baseURL, KEYS.projectB);
    await expectError(await api(s.baseURL, `/files/${fileB}`), 404);
    await expectError(await api(s.baseURL, `/files/${fileB}/content`), 404);
    await expectError(await api(s.baseURL, `/files/${fileB}`, { method: "DELETE" }), 404);
    await sdkError(b.files.retrieve(fileA), 404);
    await sdkError(b.files.delete(fileA), 404);
    expect((await client.files.list()).data.map((f) => f.id)).not.toContain(fileB);
    expect((await b.files.list()).data.map((f) => f.id)).toEqual([fileB]);
    // Both still there for their owners.
    expect((await client.files.retrieve(fileA)).id).toBe(fileA);
    expect((await b.files.retrieve(fileB)).id).toBe(fileB);
  });

  it("another organization's key sees nothing of org-default", async () => {
    const o = sdk(s.baseURL, KEYS.otherOrg);
    await sdkError(o.files.retrieve(fileA), 404);
    await sdkError(o.files.retrieve(fileB), 404);
    expect((await o.files.list()).data).toEqual([]);
  });
});

describe("organization and project selection headers", () => {
  it("a multi-project key defaults to its first project and selects another with OpenAI-Project", async () => {
    const multi = sdk(s.baseURL, KEYS.multi);
    expect((await multi.files.retrieve(fileA)).id).toBe(fileA);
    await sdkError(multi.files.retrieve(fileB), 404);
    const inB = sdk(s.baseURL, KEYS.multi, { project: "proj_b" });
    expect((await inB.files.retrieve(fileB)).id).toBe(fileB);
    await sdkError(inB.files.retrieve(fileA), 404);
    // The SDK sends OpenAI-Project; check the header by hand as well.
    const r = await api(s.baseURL, `/files/${fileB}`, { key: KEYS.multi, headers: { "openai-project": "proj_b" } });
    expect(r.status).toBe(200);
    expect(r.headers.get("vendor-organization")).toBe("org-default");
  });

  it("Vendor-Organization / Vendor-Project select the same way", async () => {
    const r = await api(s.baseURL, `/files/${fileB}`, { key: KEYS.multi, headers: { "vendor-organization": "org-default", "vendor-project": "proj_b" } });
    expect(r.status).toBe(200);
    expect((await r.json()).id).toBe(fileB);
    const d = await api(s.baseURL, `/files/${fileA}`, { key: KEYS.multi, headers: { "vendor-project": "proj_default" } });
    expect(d.status).toBe(200);
  });

  it("a project or organization the key lacks is a 401", async () => {
    await expectError(await api(s.baseURL, "/files", { key: KEYS.multi, headers: { "openai-project": "proj_other" } }), 401);
    await expectError(await api(s.baseURL, "/files", { key: KEYS.multi, headers: { "vendor-project": "proj_missing" } }), 401);
    await expectError(await api(s.baseURL, "/files", { key: KEYS.multi, headers: { "openai-organization": "org-other" } }), 401);
    await expectError(await api(s.baseURL, "/files", { key: API_KEY, headers: { "openai-project": "proj_b" } }), 401);
    await sdkError(sdk(s.baseURL, KEYS.projectB, { organization: "org-other" }).files.list(), 401);
    await sdkError(sdk(s.baseURL, KEYS.projectB, { project: "proj_default" }).files.list(), 401);
  });

  it("the org header naming the key's own organization is accepted", async () => {
    const c = sdk(s.baseURL, KEYS.projectB, { organization: "org-default", project: "proj_b" });
    expect((await c.files.retrieve(fileB)).id).toBe(fileB);
  });

  it("the admin key uses its default project, selects any project of its org, and no other org's", async () => {
    const admin = sdk(s.baseURL, ADMIN_KEY);
    expect((await admin.files.retrieve(fileA)).id).toBe(fileA);
    await sdkError(admin.files.retrieve(fileB), 404);
    expect((await sdk(s.baseURL, ADMIN_KEY, { project: "proj_b" }).files.retrieve(fileB)).id).toBe(fileB);
    const r = await api(s.baseURL, `/files/${fileB}`, { key: ADMIN_KEY, headers: { "vendor-project": "proj_b" } });
    expect(r.status).toBe(200);
    await expectError(await api(s.baseURL, "/files", { key: ADMIN_KEY, headers: { "openai-project": "proj_other" } }), 401);
    await expectError(await api(s.baseURL, "/files", { key: ADMIN_KEY, headers: { "openai-project": "proj_nonexistent" } }), 401);
    await expectError(await api(s.baseURL, "/files", { key: ADMIN_KEY, headers: { "openai-organization": "org-other" } }), 401);
  });
});

describe("response headers", () => {
  it("x-request-id is unique per response, vendor-version is 2020-10-01, vendor-processing-ms is present — on success and on errors", async () => {
    const responses = await Promise.all([
      ...Array.from({ length: 20 }, () => api(s.baseURL, "/models")),
      api(s.baseURL, `/files/${fileA}`),
      api(s.baseURL, `/files/${fileA}/content`),
      api(s.baseURL, "/files", { key: null }),
      api(s.baseURL, "/files/file-nope"),
      api(s.baseURL, "/nope"),
      api(s.baseURL, "/files", { method: "PUT" }),
      api(s.baseURL, "/files?limit=abc"),
      fetch(`${s.url}/healthz`),
    ]);
    const ids = new Set<string>();
    for (const r of responses) {
      const id = r.headers.get("x-request-id");
      expect(id, `x-request-id on ${r.url} (${r.status})`).toBeTruthy();
      ids.add(id!);
      expect(r.headers.get("vendor-version")).toBe("2020-10-01");
      expect(r.headers.get("vendor-processing-ms"), `vendor-processing-ms on ${r.url} (${r.status})`).toMatch(/^\d+$/);
      await r.arrayBuffer();
    }
    expect(ids.size).toBe(responses.length);
  });

  it("authenticated responses carry vendor-organization", async () => {
    const r = await api(s.baseURL, "/models");
    expect(r.headers.get("vendor-organization")).toBe("org-default");
  });

  it("the SDK surfaces the request id", async () => {
    const { response, request_id } = await client.models.list().withResponse();
    expect(request_id).toBe(response.headers.get("x-request-id"));
    const e = await sdkError(client.files.retrieve("file-nope"), 404);
    expect(e.requestID).toMatch(/\S/);
  });
});

describe("request header rules", () => {
  it("X-Client-Request-Id: ASCII up to 512 characters is fine", async () => {
    expect((await api(s.baseURL, "/models", { headers: { "x-client-request-id": "abc-123" } })).status).toBe(200);
    expect((await api(s.baseURL, "/models", { headers: { "x-client-request-id": "a".repeat(512) } })).status).toBe(200);
  });

  it("X-Client-Request-Id over 512 characters is a 400 with the error body", async () => {
    await expectError(await api(s.baseURL, "/models", { headers: { "x-client-request-id": "a".repeat(513) } }), 400);
  });

  it("X-Client-Request-Id with non-ASCII characters is a 400 with the error body", async () => {
    // Latin-1 through fetch, and raw UTF-8 bytes through node:http.
    await expectError(await api(s.baseURL, "/models", { headers: { "x-client-request-id": "caf\u00e9" } }), 400);
    const utf8 = Buffer.from("req-\u00fc\u4e2d", "utf8").toString("latin1");
    const r = await rawRequest("/models", { authorization: `Bearer ${API_KEY}`, "x-client-request-id": utf8 });
    expect(r.status).toBe(400);
    expectErrorShape(JSON.parse(r.body));
    // Also rejected before authentication is looked at.
    await expectError(await api(s.baseURL, "/models", { key: null, headers: { "x-client-request-id": "a".repeat(600) } }), 400);
  });

  it("request headers over 64 KiB in total are rejected with 431", async () => {
    // A standard header (not counted in the custom-value budget) pushes the total over 64 KiB.
    const r = await rawRequest("/models", { authorization: `Bearer ${API_KEY}`, cookie: "a=" + "x".repeat(65 * 1024) }).catch((e) => ({
      status: -1,
      headers: {},
      body: String(e),
    }));
    expect(r.status).toBe(431);
    expect(JSON.parse(r.body).error).toMatchObject({ type: "invalid_request_error", code: "request_header_fields_too_large" });
    // And many custom headers together over 64 KiB.
    const many: Record<string, string> = { authorization: `Bearer ${API_KEY}` };
    for (let i = 0; i < 70; i++) many[`x-pad-${i}`] = "p".repeat(1000);
    const m = await rawRequest("/models", many).catch((e) => ({ status: -1, headers: {}, body: String(e) }));
    expect(m.status).toBe(431);
    // The server is still fine afterwards.
    expect((await api(s.baseURL, "/models")).status).toBe(200);
  });

  it("custom header values over 60 KiB (total under 64 KiB) are a 431 with the error body", async () => {
    const r = await api(s.baseURL, "/models", { headers: { "x-pad-1": "a".repeat(31 * 1024), "x-pad-2": "b".repeat(31 * 1024) } });
    await expectError(r, 431);
  });

  it("headers just under the budget are accepted", async () => {
    const r = await api(s.baseURL, "/models", { headers: { "x-pad-1": "a".repeat(20 * 1024), "x-pad-2": "b".repeat(20 * 1024) } });
    expect(r.status).toBe(200);
  });
});

describe("request bodies and parameters", () => {
  const upload = { bytes: 10, filename: "a.txt", mime_type: "text/plain", purpose: "assistants" };
  const post = (path: string, body: string, contentType = "application/json") =>
    api(s.baseURL, path, { method: "POST", body, headers: { "content-type": contentType } });

  it("malformed JSON is a 400 with the error body", async () => {
    await expectError(await post("/uploads", '{"bytes": 10,'), 400);
    await expectError(await post("/uploads", "not json at all"), 400);
    await expectError(await post("/uploads/upload_x/complete", "{"), 400);
  });

  it("a JSON body that is not an object is a 400", async () => {
    await expectError(await post("/uploads", "[1,2]"), 400);
    await expectError(await post("/uploads", '"text"'), 400);
    await expectError(await post("/uploads", "null"), 400);
  });

  it("an unknown body field is a 400 naming it", async () => {
    const e = await expectError(await post("/uploads", JSON.stringify({ ...upload, colour: "blue" })), 400, { param: "colour" });
    expect(e.message).toContain("colour");
    const n = await expectError(await post("/uploads", JSON.stringify({ ...upload, expires_after: { anchor: "created_at", seconds: 3600, extra: 1 } })), 400);
    expect(n.param).toBe("expires_after.extra");
    const se = await sdkError(client.uploads.create({ ...upload, unknown_thing: 1 } as any), 400);
    expect(se.param).toBe("unknown_thing");
  });

  it("a body field of the wrong type is a 400 naming it", async () => {
    await expectError(await post("/uploads", JSON.stringify({ ...upload, filename: 42 })), 400, { param: "filename" });
    await expectError(await post("/uploads/upload_x/complete", JSON.stringify({ part_ids: [1] })), 400, { param: "part_ids[0]" });
  });

  it("an unknown form field on file upload is a 400 naming it", async () => {
    const form = new FormData();
    form.append("purpose", "user_data");
    form.append("colour", "blue");
    form.append("file", new Blob(["x"]), "x.txt");
    await expectError(await api(s.baseURL, "/files", { method: "POST", body: form }), 400, { param: "colour" });
  });

  it("an unknown query parameter is a 400 naming it", async () => {
    const e = await expectError(await api(s.baseURL, "/files?colour=blue"), 400, { param: "colour" });
    expect(e.message).toContain("colour");
    await expectError(await api(s.baseURL, "/models?limit=5"), 400, { param: "limit" });
  });

  it("a mistyped query parameter is a 400 naming it", async () => {
    await expectError(await api(s.baseURL, "/files?limit=abc"), 400, { param: "limit" });
    await expectError(await api(s.baseURL, "/files?limit="), 400, { param: "limit" });
    await expectError(await api(s.baseURL, "/files?limit=99999999999"), 400, { param: "limit" });
    await expectError(await api(s.baseURL, "/files?limit=1&limit=2"), 400, { param: "limit" });
  });

  it("a JSON body over the size limit is a 413 with the error body", async () => {
    const big = JSON.stringify({ ...upload, filename: "a".repeat(33 * 1024 * 1024) });
    await expectError(await post("/uploads", big), 413);
  });

  it("a multipart upload sent as JSON is a 4xx with the error body, not a 500", async () => {
    const r = await post("/files", JSON.stringify({ purpose: "user_data", file: "aGVsbG8=" }));
    expect(r.status).toBeGreaterThanOrEqual(400);
    expect(r.status).toBeLessThan(500);
    await expectError(r, r.status);
  });

  it("a truncated multipart body is a 400, not a 500 or a hang", async () => {
    const boundary = "XyZ";
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhalf a fi`;
    const r = await post("/files", body, `multipart/form-data; boundary=${boundary}`);
    await expectError(r, 400);
  });

  it("multipart without a boundary is a 400", async () => {
    await expectError(await post("/files", "whatever", "multipart/form-data"), 400);
  });
});

describe("routing", () => {
  it("an unknown route is a 404 REST error body", async () => {
    for (const p of ["/nope", "/files/a/b/c", "/fileszzz"]) await expectError(await api(s.baseURL, p), 404, { type: "invalid_request_error" });
    await expectError(await fetch(`${s.url}/v2/files`), 404);
    await expectError(await api(s.baseURL, "/nope", { key: null }), 404);
  });

  it("a wrong method on a known path is a 405 with Allow and the error body", async () => {
    const cases: Array<[string, string, string[]]> = [
      ["PUT", "/files", ["GET", "POST"]],
      ["DELETE", "/files", ["GET", "POST"]],
      ["POST", `/files/${fileA}`, ["DELETE", "GET"]],
      ["PATCH", "/models/gpt-4o", ["DELETE", "GET"]],
      ["GET", "/uploads", ["POST"]],
      ["GET", "/uploads/upload_x/complete", ["POST"]],
      ["DELETE", `/files/${fileA}/content`, ["GET"]],
    ];
    for (const [method, path, allow] of cases) {
      const r = await api(s.baseURL, path, { method });
      const got = (r.headers.get("allow") ?? "").split(",").map((x) => x.trim()).filter(Boolean).sort();
      expect(got, `${method} ${path}`).toEqual(allow);
      await expectError(r, 405);
    }
  });
});

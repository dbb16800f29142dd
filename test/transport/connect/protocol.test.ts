// Black-box RPC tests: the Connect protocol (JSON and binary, HTTP/1.1 and HTTP/2 with prior
// knowledge) and gRPC-Web, through @connectrpc/connect-node against the one port that also serves
// REST. Each area's RPCs run over every transport in its own folder (test/services/<area>/rpc.test.ts,
// test/auth/rpc.test.ts); this file checks what is specific to these protocols and the
// cross-protocol tenancy.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Code, ConnectError } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { API_KEY, KEYS, startTestServer, type TestServer } from "../../shared/server.js";
import { as, bytes, checkTenancy, clients, download, fileMessages, registry, restUpload, sha256 } from "../../shared/rpc.js";

describe("Connect protocol on the wire", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.stop());

  it("a unary call is a plain POST with a JSON body, and errors are Connect JSON with the ErrorInfo detail", async () => {
    const ok = await fetch(`${s.url}/atrium.v1.ModelsService/GetModel`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ model: "gpt-4o" }),
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get("content-type")).toMatch(/^application\/json/);
    expect(await ok.json()).toEqual({ id: "gpt-4o", object: "model", created: "1715367049", ownedBy: "system" });

    const nf = await fetch(`${s.url}/atrium.v1.FilesService/GetFile`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ fileId: "file-nope" }),
    });
    expect(nf.status).toBe(404);
    const body = (await nf.json()) as any;
    expect(body.code).toBe("not_found");
    expect(body.message).toContain("file-nope");
    expect(body.details).toHaveLength(1);
    expect(body.details[0].type).toBe("atrium.v1.ErrorInfo");
    // Connect puts the detail's binary encoding in `value` (base64); the debug form is optional.
    expect(typeof body.details[0].value).toBe("string");

    const unauth = await fetch(`${s.url}/atrium.v1.ModelsService/ListModels`, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
    expect(unauth.status).toBe(401);
    expect(((await unauth.json()) as any).code).toBe("unauthenticated");
  });

  it("downloads over the JSON codecs carry the ContentRange Any in its JSON form (server needs a JSON type registry)", async () => {
    const f = await restUpload(s.baseURL, API_KEY, "j.txt", "assistants", new TextEncoder().encode("hello"));
    const body = Buffer.from(JSON.stringify({ fileId: f.id, range: "bytes=1-3" }));
    const envelope = Buffer.concat([Buffer.from([0, 0, 0, 0, body.length]), body]);
    for (const ct of ["application/connect+json", "application/grpc-web+json"]) {
      const r = await fetch(`${s.url}/atrium.v1.FilesService/GetFileContent`, {
        method: "POST",
        headers: { "content-type": ct, authorization: `Bearer ${API_KEY}` },
        body: envelope,
      });
      expect(r.status).toBe(200);
      const raw = Buffer.from(await r.arrayBuffer());
      // First enveloped message: flags 0, big-endian length, JSON.
      expect(raw[0], `${ct}: ${raw.toString("latin1")}`).toBe(0);
      const first = JSON.parse(raw.subarray(5, 5 + raw.readUInt32BE(1)).toString());
      expect(first, ct).toEqual({
        contentType: "text/plain",
        data: Buffer.from("ell").toString("base64"),
        extensions: [{ "@type": "type.googleapis.com/atrium.v1.ContentRange", size: "5", partial: true, start: "1", end: "3" }],
      });
    }
  });

  it("many concurrent calls share one HTTP/2 connection, mixed with REST on the same port", async () => {
    const c = clients(createConnectTransport({ baseUrl: s.url, httpVersion: "2", useBinaryFormat: true }));
    const me = as(API_KEY);
    const data = bytes(1024 * 1024 + 3);
    const f = await c.files.createFile(fileMessages({ purpose: "user_data", filename: "c.bin" }, data), me);
    const results = await Promise.all([
      ...Array.from({ length: 30 }, () => c.models.getModel({ model: "gpt-4o" }, me).then((m) => m.id)),
      ...Array.from({ length: 4 }, () => download(c.files, f.id, me).then((d) => sha256(d.data))),
      ...Array.from({ length: 10 }, () =>
        fetch(`${s.baseURL}/models/gpt-4o`, { headers: { authorization: `Bearer ${API_KEY}` } }).then(async (r) => ((await r.json()) as any).id),
      ),
    ]);
    expect(results.filter((x) => x === "gpt-4o")).toHaveLength(40);
    expect(results.filter((x) => x === sha256(data))).toHaveLength(4);
  });

  it("a client that abandons a download midway does not break the connection for the next calls", async () => {
    const c = clients(createConnectTransport({ baseUrl: s.url, httpVersion: "2", useBinaryFormat: true }));
    const me = as(API_KEY);
    const data = bytes(4 * 1024 * 1024);
    const f = await c.files.createFile(fileMessages({ purpose: "user_data", filename: "abandon.bin" }, data, { chunk: 1024 * 1024 }), me);
    const ac = new AbortController();
    let got = 0;
    let err: unknown;
    try {
      for await (const chunk of c.files.getFileContent({ fileId: f.id }, { ...me, signal: ac.signal })) {
        got += chunk.data.length;
        ac.abort();
      }
    } catch (e) {
      err = e;
    }
    expect(ConnectError.from(err).code).toBe(Code.Canceled);
    expect(got).toBeGreaterThan(0);
    expect(got).toBeLessThan(data.length);
    expect(sha256((await download(c.files, f.id, me)).data)).toBe(sha256(data));
  });
});

describe("tenancy across REST, Connect and gRPC-Web", () => {
  let s: TestServer;
  const data = bytes(50_000);
  let fileId: string;
  let bFileId: string;
  beforeAll(async () => {
    s = await startTestServer();
    fileId = (await restUpload(s.baseURL, API_KEY, "tenant.txt", "assistants", data)).id;
    bFileId = (await restUpload(s.baseURL, KEYS.projectB, "b.txt", "assistants", bytes(10))).id;
  });
  afterAll(async () => s?.stop());

  for (const [name, make] of [
    ["Connect JSON h1", (s: TestServer) => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" })],
    ["Connect binary h2c", (s: TestServer) => createConnectTransport({ baseUrl: s.url, httpVersion: "2", useBinaryFormat: true })],
    ["gRPC-Web h1", (s: TestServer) => createGrpcWebTransport({ baseUrl: s.url, httpVersion: "1.1" })],
    ["gRPC-Web h2c", (s: TestServer) => createGrpcWebTransport({ baseUrl: s.url, httpVersion: "2" })],
  ] as const) {
    it(`a REST upload is visible to the same key over ${name}, and to no other project`, async () => {
      await checkTenancy(clients(make(s)), fileId, data, bFileId);
    });
  }

  it("a Connect upload is visible over REST to the same key only", async () => {
    const c = clients(createConnectTransport({ baseUrl: s.url, httpVersion: "2" }));
    const payload = bytes(70_000);
    const f = await c.files.createFile(fileMessages({ purpose: "user_data", filename: "from-connect.bin" }, payload), as(KEYS.projectB));
    const get = (key: string, path = "", extra: Record<string, string> = {}) =>
      fetch(`${s.baseURL}/files/${f.id}${path}`, { headers: { authorization: `Bearer ${key}`, ...extra } });
    const meta = await get(KEYS.projectB);
    expect(meta.status).toBe(200);
    expect(await meta.json()).toEqual({
      id: f.id,
      object: "file",
      bytes: 70_000,
      created_at: Number(f.createdAt),
      filename: "from-connect.bin",
      purpose: "user_data",
      status: "processed",
      expires_at: null,
      status_details: null,
    });
    const content = await get(KEYS.multi, "/content", { "openai-project": "proj_b" });
    expect(content.status).toBe(200);
    expect(sha256(new Uint8Array(await content.arrayBuffer()))).toBe(sha256(payload));
    for (const key of [API_KEY, KEYS.otherOrg, KEYS.multi]) {
      const r = await get(key);
      expect(r.status).toBe(404);
      expect(((await r.json()) as any).error).toMatchObject({ type: "invalid_request_error", param: "file_id" });
    }
  });
});

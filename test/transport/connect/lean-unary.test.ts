// The lean Connect unary path (src/transport/connect/) against the stock connect-fastify handler.
//  1. Parity: the same raw requests go to two Fastify apps serving the same test implementation,
//     one with the lean path and one stock; status, Connect headers and bodies must match, for
//     successes, every error shape, and the requests the lean path hands to the stock handler.
//  2. The real server: Connect-ES clients (JSON and binary, HTTP/1.1 and HTTP/2) and raw fetch,
//     with auth inside the secured implementation: success, errors with atrium.v1.ErrorInfo,
//     response headers, timeouts, and gzip-compressed requests (stock path).
import http from "node:http";
import { brotliDecompressSync, gzipSync, gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import Fastify, { type FastifyInstance } from "fastify";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient, type HandlerContext } from "@connectrpc/connect";
import { compressionGzip, createConnectTransport } from "@connectrpc/connect-node";
import { GetModelRequestSchema, ModelSchema, ModelsService } from "../../../gen/atrium/v1/models_pb.js";
import { UploadsService } from "../../../gen/atrium/v1/uploads_pb.js";
import { ErrorInfoSchema } from "../../../gen/atrium/v1/options_pb.js";
import { connectPlugin } from "../../../src/transport/connect/plugin.js";
import { API_KEY, startTestServer, type TestServer } from "../../shared/server.js";
import { sleep } from "../../shared/poll.js";

/** The error a call must fail with. */
async function rpcError(p: Promise<unknown>): Promise<ConnectError> {
  try {
    await p;
  } catch (e) {
    return ConnectError.from(e);
  }
  throw new Error("expected the call to fail");
}

// ---------- 1. parity with the stock handler ----------

/** What the test implementation saw, by call tag. */
const seen = new Map<string, { aborted?: unknown; timeoutMs?: number; url?: string; header?: string | null }>();

function testImpl() {
  const big = Array.from({ length: 60 }, (_, i) => ({ id: `model-${i}`, object: "model", created: BigInt(1_700_000_000 + i), ownedBy: "system" }));
  return {
    async listModels() {
      return { object: "list", data: big };
    },
    async getModel(req: { model: string }, ctx: HandlerContext) {
      const [cmd, tag = ""] = req.model.split(":");
      switch (cmd) {
        case "slow-aware": {
          // Waits for its signal: a deadline or a client going away ends it.
          const s = ctx.signal;
          seen.set(tag, { timeoutMs: ctx.timeoutMs() });
          try {
            await sleep(400, undefined, { signal: s });
          } catch {
            seen.set(tag, { ...seen.get(tag), aborted: s.reason });
            throw s.reason;
          }
          return { id: req.model, object: "model", created: 1n, ownedBy: "late" };
        }
        case "slow-ignore":
          await sleep(400);
          return { id: req.model, object: "model", created: 1n, ownedBy: "late" };
        case "throw-plain":
          throw new Error("boom: internal detail that must not leak");
        case "throw-meta":
          throw new ConnectError("not in this state", Code.FailedPrecondition, { "x-error-meta": "m1" }, [
            { desc: ErrorInfoSchema, value: { type: "invalid_request_error", param: "model", code: "bad_state", httpStatus: 400 } },
          ]);
        case "headers":
          ctx.responseHeader.set("x-lean-header", "h1");
          ctx.responseTrailer.set("x-lean-trailer", "t1");
          return { id: req.model, object: "model", created: 2n, ownedBy: "x" };
        case "context":
          seen.set(tag, { url: ctx.url, header: ctx.requestHeader.get("x-probe"), timeoutMs: ctx.timeoutMs() });
          return { id: ctx.protocolName + " " + ctx.requestMethod + " " + ctx.method.name, object: "model", created: 3n, ownedBy: ctx.service.typeName };
        case "partial":
          // An init shape, not a message: Connect fills in the rest.
          return { id: "partial" };
        default:
          return create(ModelSchema, { id: req.model, object: "model", created: 1715367049n, ownedBy: "system", shutdownDate: cmd === "shut" ? "2030-01-01" : undefined });
      }
    },
    async deleteModel(req: { model: string }) {
      return { id: req.model, object: "model", deleted: true };
    },
  };
}

async function testApp(lean: boolean): Promise<{ app: FastifyInstance; url: string }> {
  const app = Fastify({ forceCloseConnections: true });
  app.addHook("onRequest", (_req, reply, done) => {
    reply.header("x-app-hook", "1");
    done();
  });
  await app.register(connectPlugin, { services: [{ desc: ModelsService, impl: testImpl() }], lean });
  await app.listen({ host: "127.0.0.1", port: 0 });
  const a = app.server.address() as { port: number };
  return { app, url: `http://127.0.0.1:${a.port}` };
}

interface RawCase {
  name: string;
  path?: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** Raw body check for binary answers. */
  binary?: boolean;
}

const J = { "content-type": "application/json" };
const P = { "content-type": "application/proto" };
const getModel = (model: string) => JSON.stringify({ model });
const getModelBin = (model: string) => toBinary(GetModelRequestSchema, create(GetModelRequestSchema, { model }));

const cases: RawCase[] = [
  { name: "JSON success", headers: J, body: getModel("gpt-4o") },
  { name: "JSON success, optional field set", headers: J, body: getModel("shut") },
  { name: "JSON with charset", headers: { "content-type": "application/json; charset=utf-8" }, body: getModel("gpt-4o") },
  { name: "JSON with a byte order mark", headers: J, body: "\ufeff" + getModel("gpt-4o") },
  { name: "JSON unknown fields are ignored", headers: J, body: JSON.stringify({ model: "gpt-4o", nope: 1 }) },
  { name: "JSON snake_case field name", headers: J, body: JSON.stringify({ model: "gpt-4o" }) },
  { name: "JSON empty body is invalid", headers: J, body: "" },
  { name: "JSON malformed", headers: J, body: "{" },
  { name: "JSON wrong field type", headers: J, body: JSON.stringify({ model: 5 }) },
  { name: "binary success", headers: P, body: getModelBin("gpt-4o"), binary: true },
  { name: "binary empty message", path: "/atrium.v1.ModelsService/ListModels", headers: P, body: new Uint8Array(0), binary: true },
  { name: "binary malformed", headers: P, body: new Uint8Array([0x0a, 0xff, 0xff]), binary: true },
  { name: "init-shape result is completed", headers: J, body: getModel("partial") },
  { name: "ConnectError with details and metadata", headers: J, body: getModel("throw-meta") },
  { name: "ConnectError, binary request: error is still JSON", headers: P, body: getModelBin("throw-meta") },
  { name: "a plain Error is internal, message hidden", headers: J, body: getModel("throw-plain") },
  { name: "response headers and trailers", headers: J, body: getModel("headers") },
  { name: "large response, gzip accepted", path: "/atrium.v1.ModelsService/ListModels", headers: { ...J, "accept-encoding": "gzip" }, body: "{}" },
  { name: "large response, br accepted", path: "/atrium.v1.ModelsService/ListModels", headers: { ...J, "accept-encoding": "br, gzip" }, body: "{}" },
  { name: "large response, nothing supported accepted", path: "/atrium.v1.ModelsService/ListModels", headers: { ...J, "accept-encoding": "zstd" }, body: "{}" },
  { name: "small response, gzip accepted (below compressMinBytes)", headers: { ...J, "accept-encoding": "gzip" }, body: getModel("gpt-4o") },
  { name: "Connect-Protocol-Version 1", headers: { ...J, "connect-protocol-version": "1" }, body: getModel("gpt-4o") },
  { name: "timeout header, call well within it", headers: { ...J, "connect-timeout-ms": "10000" }, body: getModel("gpt-4o") },
  { name: "timeout expires, handler honours the signal", headers: { ...J, "connect-timeout-ms": "50" }, body: getModel("slow-aware:parity") },
  // Handed to the stock handler:
  { name: "(stock) gzip-compressed request", headers: { ...J, "content-encoding": "gzip" }, body: gzipSync(getModel("gpt-4o")) },
  { name: "(stock) unknown request compression", headers: { ...J, "content-encoding": "zstd" }, body: getModel("gpt-4o") },
  { name: "(stock) unsupported protocol version", headers: { ...J, "connect-protocol-version": "2" }, body: getModel("gpt-4o") },
  { name: "(stock) malformed timeout", headers: { ...J, "connect-timeout-ms": "soon" }, body: getModel("gpt-4o") },
  { name: "(stock) streaming content type on a unary method", headers: { "content-type": "application/connect+json" }, body: getModel("gpt-4o") },
  { name: "(stock) unknown content type", headers: { "content-type": "text/plain" }, body: getModel("gpt-4o") },
  { name: "(stock) Connect GET of a method with side effects", method: "GET", path: `/atrium.v1.ModelsService/GetModel?encoding=json&message=${encodeURIComponent(getModel("gpt-4o"))}` },
  { name: "(stock) PUT", method: "PUT", headers: J, body: getModel("gpt-4o") },
];

// Headers that differ per request or per framework path, not per protocol behaviour.
const VOLATILE = new Set(["date", "connection", "keep-alive", "transfer-encoding", "vendor-processing-ms"]);

/** One request over node:http (no implicit Accept-Encoding, wire bytes as sent). */
function rawCall(base: string, c: RawCase): Promise<{ status: number; headers: Record<string, string>; body: any }> {
  return new Promise((resolve, reject) => {
    const req = http.request(base + (c.path ?? "/atrium.v1.ModelsService/GetModel"), { method: c.method ?? "POST", headers: c.headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (d: Buffer) => chunks.push(d));
      res.on("error", reject);
      res.on("end", () => {
        let bytes = Buffer.concat(chunks);
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (!VOLATILE.has(k) && v !== undefined) headers[k] = String(v);
        if (headers["content-encoding"] === "gzip") bytes = gunzipSync(bytes);
        if (headers["content-encoding"] === "br") bytes = brotliDecompressSync(bytes);
        const ct = headers["content-type"] ?? "";
        const body = ct.startsWith("application/json") ? JSON.parse(bytes.toString() || "null") : bytes.toString("base64");
        resolve({ status: res.statusCode ?? 0, headers, body });
      });
    });
    req.on("error", reject);
    req.end(c.body === undefined ? undefined : typeof c.body === "string" ? c.body : Buffer.from(c.body));
  });
}

describe("lean Connect unary path: parity with stock connect-fastify", () => {
  let lean: { app: FastifyInstance; url: string };
  let stock: { app: FastifyInstance; url: string };
  beforeAll(async () => {
    lean = await testApp(true);
    stock = await testApp(false);
  });
  afterAll(async () => {
    await lean?.app.close();
    await stock?.app.close();
  });

  for (const c of cases) {
    it(c.name, async () => {
      const a = await rawCall(lean.url, c);
      const b = await rawCall(stock.url, c);
      // Stock writes the raw response itself, past Fastify's onSend stage; the lean path sends
      // through the reply. Content-Length is equal whenever the body is.
      expect(a).toEqual(b);
      expect(a.headers["x-app-hook"]).toBe("1");
    });
  }

  it("the success and error shapes are the Connect ones", async () => {
    const ok = await rawCall(lean.url, cases[0]!);
    expect(ok).toMatchObject({ status: 200, headers: { "content-type": "application/json" }, body: { id: "gpt-4o", object: "model", created: "1715367049", ownedBy: "system" } });
    const bin = await rawCall(lean.url, cases.find((c) => c.name === "binary success")!);
    expect(bin.headers["content-type"]).toBe("application/proto");
    expect(fromBinary(ModelSchema, Buffer.from(bin.body, "base64")).id).toBe("gpt-4o");
    const err = await rawCall(lean.url, cases.find((c) => c.name.startsWith("ConnectError with details"))!);
    expect(err.status).toBe(400); // failed_precondition
    expect(err.headers["x-error-meta"]).toBe("m1");
    expect(err.body.code).toBe("failed_precondition");
    expect(err.body.message).toBe("not in this state");
    expect(err.body.details).toHaveLength(1);
    const d = err.body.details[0];
    expect(d.type).toBe("atrium.v1.ErrorInfo");
    expect(d.value).toMatch(/^[A-Za-z0-9+/]+$/); // standard base64 without padding
    expect(d.debug).toEqual({ type: "invalid_request_error", param: "model", code: "bad_state", httpStatus: 400 });
    const internal = await rawCall(lean.url, cases.find((c) => c.name.startsWith("a plain Error"))!);
    expect(internal).toMatchObject({ status: 500, body: { code: "internal", message: "internal error" } });
    const h = await rawCall(lean.url, cases.find((c) => c.name === "response headers and trailers")!);
    expect(h.headers["x-lean-header"]).toBe("h1");
    expect(h.headers["trailer-x-lean-trailer"]).toBe("t1");
  });

  it("the context: protocol, method, URL, request headers, timeout", async () => {
    await fetch(`${lean.url}/atrium.v1.ModelsService/GetModel`, {
      method: "POST",
      headers: { ...J, "x-probe": "p1", "connect-timeout-ms": "5000" },
      body: getModel("context:ctx"),
    }).then(async (r) => expect(await r.json()).toMatchObject({ id: "connect POST GetModel", ownedBy: "atrium.v1.ModelsService" }));
    const s = seen.get("ctx")!;
    expect(s.url).toBe(`${lean.url}/atrium.v1.ModelsService/GetModel`);
    expect(s.header).toBe("p1");
    expect(s.timeoutMs).toBeGreaterThan(4000);
    expect(s.timeoutMs).toBeLessThanOrEqual(5000);
  });

  it("a passed deadline ends the call and aborts the handler's signal with deadline_exceeded", async () => {
    const r = await rawCall(lean.url, { name: "", headers: { ...J, "connect-timeout-ms": "50" }, body: getModel("slow-aware:dl") });
    expect(r).toMatchObject({ status: 504, body: { code: "deadline_exceeded" } });
    const s = seen.get("dl")!;
    expect(s.timeoutMs).toBeLessThanOrEqual(50);
    expect(ConnectError.from(s.aborted).code).toBe(Code.DeadlineExceeded);
  });

  it("a handler that ignores its signal still gets a deadline_exceeded answer at the deadline (lean path only)", async () => {
    const t0 = Date.now();
    const r = await rawCall(lean.url, { name: "", headers: { ...J, "connect-timeout-ms": "50" }, body: getModel("slow-ignore") });
    expect(r).toMatchObject({ status: 504, body: { code: "deadline_exceeded" } });
    expect(Date.now() - t0).toBeLessThan(350);
    // Stock answers when the handler returns.
    const s = await rawCall(stock.url, { name: "", headers: { ...J, "connect-timeout-ms": "50" }, body: getModel("slow-ignore") });
    expect(s.status).toBe(200);
    // A zero timeout has already passed: the lean path does not start the call.
    const z = await rawCall(lean.url, { name: "", headers: { ...J, "connect-timeout-ms": "0" }, body: getModel("gpt-4o") });
    expect(z).toMatchObject({ status: 504, body: { code: "deadline_exceeded" } });
  });

  it("a client that goes away aborts the handler's signal", async () => {
    const ac = new AbortController();
    const p = fetch(`${lean.url}/atrium.v1.ModelsService/GetModel`, { method: "POST", headers: J, body: getModel("slow-aware:gone"), signal: ac.signal });
    await sleep(100);
    ac.abort();
    await expect(p).rejects.toThrow();
    for (let i = 0; i < 50 && !seen.get("gone")?.aborted; i++) await sleep(10);
    expect(ConnectError.from(seen.get("gone")!.aborted).code).toBe(Code.Canceled);
  });

  it("Connect-ES clients get the same answers from both paths", async () => {
    for (const useBinaryFormat of [false, true]) {
      const c1 = createClient(ModelsService, createConnectTransport({ baseUrl: lean.url, httpVersion: "1.1", useBinaryFormat }));
      const c2 = createClient(ModelsService, createConnectTransport({ baseUrl: stock.url, httpVersion: "1.1", useBinaryFormat }));
      expect(await c1.listModels({})).toEqual(await c2.listModels({}));
      expect(await c1.getModel({ model: "partial" })).toEqual(await c2.getModel({ model: "partial" }));
      const e1 = await rpcError(c1.getModel({ model: "throw-meta" }));
      const e2 = await rpcError(c2.getModel({ model: "throw-meta" }));
      expect([e1.code, e1.rawMessage, e1.metadata.get("x-error-meta"), e1.findDetails(ErrorInfoSchema)]).toEqual([
        e2.code,
        e2.rawMessage,
        e2.metadata.get("x-error-meta"),
        e2.findDetails(ErrorInfoSchema),
      ]);
      let trailer: Headers | undefined;
      await c1.getModel({ model: "headers" }, { onTrailer: (t) => (trailer = t) });
      expect(trailer?.get("x-lean-trailer")).toBe("t1");
    }
  });
});

// ---------- 2. the real server ----------

describe("lean Connect unary path in the server", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.stop());
  const auth = { authorization: `Bearer ${API_KEY}` };

  for (const httpVersion of ["1.1", "2"] as const)
    for (const useBinaryFormat of [false, true]) {
      const name = `${useBinaryFormat ? "binary" : "JSON"} over HTTP/${httpVersion}`;
      it(`${name}: success, ErrorInfo errors, auth, response headers`, async () => {
        const t = createConnectTransport({ baseUrl: s.url, httpVersion, useBinaryFormat });
        const models = createClient(ModelsService, t);
        let header: Headers | undefined;
        const m = await models.getModel({ model: "gpt-4o" }, { headers: auth, onHeader: (h) => (header = h) });
        expect(m).toMatchObject({ id: "gpt-4o", object: "model", created: 1715367049n, ownedBy: "system" });
        expect(header?.get("vendor-organization")).toBe("org-default");
        expect(header?.get("x-request-id")).toMatch(/^req_/);
        expect((await models.listModels({}, { headers: auth })).data.length).toBeGreaterThan(5);

        const nf = await rpcError(models.getModel({ model: "no-such-model" }, { headers: auth }));
        expect(nf.code).toBe(Code.NotFound);
        expect(nf.findDetails(ErrorInfoSchema)).toMatchObject([{ type: "invalid_request_error", param: "model", code: "model_not_found", httpStatus: 404 }]);

        // Auth runs inside the secured implementation on this path too.
        const unauth = await rpcError(models.listModels({}));
        expect(unauth.code).toBe(Code.Unauthenticated);
        expect(unauth.findDetails(ErrorInfoSchema)[0]?.httpStatus).toBe(401);
        const bad = await rpcError(models.listModels({}, { headers: { authorization: "Bearer sk-wrong-key-123456789" } }));
        expect(bad.code).toBe(Code.Unauthenticated);
        expect(bad.findDetails(ErrorInfoSchema)[0]?.code).toBe("invalid_api_key");

        // A write with a body, and its validation errors.
        const uploads = createClient(UploadsService, t);
        const u = await uploads.createUpload({ bytes: 10n, filename: "a.jsonl", mimeType: "application/jsonl", purpose: "batch" }, { headers: auth });
        expect(u).toMatchObject({ object: "upload", status: "pending", bytes: 10n });
        expect((await uploads.cancelUpload({ uploadId: u.id }, { headers: auth })).status).toBe("cancelled");
        const inv = await rpcError(uploads.createUpload({ filename: "a.jsonl", mimeType: "application/jsonl", purpose: "batch" }, { headers: auth }));
        expect(inv.code).toBe(Code.InvalidArgument);
        expect(inv.findDetails(ErrorInfoSchema)[0]).toMatchObject({ param: "bytes", code: "missing_required_parameter", httpStatus: 400 });
      });

      it(`${name}: a gzip-compressed request (stock path) works`, async () => {
        const t = createConnectTransport({ baseUrl: s.url, httpVersion, useBinaryFormat, sendCompression: compressionGzip, compressMinBytes: 1 });
        const models = createClient(ModelsService, t);
        expect((await models.getModel({ model: "gpt-4o" }, { headers: auth })).id).toBe("gpt-4o");
        const nf = await rpcError(models.getModel({ model: "no-such-model" }, { headers: auth }));
        expect(nf.findDetails(ErrorInfoSchema)[0]?.code).toBe("model_not_found");
      });

      it(`${name}: a client deadline is sent and honoured`, async () => {
        const models = createClient(ModelsService, createConnectTransport({ baseUrl: s.url, httpVersion, useBinaryFormat }));
        expect((await models.getModel({ model: "gpt-4o" }, { headers: auth, timeoutMs: 5000 })).id).toBe("gpt-4o");
      });
    }

  it("raw fetch: JSON and binary bodies, headers, timeouts, compression", async () => {
    const url = `${s.url}/atrium.v1.ModelsService/GetModel`;
    const ok = await rawCall(s.url, { name: "", headers: { ...J, ...auth, "connect-protocol-version": "1" }, body: getModel("gpt-4o") });
    expect(ok).toMatchObject({ status: 200, headers: { "content-type": "application/json", "vendor-organization": "org-default", "vendor-version": "2020-10-01" } });
    expect(ok.body).toEqual({ id: "gpt-4o", object: "model", created: "1715367049", ownedBy: "system" });
    expect(ok.headers["x-request-id"]).toMatch(/^req_/);

    const bin = await fetch(url, { method: "POST", headers: { ...P, ...auth }, body: getModelBin("gpt-4o") });
    expect(bin.status).toBe(200);
    expect(bin.headers.get("content-type")).toBe("application/proto");
    expect(fromBinary(ModelSchema, new Uint8Array(await bin.arrayBuffer())).ownedBy).toBe("system");

    const nf = await rawCall(s.url, { name: "", headers: { ...P, ...auth }, body: getModelBin("no-such-model") });
    expect(nf.status).toBe(404);
    expect(nf.headers["content-type"]).toBe("application/json");
    expect(nf.body).toMatchObject({ code: "not_found", details: [{ type: "atrium.v1.ErrorInfo", debug: { code: "model_not_found", httpStatus: 404 } }] });
    const info = fromBinary(ErrorInfoSchema, Buffer.from(nf.body.details[0].value, "base64"));
    expect(info.code).toBe("model_not_found");

    const zero = await rawCall(s.url, { name: "", headers: { ...J, ...auth, "connect-timeout-ms": "0" }, body: getModel("gpt-4o") });
    expect(zero).toMatchObject({ status: 504, body: { code: "deadline_exceeded" } });
    const badTimeout = await rawCall(s.url, { name: "", headers: { ...J, ...auth, "connect-timeout-ms": "-1" }, body: getModel("gpt-4o") });
    expect(badTimeout).toMatchObject({ status: 400, body: { code: "invalid_argument" } });

    const gz = await rawCall(s.url, { name: "", headers: { ...J, ...auth, "content-encoding": "gzip" }, body: gzipSync(getModel("gpt-4o")) });
    expect(gz).toMatchObject({ status: 200, body: { id: "gpt-4o" } });
    const list = await rawCall(s.url, { name: "", path: "/atrium.v1.ModelsService/ListModels", headers: { ...J, ...auth, "accept-encoding": "gzip" }, body: "{}" });
    expect(list.status).toBe(200);
    expect(list.headers["content-encoding"]).toBe("gzip");
    expect(list.body.data.length).toBeGreaterThan(5);
  });
});

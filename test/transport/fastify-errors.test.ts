// Errors Fastify raises itself (src/transport/fastify-errors.ts), against the real server with raw
// HTTP: REST callers get exactly the one error body {"error": {message, type, param, code}} with a
// public code (never FST_ERR_*, never Fastify's {"error": "Bad Request", ...}); callers of an RPC
// path get the same error in their protocol's shape (Connect JSON with the mapped HTTP status,
// gRPC / gRPC-Web trailers-only, Connect streaming end-of-stream). After each case the server
// still serves, and aborted requests neither crash it nor log a failure.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { Writable } from "node:stream";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import Fastify, { type FastifyInstance } from "fastify";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { findTrailerError } from "@connectrpc/connect/protocol-grpc";
import { GetModelRequestSchema, ModelsService } from "../../gen/atrium/v1/models_pb.js";
import { ErrorInfoSchema } from "../../gen/atrium/v1/options_pb.js";
import { frameworkErrorHandler, installErrorHandler } from "../../src/transport/fastify-errors.js";
import { API_KEY, startTestServer, type TestServer } from "../shared/server.js";
import { expectErrorShape } from "../shared/rest.js";
import { sleep } from "../shared/poll.js";

/** Log lines at warn and above, to check that no client mistake is logged as a server failure. */
const logged: Array<{ level: number; msg: string; err?: unknown }> = [];
const logSink = new Writable({
  write(chunk, _enc, cb) {
    for (const line of String(chunk).split("\n")) if (line) logged.push(JSON.parse(line));
    cb();
  },
});

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({ logger: pino({ level: "warn" }, logSink) });
});
afterAll(async () => s?.stop());

const AUTH = { authorization: `Bearer ${API_KEY}` };
const JSON_CT = { "content-type": "application/json" };

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** One HTTP/1.1 request with exact control over the path, method and header bytes. */
function h1(method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: s.port, method, path, headers: { ...AUTH, ...headers }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (d: Buffer) => chunks.push(d));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(body);
  });
}

interface H2Response {
  status: number;
  headers: http2.IncomingHttpHeaders;
  /** Whether the response headers ended the stream (a gRPC trailers-only response). */
  headersEndStream: boolean;
  trailers?: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** One request over HTTP/2 with prior knowledge (h2c), as gRPC clients send them. */
function h2(method: string, path: string, headers: Record<string, string> = {}, body?: Buffer | string): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(s.url);
    session.on("error", reject);
    const stream = session.request({ ":method": method, ":path": path, ...AUTH, ...headers });
    const chunks: Buffer[] = [];
    let head: Omit<H2Response, "body" | "trailers"> | undefined;
    let trailers: http2.IncomingHttpHeaders | undefined;
    stream.on("response", (h, flags) => {
      head = { status: Number(h[":status"]), headers: h, headersEndStream: (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0 };
    });
    stream.on("trailers", (t) => (trailers = t));
    stream.on("data", (d: Buffer) => chunks.push(d));
    stream.on("error", reject);
    stream.on("close", () => {
      session.close();
      if (head) resolve({ ...head, trailers, body: Buffer.concat(chunks) });
      else reject(new Error(`stream closed without a response (code ${stream.rstCode})`));
    });
    stream.end(body);
  });
}

/** Asserts the exact REST error body and the headers every answer carries. */
function expectRestError(r: RawResponse, status: number, want: { code: string | null; message?: RegExp }) {
  expect(r.status, r.body.toString()).toBe(status);
  expect(r.headers["content-type"]).toMatch(/^application\/json/);
  const body = JSON.parse(r.body.toString());
  expectErrorShape(body);
  expect(body.error).toMatchObject({ type: "invalid_request_error", param: null, code: want.code });
  if (want.message) expect(body.error.message).toMatch(want.message);
  expect(r.body.toString()).not.toMatch(/FST_ERR|"statusCode"|Bad Request/);
  expect(r.headers["x-request-id"]).toMatch(/^req_/);
  expect(r.headers["vendor-version"]).toBe("2020-10-01");
  return body.error;
}

/** The Connect unary error body: {code, message, details: [atrium.v1.ErrorInfo]}. */
function expectConnectError(r: { status: number; headers: Record<string, unknown>; body: Buffer }, status: number, code: string, info?: { code: string | null; httpStatus: number }) {
  expect(r.status, r.body.toString()).toBe(status);
  expect(r.headers["content-type"]).toBe("application/json");
  const body = JSON.parse(r.body.toString());
  expect(body.code).toBe(code);
  expect(typeof body.message).toBe("string");
  if (info) {
    expect(body.details).toHaveLength(1);
    expect(body.details[0].type).toBe("atrium.v1.ErrorInfo");
    const decoded = fromBinary(ErrorInfoSchema, Buffer.from(body.details[0].value, "base64"));
    expect({ code: decoded.code ?? null, httpStatus: decoded.httpStatus }).toEqual(info);
  }
  return body;
}

/** A gRPC trailers-only answer: HTTP 200, the status in the one HEADERS frame, no body. */
function expectGrpcTrailersOnly(r: H2Response, code: Code, info?: { code: string | null; httpStatus: number }) {
  expect(r.status).toBe(200);
  expect(r.headersEndStream).toBe(true);
  expect(r.body.length).toBe(0);
  expect(r.headers["content-type"]).toMatch(/^application\/grpc/);
  expect(r.headers["grpc-status"]).toBe(String(code));
  expect(decodeURIComponent(String(r.headers["grpc-message"]))).not.toBe("");
  if (info) {
    // grpc-status-details-bin: a google.rpc.Status with the details, as Connect-ES reads it.
    const status = findTrailerError(new Headers({ "grpc-status-details-bin": String(r.headers["grpc-status-details-bin"]) }));
    expect(status?.code).toBe(code);
    const details = status!.findDetails(ErrorInfoSchema);
    expect(details).toHaveLength(1);
    expect({ code: details[0]!.code ?? null, httpStatus: details[0]!.httpStatus }).toEqual(info);
  }
}

async function expectStillServes() {
  const r = await h1("GET", "/v1/models");
  expect(r.status).toBe(200);
  expect(JSON.parse(r.body.toString()).object).toBe("list");
}

const getModelBin = (model: string) => Buffer.from(toBinary(GetModelRequestSchema, create(GetModelRequestSchema, { model })));
/** A gRPC length-prefixed message. */
const grpcFrame = (m: Uint8Array) => Buffer.concat([Buffer.from([0, (m.length >>> 24) & 255, (m.length >>> 16) & 255, (m.length >>> 8) & 255, m.length & 255]), m]);

describe("REST: Fastify's errors in the one error body", () => {
  it("a path that is not valid percent-encoding is a 400 invalid_url (before auth)", async () => {
    const e = expectRestError(await h1("GET", "/v1/files/%E0%A4%A"), 400, { code: "invalid_url", message: /^Invalid URL \(GET \/v1\/files\/%E0%A4%A\)/ });
    expect(e.message).toContain("percent-encoding");
    expectRestError(await h1("GET", "/v1/files/%zz", { authorization: "" }), 400, { code: "invalid_url" });
    await expectStillServes();
  });

  it("a path parameter over the router's limit is a 414", async () => {
    expectRestError(await h1("GET", `/v1/models/${"m".repeat(150)}`), 414, { code: "path_parameter_too_long", message: /^Invalid URL \(GET / });
    await expectStillServes();
  });

  it("a Content-Type that does not parse is a 415 unsupported_content_type", async () => {
    expectRestError(await h1("POST", "/v1/uploads", { "content-type": "json" }, "{}"), 415, { code: "unsupported_content_type", message: /'json'/ });
    await expectStillServes();
  });

  it("any parseable Content-Type is read as JSON on REST routes (the SDKs send several)", async () => {
    const upload = JSON.stringify({ bytes: 10, filename: "a.jsonl", mime_type: "application/jsonl", purpose: "batch" });
    for (const ct of ["text/xml", "text/plain", "application/x-www-form-urlencoded"]) {
      const r = await h1("POST", "/v1/uploads", { "content-type": ct }, upload);
      expect(r.status, ct).toBe(200);
    }
    expectRestError(await h1("POST", "/v1/uploads", { "content-type": "text/xml" }, "<upload/>"), 400, { code: "invalid_json" });
    // No Content-Type at all: the body is still read as JSON.
    expect((await h1("POST", "/v1/uploads", {}, upload)).status).toBe(200);
  });

  it("malformed JSON is a 400 invalid_json; an empty body where one is required names the missing field", async () => {
    expectRestError(await h1("POST", "/v1/uploads", JSON_CT, '{"bytes": '), 400, { code: "invalid_json", message: /not valid JSON/ });
    // The message says where the parser stopped, never what it saw: a body may hold secrets.
    const leaky = await h1("POST", "/v1/uploads", JSON_CT, '{"secret": "sk-live-123" oops}');
    expectRestError(leaky, 400, { code: "invalid_json", message: /invalid at position \d+/ });
    expect(leaky.body.toString()).not.toContain("sk-live-123");
    const empty = await h1("POST", "/v1/uploads", JSON_CT, "");
    expect(empty.status).toBe(400);
    expect(JSON.parse(empty.body.toString()).error).toMatchObject({ param: "bytes", code: "missing_required_parameter" });
    await expectStillServes();
  });

  it("a large JSON body (parsed on the JSON worker) gives the same answers and errors as a small one", async () => {
    // Past OFF_THREAD_JSON_BYTES (256 KiB): an upload padded with trailing whitespace is read, and a
    // broken one is refused naming the position, never the text.
    const pad = "é".repeat(200_000);
    const upload = { bytes: 10, filename: "a.jsonl", mime_type: "application/jsonl", purpose: "batch" };
    const ok = await h1("POST", "/v1/uploads", JSON_CT, JSON.stringify(upload) + " ".repeat(300_000));
    expect(ok.status, ok.body.toString()).toBe(200);
    const broken = JSON.stringify({ ...upload, note: `sk-live-456${pad}` }).slice(0, -2);
    const e = expectRestError(await h1("POST", "/v1/uploads", JSON_CT, broken), 400, { code: "invalid_json" });
    expect(e.message).toMatch(/not valid JSON/);
    const bad = await h1("POST", "/v1/uploads", JSON_CT, `{"secret": "sk-live-789${pad}" oops}`);
    const at = expectRestError(bad, 400, { code: "invalid_json", message: /invalid at position \d+/ });
    expect(at.message).toContain(`position ${`{"secret": "sk-live-789${pad}" `.length}`);
    expect(bad.body.toString()).not.toContain("sk-live-789");
    // Labelled url-encoded (curl -d), a large JSON body is JSON still.
    expect((await h1("POST", "/v1/uploads", { "content-type": "application/x-www-form-urlencoded" }, "\n " + JSON.stringify(upload) + " ".repeat(300_000))).status).toBe(200);
    await expectStillServes();
  });

  it("a body over the 32 MiB limit is a 413 request_too_large, announced or chunked", async () => {
    const big = Buffer.alloc(32 * 1024 * 1024 + 1, 0x20);
    const e = expectRestError(await h1("POST", "/v1/uploads", JSON_CT, big), 413, { code: "request_too_large" });
    expect(e.message).toContain(String(32 * 1024 * 1024));
    // Chunked (no Content-Length): Fastify stops reading at the limit.
    const chunked = await new Promise<RawResponse>((resolve, reject) => {
      const req = http.request({ host: "127.0.0.1", port: s.port, method: "POST", path: "/v1/uploads", headers: { ...AUTH, ...JSON_CT }, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }));
      });
      req.on("error", reject);
      for (let i = 0; i < 33; i++) req.write(Buffer.alloc(1024 * 1024, 0x20));
      req.end();
    });
    expectRestError(chunked, 413, { code: "request_too_large" });
    await expectStillServes();
  });

  it("a method on a known path is a 405 with Allow; an unknown route a 404 (also for methods only HTTP/2 can carry)", async () => {
    const r = await h1("PROPFIND", "/v1/models");
    expectRestError(r, 405, { code: "method_not_allowed" });
    expect(r.headers.allow).toBe("GET");
    expectRestError(await h1("GET", "/v1/nope"), 404, { code: null, message: /^Invalid URL \(GET \/v1\/nope\)$/ });
    // Node's HTTP/1.1 parser refuses unknown methods itself; over HTTP/2 any token reaches Fastify.
    const foo = await h2("FOO", "/v1/models");
    expect(foo.status).toBe(404);
    expectErrorShape(JSON.parse(foo.body.toString()));
    expect(JSON.parse(foo.body.toString()).error).toMatchObject({ message: "Invalid URL (FOO /v1/models)", code: null });
    await expectStillServes();
  });

  it("a malformed Content-Length is refused by Node's HTTP parser (400 with the error body, connection closed) before Fastify; HTTP/2 resets a stream whose body does not match it", async () => {
    // Node's parser answers before any handler runs; the listener's clientError hook writes the body.
    const reply = await new Promise<string>((resolve, reject) => {
      const sock = net.connect(s.port, "127.0.0.1", () => sock.write(`POST /v1/uploads HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: abc\r\n\r\n{}`));
      let got = "";
      sock.on("data", (d) => (got += d));
      sock.on("close", () => resolve(got));
      sock.on("error", reject);
    });
    expect(reply).toMatch(/^HTTP\/1\.1 400 /);
    expectErrorShape(JSON.parse(reply.slice(reply.indexOf("\r\n\r\n") + 4)));
    expect(JSON.parse(reply.slice(reply.indexOf("\r\n\r\n") + 4)).error.code).toBe("invalid_request");
    await expect(h2("POST", "/v1/uploads", { ...JSON_CT, "content-length": "100" }, "{}")).rejects.toThrow(/PROTOCOL_ERROR|closed/);
    await expectStillServes();
  });
});

describe("RPC paths: Fastify's errors in the caller's protocol", () => {
  const GET_MODEL = "/atrium.v1.ModelsService/GetModel";

  it("a bad path: Connect JSON 400 invalid_argument; gRPC trailers-only INVALID_ARGUMENT; both with the ErrorInfo", async () => {
    const c = await h1("POST", "/atrium.v1.ModelsService/Get%E0%A4%A", JSON_CT, "{}");
    const body = expectConnectError(c, 400, "invalid_argument", { code: "invalid_url", httpStatus: 400 });
    expect(body.message).toMatch(/^Invalid URL/);
    expect(c.headers["x-request-id"]).toMatch(/^req_/);
    const g = await h2("POST", "/atrium.v1.ModelsService/Get%E0%A4%A", { "content-type": "application/grpc" }, grpcFrame(getModelBin("gpt-4o")));
    expectGrpcTrailersOnly(g, Code.InvalidArgument, { code: "invalid_url", httpStatus: 400 });
    await expectStillServes();
  });

  it("a header the onRequest checks refuse: the same error in each protocol", async () => {
    const bad = { "x-client-request-id": "x".repeat(600) };
    const info = { code: "invalid_client_request_id", httpStatus: 400 };
    expectConnectError(await h1("POST", GET_MODEL, { ...JSON_CT, ...bad }, '{"model":"gpt-4o"}'), 400, "invalid_argument", info);
    expectGrpcTrailersOnly(await h2("POST", GET_MODEL, { "content-type": "application/grpc+proto", ...bad }, grpcFrame(getModelBin("gpt-4o"))), Code.InvalidArgument, info);
    // gRPC-Web over HTTP/1.1: the status in the response headers, no body.
    const web = await h1("POST", GET_MODEL, { "content-type": "application/grpc-web+proto", ...bad }, grpcFrame(getModelBin("gpt-4o")));
    expect(web.status).toBe(200);
    expect(web.headers["grpc-status"]).toBe(String(Code.InvalidArgument));
    expect(web.body.length).toBe(0);
    // Connect streaming: HTTP 200 and an end-of-stream message (flag 2) carrying the error.
    const stream = await h1("POST", "/atrium.v1.FilesService/CreateFile", { "content-type": "application/connect+proto", ...bad }, Buffer.alloc(0));
    expect(stream.status).toBe(200);
    expect(stream.headers["content-type"]).toBe("application/connect+proto");
    expect(stream.body[0]).toBe(2);
    const end = JSON.parse(stream.body.subarray(5).toString());
    expect(end.error.code).toBe("invalid_argument");
    expect(end.error.details[0].type).toBe("atrium.v1.ErrorInfo");

    // Real clients read them as typed errors: grpc-js (which needs a true trailers-only
    // response) and Connect-ES over gRPC and Connect.
    const gj = new grpc.Client(`127.0.0.1:${s.port}`, grpc.credentials.createInsecure());
    const md = new grpc.Metadata();
    md.set("authorization", AUTH.authorization);
    md.set("x-client-request-id", bad["x-client-request-id"]);
    const err = await new Promise<grpc.ServiceError>((resolve) =>
      gj.makeUnaryRequest(GET_MODEL, (b: Buffer) => b, (b: Buffer) => b, getModelBin("gpt-4o"), md, (e) => resolve(e!)),
    );
    gj.close();
    expect(err.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(err.details).toMatch(/X-Client-Request-Id/);
    for (const transport of [createGrpcTransport({ baseUrl: s.url }), createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" })]) {
      const e = await createClient(ModelsService, transport)
        .getModel({ model: "gpt-4o" }, { headers: { ...AUTH, ...bad } })
        .then(() => null, (x) => ConnectError.from(x));
      expect(e?.code).toBe(Code.InvalidArgument);
      expect(e?.findDetails(ErrorInfoSchema)[0]?.code).toBe("invalid_client_request_id");
    }
    await expectStillServes();
  });

  it("an unknown RPC is unimplemented: Connect 404 with the code, gRPC trailers-only UNIMPLEMENTED", async () => {
    expectConnectError(await h1("POST", "/atrium.v1.ModelsService/Nope", JSON_CT, "{}"), 404, "unimplemented");
    expectGrpcTrailersOnly(await h2("POST", "/atrium.v1.NopeService/Get", { "content-type": "application/grpc" }, grpcFrame(new Uint8Array())), Code.Unimplemented);
    const e = await createClient(ModelsService, createGrpcTransport({ baseUrl: s.url }))
      .getModel({ model: "gpt-4o" }, { headers: AUTH })
      .then(() => null, (x) => ConnectError.from(x));
    expect(e).toBeNull(); // the real method still works over gRPC
    await expectStillServes();
  });

  it("every content type the RPC routes do not serve gets the Connect router's bare 415, whoever parses it", async () => {
    for (const ct of ["application/xml", "text/plain", "json", undefined]) {
      const r = await h1("POST", GET_MODEL, ct === undefined ? {} : { "content-type": ct }, '{"model":"gpt-4o"}');
      expect([r.status, r.body.length], String(ct)).toEqual([415, 0]);
      expect(r.headers["x-request-id"]).toMatch(/^req_/);
    }
    // An HTTP method the route does not serve: the router's bare 405.
    for (const m of ["PUT", "PROPFIND"]) expect((await h1(m, GET_MODEL, JSON_CT, "{}")).status, m).toBe(405);
    await expectStillServes();
  });

  it("a request over the 32 MiB limit is resource_exhausted (lean and stock Connect paths, gRPC), not read to the end", async () => {
    const big = JSON.stringify({ model: "gpt-4o", input: "a ".repeat(16 * 1024 * 1024 + 10) });
    const lean = await h1("POST", "/atrium.v1.ResponsesService/CountInputTokens", JSON_CT, big);
    expectConnectError(lean, 429, "resource_exhausted");
    // A compressed request takes the stock path, which limits the decompressed size.
    const stock = await h1("POST", "/atrium.v1.ResponsesService/CountInputTokens", { ...JSON_CT, "content-encoding": "gzip" }, gzipSync(big));
    expectConnectError(stock, 429, "resource_exhausted");
    // gRPC: the envelope announces its size, and the stock decoder refuses it from the prefix.
    const announced = 32 * 1024 * 1024 + 1;
    const prefix = Buffer.from([0, (announced >>> 24) & 255, (announced >>> 16) & 255, (announced >>> 8) & 255, announced & 255]);
    const g = await h2("POST", "/atrium.v1.ResponsesService/CountInputTokens", { "content-type": "application/grpc" }, Buffer.concat([prefix, Buffer.alloc(1024)]));
    expect(g.status).toBe(200);
    expect((g.trailers ?? g.headers)["grpc-status"]).toBe(String(Code.ResourceExhausted));
    await expectStillServes();
  });
});

describe("aborted requests", () => {
  /** Sends the head and part of the body of a request, then closes the connection. */
  async function abortMidBody(path: string, headers: Record<string, string>) {
    await new Promise<void>((resolve) => {
      const sock = net.connect(s.port, "127.0.0.1", () => {
        const head = Object.entries({ ...AUTH, ...headers, "content-length": "100000" }).map(([k, v]) => `${k}: ${v}\r\n`);
        sock.write(`POST ${path} HTTP/1.1\r\nHost: x\r\n${head.join("")}\r\n{"model": "gpt-4o", "inp`);
        setTimeout(() => sock.destroy(), 50);
      });
      sock.on("close", () => resolve());
      sock.on("error", () => {});
    });
  }

  it("a client that closes mid-body is neither a crash nor a logged failure, on REST, Connect (lean and stock) and gRPC", async () => {
    const before = logged.length;
    await abortMidBody("/v1/uploads", JSON_CT);
    await abortMidBody("/v1/responses/input_tokens", JSON_CT);
    await abortMidBody("/atrium.v1.ModelsService/GetModel", JSON_CT); // lean path
    await abortMidBody("/atrium.v1.ModelsService/GetModel", { ...JSON_CT, "connect-protocol-version": "2" }); // stock path
    await abortMidBody("/atrium.v1.ModelsService/GetModel", { "content-type": "application/grpc-web+proto" });
    // gRPC over HTTP/2: the client resets the stream mid-message.
    await new Promise<void>((resolve) => {
      const session = http2.connect(s.url);
      const stream = session.request({ ":method": "POST", ":path": "/atrium.v1.ModelsService/GetModel", "content-type": "application/grpc", ...AUTH });
      stream.on("error", () => {});
      stream.write(Buffer.from([0, 0, 0, 1, 0, 0x0a]));
      setTimeout(() => {
        stream.close(http2.constants.NGHTTP2_CANCEL);
        session.close();
        resolve();
      }, 50);
    });
    await sleep(200);
    expect(logged.slice(before).filter((l) => l.level >= 50)).toEqual([]);
    await expectStillServes();
  });
});

describe("frameworkErrors: the errors Fastify raises before routing", () => {
  it("an async constraint that fails is a 500 with no detail, logged", async () => {
    const lines: string[] = [];
    const log = pino({ level: "error" }, { write: (l: string) => void lines.push(l) });
    // A custom constraint strategy whose derivation fails (Fastify's types know only the built-in ones).
    const app: FastifyInstance = (Fastify as any)({
      loggerInstance: log,
      frameworkErrors: frameworkErrorHandler(log),
      routerOptions: {
        constraints: {
          tenant: {
            name: "tenant",
            storage: () => {
              const m = new Map<string, unknown>();
              return { get: (k: string) => (m.get(k) as any) ?? null, set: (k: string, v: unknown) => void m.set(k, v) };
            },
            deriveConstraint: (_req: unknown, _ctx: unknown, done: (err: Error | null, v?: string) => void) => done(new Error("constraint store down")),
            validate: () => true,
          },
        },
      },
    });
    installErrorHandler(app, log);
    app.get("/x", { constraints: { tenant: "a" } } as any, async () => ({ ok: true }));
    const r = await app.inject({ method: "GET", url: "/x" });
    await app.close();
    expect(r.statusCode).toBe(500);
    const body = JSON.parse(r.body);
    expectErrorShape(body);
    expect(body.error).toEqual({ message: "The server had an error while processing your request.", type: "server_error", param: null, code: "internal_error" });
    expect(r.headers["x-request-id"]).toBeTruthy();
    expect(lines.join("")).toMatch(/request failed/);
  });
});

// The lean Connect unary path (src/transport/connect/lean-unary.ts) against the stock
// connect-fastify handler, differentially, on the real server: two servers from the same code and
// the same clock, one as it runs in production (lean path on) and one with ATRIUM_CONNECT_LEAN=off
// (every call on the stock handler), get the SAME raw requests (HTTP/1.1 through node:http, and a
// few over HTTP/2 through node:http2). Over HTTP/1.1 the production server answers the lean calls
// on the direct path (src/transport/direct-unary.ts), over HTTP/2 through Fastify's route: both
// ways of writing a lean answer are compared with the stock handler. Status, headers (all but the per-request ones) and body bytes
// must be identical. The only accepted differences are listed in INHERENT below, each with why.
import http from "node:http";
import http2 from "node:http2";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, toBinary, type DescMessage, type MessageInitShape } from "@bufbuild/protobuf";
import { GetModelRequestSchema, ListModelsRequestSchema } from "../../../gen/atrium/v1/models_pb.js";
import { GetFileRequestSchema } from "../../../gen/atrium/v1/files_pb.js";
import { CountInputTokensRequestSchema } from "../../../gen/atrium/v1/responses_pb.js";
import { API_KEY, KEYS, ManualClock, startTestServer, type TestServer } from "../../shared/server.js";

interface Side {
  server: TestServer;
  /** A file uploaded to this server (ids differ between the servers: answers are normalised). */
  fileId: string;
}

let lean: Side;
let stock: Side;

async function uploadFile(s: TestServer): Promise<string> {
  const form = new FormData();
  form.append("purpose", "user_data");
  // Big enough that reading it back (token counting by file_id) spans many event-loop turns.
  form.append("file", new Blob(["differential testing\n".repeat(200_000)]), "notes.txt");
  const r = await fetch(`${s.baseURL}/files`, { method: "POST", headers: { authorization: `Bearer ${API_KEY}` }, body: form });
  expect(r.status).toBe(200);
  return ((await r.json()) as { id: string }).id;
}

beforeAll(async () => {
  // One clock for both, so created_at and expiry fields are equal too.
  const clock = new ManualClock();
  const a = await startTestServer({ clock });
  const prev = process.env.ATRIUM_CONNECT_LEAN;
  process.env.ATRIUM_CONNECT_LEAN = "off";
  let b: TestServer;
  try {
    b = await startTestServer({ clock });
  } finally {
    if (prev === undefined) delete process.env.ATRIUM_CONNECT_LEAN;
    else process.env.ATRIUM_CONNECT_LEAN = prev;
  }
  lean = { server: a, fileId: await uploadFile(a) };
  stock = { server: b, fileId: await uploadFile(b) };
});
afterAll(async () => {
  await lean?.server.stop();
  await stock?.server.stop();
});

type Body = string | Uint8Array | ((side: Side) => string | Uint8Array);

interface Case {
  name: string;
  /** Path of the RPC, e.g. "ModelsService/GetModel", or a full path starting with "/". */
  rpc: string;
  method?: string;
  headers?: Record<string, string>;
  /** Bearer key; null: no Authorization header. Default API_KEY. */
  key?: string | null;
  body?: Body;
  /** Query string for Connect GET, computed per side. */
  query?: string;
  http2?: boolean;
  /** Send the body with chunked transfer encoding (no Content-Length). */
  chunked?: boolean;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

// Per request or per connection, not per protocol behaviour.
// The rate-limit state moves with every request and with time (the limits themselves must match).
const VOLATILE = new Set(["date", "x-request-id", "vendor-processing-ms", "connection", "keep-alive", "transfer-encoding", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"]);
/** Ids the servers draw at random (newId: a kind prefix and 24 base62 characters). */
const RANDOM_ID = /\b(file-|upload_|part_)[A-Za-z0-9]{24}\b/g;

/** The answer with this side's server-specific ids replaced, body as text when it is text. */
function normalise(side: Side, status: number, rawHeaders: Record<string, unknown>, body: Buffer): Answer {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(rawHeaders)) if (!k.startsWith(":") && !VOLATILE.has(k) && v !== undefined) headers[k] = String(v);
  // Same-length replacement (through latin1, one char per byte) keeps binary bodies byte-exact.
  const b = Buffer.from(body.toString("latin1").replace(RANDOM_ID, (id, prefix: string) => prefix + "X".repeat(id.length - prefix.length)), "latin1");
  const ct = headers["content-type"] ?? "";
  const text = !headers["content-encoding"] && (ct.startsWith("application/json") || ct === "");
  return { status, headers, body: text ? b.toString("utf8") : "base64:" + b.toString("base64") };
}

function pathOf(c: Case): string {
  const p = c.rpc.startsWith("/") ? c.rpc : `/atrium.v1.${c.rpc}`;
  return c.query ? `${p}?${c.query}` : p;
}

function headersOf(c: Case): Record<string, string> {
  const key = c.key === undefined ? API_KEY : c.key;
  return { ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...c.headers };
}

function bodyOf(c: Case, side: Side): Buffer | undefined {
  const b = typeof c.body === "function" ? c.body(side) : c.body;
  return b === undefined ? undefined : Buffer.from(b);
}

function send(side: Side, c: Case): Promise<Answer> {
  return c.http2 ? sendH2(side, c) : sendH1(side, c);
}

function sendH1(side: Side, c: Case): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port: side.server.port, method: c.method ?? "POST", path: pathOf(c), headers: headersOf(c), agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (d: Buffer) => chunks.push(d));
        res.on("end", () => resolve(normalise(side, res.statusCode!, res.headers, Buffer.concat(chunks))));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    const body = bodyOf(c, side);
    if (c.chunked && body) {
      req.write(body);
      req.end();
    } else req.end(body);
  });
}

function sendH2(side: Side, c: Case): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(side.server.url);
    session.on("error", reject);
    const stream = session.request({ ":method": c.method ?? "POST", ":path": pathOf(c), ...headersOf(c) });
    const chunks: Buffer[] = [];
    let status = 0;
    let headers: Record<string, unknown> = {};
    stream.on("response", (h) => {
      status = Number(h[":status"]);
      headers = h;
    });
    stream.on("trailers", (t) => Object.assign(headers, Object.fromEntries(Object.entries(t).map(([k, v]) => [`(trailer) ${k}`, v]))));
    stream.on("data", (d: Buffer) => chunks.push(d));
    stream.on("error", reject);
    stream.on("close", () => {
      session.close();
      resolve(normalise(side, status, headers, Buffer.concat(chunks)));
    });
    stream.end(bodyOf(c, side));
  });
}

// ---- requests ----

const J = { "content-type": "application/json" };
const P = { "content-type": "application/proto" };
const bin = <D extends DescMessage>(schema: D, init: MessageInitShape<D>) => toBinary(schema, create(schema, init));
const b64url = (b: Uint8Array) => Buffer.from(b).toString("base64url");
/** Prose long enough that counting it takes a few milliseconds. */
const PROSE = "The quick brown fox jumps over the lazy dog while the platform counts every token. ".repeat(4000);

const cases: Case[] = [
  // Successes, JSON and binary, several methods.
  { name: "ListModels JSON", rpc: "ModelsService/ListModels", headers: J, body: "{}" },
  { name: "ListModels binary", rpc: "ModelsService/ListModels", headers: P, body: bin(ListModelsRequestSchema, {}) },
  { name: "ListModels binary, empty body", rpc: "ModelsService/ListModels", headers: P, body: "" },
  { name: "GetModel JSON", rpc: "ModelsService/GetModel", headers: J, body: '{"model":"gpt-4o"}' },
  { name: "GetModel binary", rpc: "ModelsService/GetModel", headers: P, body: bin(GetModelRequestSchema, { model: "gpt-4o" }) },
  { name: "CountInputTokens JSON", rpc: "ResponsesService/CountInputTokens", headers: J, body: JSON.stringify({ model: "gpt-4o", input: "Hello, world!" }) },
  {
    name: "CountInputTokens binary",
    rpc: "ResponsesService/CountInputTokens",
    headers: P,
    body: bin(CountInputTokensRequestSchema, { model: "gpt-4o", input: { kind: { case: "stringValue", value: "Hello, world!" } } }),
  },
  { name: "GetFile JSON", rpc: "FilesService/GetFile", headers: J, body: (s) => JSON.stringify({ fileId: s.fileId }) },
  { name: "GetFile JSON, proto field name", rpc: "FilesService/GetFile", headers: J, body: (s) => JSON.stringify({ file_id: s.fileId }) },
  { name: "GetFile binary", rpc: "FilesService/GetFile", headers: P, body: (s) => bin(GetFileRequestSchema, { fileId: s.fileId }) },
  { name: "CreateUpload JSON (a write)", rpc: "UploadsService/CreateUpload", headers: J, body: JSON.stringify({ bytes: 5, filename: "a.jsonl", mimeType: "application/jsonl", purpose: "batch" }) },

  // Errors from the handlers, with the atrium.v1.ErrorInfo detail.
  { name: "NotFound: unknown model", rpc: "ModelsService/GetModel", headers: J, body: '{"model":"no-such-model"}' },
  { name: "NotFound: unknown file, binary request", rpc: "FilesService/GetFile", headers: P, body: bin(GetFileRequestSchema, { fileId: "file-nope" }) },
  { name: "InvalidArgument: missing required field", rpc: "UploadsService/CreateUpload", headers: J, body: JSON.stringify({ filename: "a.jsonl", mimeType: "application/jsonl", purpose: "batch" }) },
  { name: "InvalidArgument: unsupported input item", rpc: "ResponsesService/CountInputTokens", headers: J, body: JSON.stringify({ model: "gpt-4o", input: [{ type: "nope" }] }) },
  { name: "Unauthenticated: no key", rpc: "ModelsService/ListModels", headers: J, body: "{}", key: null },
  { name: "Unauthenticated: wrong key", rpc: "ModelsService/ListModels", headers: J, body: "{}", key: "sk-atrium-wrong-key-0000000000" },
  { name: "Unauthenticated: project the key lacks", rpc: "ModelsService/ListModels", headers: { ...J, "openai-project": "proj_other" }, body: "{}" },
  { name: "PermissionDenied: reader key on a write", rpc: "UploadsService/CreateUpload", headers: J, key: KEYS.reader, body: JSON.stringify({ bytes: 5, filename: "a.jsonl", mimeType: "application/jsonl", purpose: "batch" }) },
  { name: "PermissionDenied: deleting a built-in model", rpc: "ModelsService/DeleteModel", headers: J, key: KEYS.owner, body: '{"model":"gpt-4o"}' },
  { name: "InvalidArgument: a file type that cannot be counted", rpc: "ResponsesService/CountInputTokens", headers: J, body: JSON.stringify({ model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_file", file_data: "data:application/pdf;base64," + "A".repeat(64) }] }] }) },

  // Decoding.
  { name: "JSON: unknown field", rpc: "ModelsService/GetModel", headers: J, body: '{"model":"gpt-4o","colour":"blue"}' },
  { name: "JSON: wrong field type", rpc: "ModelsService/GetModel", headers: J, body: '{"model":5}' },
  { name: "JSON: not an object", rpc: "ModelsService/GetModel", headers: J, body: "[1]" },
  { name: "JSON: null", rpc: "ModelsService/GetModel", headers: J, body: "null" },
  { name: "JSON: malformed", rpc: "ModelsService/GetModel", headers: J, body: '{"model":' },
  { name: "JSON: empty body", rpc: "ModelsService/GetModel", headers: J, body: "" },
  { name: "JSON: byte order mark", rpc: "ModelsService/GetModel", headers: J, body: '\ufeff{"model":"gpt-4o"}' },
  { name: "JSON: invalid UTF-8", rpc: "ModelsService/GetModel", headers: J, body: Buffer.concat([Buffer.from('{"model":"gpt'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]) },
  { name: "binary: malformed", rpc: "ModelsService/GetModel", headers: P, body: new Uint8Array([0x0a, 0xff, 0xff]) },
  { name: "binary: wrong wire type", rpc: "ModelsService/GetModel", headers: P, body: new Uint8Array([0x08, 0x01]) },
  { name: "binary: JSON sent as proto", rpc: "ModelsService/GetModel", headers: P, body: '{"model":"gpt-4o"}' },

  { name: "JSON: large multibyte body", rpc: "ResponsesService/CountInputTokens", headers: J, body: JSON.stringify({ model: "gpt-4o", input: "héllo wörld ✓ 🙂 ".repeat(20000) }) },
  { name: "a query string on the POST", rpc: "ModelsService/GetModel", query: "x=1", headers: J, body: '{"model":"gpt-4o"}' },
  { name: "a trailing slash", rpc: "ModelsService/GetModel/", headers: J, body: '{"model":"gpt-4o"}' },

  // Content types.
  { name: "content type: JSON with charset", rpc: "ModelsService/GetModel", headers: { "content-type": "application/json; charset=utf-8" }, body: '{"model":"gpt-4o"}' },
  { name: "content type: JSON with charset, no space", rpc: "ModelsService/GetModel", headers: { "content-type": "application/json;charset=UTF-8" }, body: '{"model":"gpt-4o"}' },
  { name: "content type: JSON with charset utf8", rpc: "ModelsService/GetModel", headers: { "content-type": "application/json; charset=utf8" }, body: '{"model":"gpt-4o"}' },
  { name: "content type: JSON, other charset", rpc: "ModelsService/GetModel", headers: { "content-type": "application/json; charset=latin1" }, body: '{"model":"gpt-4o"}' },
  { name: "content type: upper case", rpc: "ModelsService/GetModel", headers: { "content-type": "APPLICATION/JSON" }, body: '{"model":"gpt-4o"}' },
  { name: "content type: proto upper case", rpc: "ModelsService/GetModel", headers: { "content-type": "Application/Proto" }, body: bin(GetModelRequestSchema, { model: "gpt-4o" }) },
  { name: "content type: text/plain", rpc: "ModelsService/GetModel", headers: { "content-type": "text/plain" }, body: '{"model":"gpt-4o"}' },
  { name: "content type: application/xml", rpc: "ModelsService/GetModel", headers: { "content-type": "application/xml" }, body: '{"model":"gpt-4o"}' },
  { name: "content type: missing", rpc: "ModelsService/GetModel", body: '{"model":"gpt-4o"}' },
  { name: "content type: unparseable", rpc: "ModelsService/GetModel", headers: { "content-type": "json" }, body: '{"model":"gpt-4o"}' },
  { name: "content type: streaming Connect on a unary method", rpc: "ModelsService/GetModel", headers: { "content-type": "application/connect+json" }, body: '{"model":"gpt-4o"}' },

  // Protocol version.
  { name: "protocol version 1", rpc: "ModelsService/GetModel", headers: { ...J, "connect-protocol-version": "1" }, body: '{"model":"gpt-4o"}' },
  { name: "protocol version 2", rpc: "ModelsService/GetModel", headers: { ...J, "connect-protocol-version": "2" }, body: '{"model":"gpt-4o"}' },
  { name: "protocol version empty", rpc: "ModelsService/GetModel", headers: { ...J, "connect-protocol-version": "" }, body: '{"model":"gpt-4o"}' },

  // Compression.
  { name: "gzip request", rpc: "ModelsService/GetModel", headers: { ...J, "content-encoding": "gzip" }, body: gzipSync('{"model":"gpt-4o"}') },
  { name: "gzip request, corrupt", rpc: "ModelsService/GetModel", headers: { ...J, "content-encoding": "gzip" }, body: "not gzip" },
  { name: "identity request encoding", rpc: "ModelsService/GetModel", headers: { ...J, "content-encoding": "identity" }, body: '{"model":"gpt-4o"}' },
  { name: "unsupported request encoding", rpc: "ModelsService/GetModel", headers: { ...J, "content-encoding": "zstd" }, body: '{"model":"gpt-4o"}' },
  { name: "connect-content-encoding on a unary call", rpc: "ModelsService/GetModel", headers: { ...J, "connect-content-encoding": "gzip" }, body: '{"model":"gpt-4o"}' },
  { name: "accept gzip, large response", rpc: "ModelsService/ListModels", headers: { ...J, "accept-encoding": "gzip" }, body: "{}" },
  { name: "accept br first, large response", rpc: "ModelsService/ListModels", headers: { ...J, "accept-encoding": "br, gzip" }, body: "{}" },
  { name: "accept gzip with q-values", rpc: "ModelsService/ListModels", headers: { ...J, "accept-encoding": "gzip;q=1.0, identity; q=0.5, *;q=0" }, body: "{}" },
  { name: "accept gzip, binary", rpc: "ModelsService/ListModels", headers: { ...P, "accept-encoding": "gzip" }, body: "" },
  { name: "accept an unsupported encoding only", rpc: "ModelsService/ListModels", headers: { ...J, "accept-encoding": "zstd" }, body: "{}" },
  { name: "accept gzip, small response", rpc: "ModelsService/GetModel", headers: { ...J, "accept-encoding": "gzip" }, body: '{"model":"gpt-4o"}' },
  { name: "accept gzip, large error response", rpc: "ModelsService/GetModel", headers: { ...J, "accept-encoding": "gzip" }, body: JSON.stringify({ model: "m".repeat(3000) }) },
  { name: "accept anything (*)", rpc: "ModelsService/ListModels", headers: { ...J, "accept-encoding": "*" }, body: "{}" },
  { name: "accept gzip with q=0", rpc: "ModelsService/ListModels", headers: { ...J, "accept-encoding": "gzip;q=0" }, body: "{}" },
  { name: "accept GZIP in upper case", rpc: "ModelsService/ListModels", headers: { ...J, "accept-encoding": "GZIP" }, body: "{}" },
  { name: "accept gzip, error response", rpc: "ModelsService/GetModel", headers: { ...J, "accept-encoding": "gzip" }, body: '{"model":"no-such-model"}' },

  // Timeouts.
  { name: "timeout: generous", rpc: "ModelsService/GetModel", headers: { ...J, "connect-timeout-ms": "60000" }, body: '{"model":"gpt-4o"}' },
  { name: "timeout: not a number", rpc: "ModelsService/GetModel", headers: { ...J, "connect-timeout-ms": "abc" }, body: '{"model":"gpt-4o"}' },
  { name: "timeout: negative", rpc: "ModelsService/GetModel", headers: { ...J, "connect-timeout-ms": "-1" }, body: '{"model":"gpt-4o"}' },
  { name: "timeout: too many digits", rpc: "ModelsService/GetModel", headers: { ...J, "connect-timeout-ms": "12345678901" }, body: '{"model":"gpt-4o"}' },
  { name: "timeout: empty", rpc: "ModelsService/GetModel", headers: { ...J, "connect-timeout-ms": "" }, body: '{"model":"gpt-4o"}' },
  { name: "timeout: ten digits", rpc: "ModelsService/GetModel", headers: { ...J, "connect-timeout-ms": "9999999999" }, body: '{"model":"gpt-4o"}' },
  // Beyond what one Node timer can measure (2^31-1 ms): must not fire early.
  {
    name: "timeout: ten digits on a call that reads a file",
    rpc: "ResponsesService/CountInputTokens",
    headers: { ...J, "connect-timeout-ms": "9999999999" },
    body: (s) => JSON.stringify({ model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_image", file_id: s.fileId }] }] }),
  },
  { name: "timeout: 0", rpc: "ModelsService/GetModel", headers: { ...J, "connect-timeout-ms": "0" }, body: '{"model":"gpt-4o"}' },
  { name: "timeout: 1 ms on a slow-ish call", rpc: "ResponsesService/CountInputTokens", headers: { ...J, "connect-timeout-ms": "1" }, body: JSON.stringify({ model: "gpt-4o", input: PROSE }) },

  // Sizes.
  { name: "oversized JSON (over readMaxBytes, 32 MiB)", rpc: "ResponsesService/CountInputTokens", headers: J, body: JSON.stringify({ model: "gpt-4o", input: "a".repeat(32 * 1024 * 1024) }) },
  { name: "oversized JSON, chunked", rpc: "ResponsesService/CountInputTokens", headers: J, chunked: true, body: JSON.stringify({ model: "gpt-4o", input: "a".repeat(32 * 1024 * 1024) }) },
  { name: "JSON, chunked", rpc: "ModelsService/GetModel", headers: J, chunked: true, body: '{"model":"gpt-4o"}' },
  { name: "binary, chunked", rpc: "ModelsService/GetModel", headers: P, chunked: true, body: bin(GetModelRequestSchema, { model: "gpt-4o" }) },
  { name: "oversized binary", rpc: "ModelsService/GetModel", headers: P, body: bin(GetModelRequestSchema, { model: "m".repeat(32 * 1024 * 1024) }) },

  // Connect GET (the stock handler on both; no method here is marked free of side effects).
  { name: "GET, JSON message", rpc: "ModelsService/GetModel", method: "GET", query: `connect=v1&encoding=json&message=${encodeURIComponent('{"model":"gpt-4o"}')}` },
  { name: "GET, base64 proto message", rpc: "ModelsService/GetModel", method: "GET", query: `connect=v1&encoding=proto&base64=1&message=${b64url(bin(GetModelRequestSchema, { model: "gpt-4o" }))}` },
  { name: "GET, no query", rpc: "ModelsService/ListModels", method: "GET" },

  // HTTP methods and unknown RPCs.
  { name: "PUT", rpc: "ModelsService/GetModel", method: "PUT", headers: J, body: '{"model":"gpt-4o"}' },
  { name: "unknown method of a known service", rpc: "ModelsService/Nope", headers: J, body: "{}" },
  { name: "streaming RPC with a unary content type", rpc: "FilesService/CreateFile", headers: J, body: "{}" },

  // HTTP/2 (h2c, prior knowledge).
  { name: "h2: GetModel JSON", rpc: "ModelsService/GetModel", headers: J, body: '{"model":"gpt-4o"}', http2: true },
  { name: "h2: GetFile binary", rpc: "FilesService/GetFile", headers: P, body: (s) => bin(GetFileRequestSchema, { fileId: s.fileId }), http2: true },
  { name: "h2: NotFound", rpc: "ModelsService/GetModel", headers: P, body: bin(GetModelRequestSchema, { model: "no-such-model" }), http2: true },
  { name: "h2: Unauthenticated", rpc: "ModelsService/ListModels", headers: J, body: "{}", key: null, http2: true },
  { name: "h2: accept gzip, large response", rpc: "ModelsService/ListModels", headers: { ...J, "accept-encoding": "gzip" }, body: "{}", http2: true },
  { name: "h2: gzip request", rpc: "ModelsService/GetModel", headers: { ...J, "content-encoding": "gzip" }, body: gzipSync('{"model":"gpt-4o"}'), http2: true },
  { name: "h2: malformed JSON", rpc: "ModelsService/GetModel", headers: J, body: "{", http2: true },
  { name: "h2: timeout not a number", rpc: "ModelsService/GetModel", headers: { ...J, "connect-timeout-ms": "soon" }, body: '{"model":"gpt-4o"}', http2: true },
];

const DEADLINE_ENFORCED =
  "The lean path answers deadline_exceeded once the deadline has passed, even if the implementation " +
  "ignores its signal (these do not look at it), and does not start a call whose deadline (0 ms) " +
  "has already passed; the stock handler only aborts ctx.signal and answers with whatever the " +
  "implementation returns. The lean answer is the one the Connect and gRPC deadline rules ask for.";
const expectDeadlineEnforced = (l: Answer, s: Answer) => {
  expect(l.status).toBe(504);
  expect(JSON.parse(l.body)).toEqual({ code: "deadline_exceeded", message: "the operation timed out" });
  // This also shows that the second server really runs every call on the stock handler.
  expect(s.status).toBe(200);
};
/**
 * Differences that are inherent and harmless, by case name: the check for each says what each
 * side answers instead of requiring equality.
 */
const INHERENT: Record<string, { why: string; check: (lean: Answer, stock: Answer) => void }> = {
  "timeout: 0": { why: DEADLINE_ENFORCED, check: expectDeadlineEnforced },
  "timeout: 1 ms on a slow-ish call": {
    why:
      "A count this large runs on a counting worker, which stops when the call's signal aborts, so both " +
      "servers answer deadline_exceeded; the lean answer leaves out the per-request headers of a call " +
      "that never reached its implementation.",
    check: (l, s) => {
      expect(l.status).toBe(504);
      expect(s.status).toBe(504);
      expect(JSON.parse(l.body)).toEqual(JSON.parse(s.body));
    },
  },
};

describe("lean Connect unary path vs stock connect-fastify, same requests to both servers", () => {
  it("every case is named once", () => {
    expect(new Set(cases.map((c) => c.name)).size).toBe(cases.length);
    for (const name of Object.keys(INHERENT)) expect(cases.some((c) => c.name === name), name).toBe(true);
  });

  for (const c of cases) {
    it(c.name, async () => {
      const l = await send(lean, c);
      const s = await send(stock, c);
      const inherent = INHERENT[c.name];
      if (inherent) inherent.check(l, s);
      else expect(l).toEqual(s);
    });
  }

  it("both servers still serve", async () => {
    for (const side of [lean, stock]) expect((await send(side, cases[0]!)).status).toBe(200);
  });
});

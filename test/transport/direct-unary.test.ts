// The direct unary path (src/transport/direct-unary.ts) against Fastify's, differentially, on the
// real server: two servers from the same code and the same clock, one as it runs in production
// (direct path on) and one with ATRIUM_DIRECT_UNARY=off (every request through Fastify's
// lifecycle), get the SAME raw requests. Status, headers (all but the per-request ones) and body
// bytes must be identical; so must the request-log lines and the request metrics the two servers
// record for them. The cases cover what the direct path takes (REST GET and DELETE without a body,
// unary Connect calls over HTTP/1.1) and what it must leave to Fastify (bodies on a GET, HEAD,
// HTTP/2, paths the router refuses, headers the checks refuse), so both halves of each decision
// are compared.
import http from "node:http";
import http2 from "node:http2";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { create, toBinary } from "@bufbuild/protobuf";
import { GetModelRequestSchema } from "../../gen/atrium/v1/models_pb.js";
import { API_KEY, KEYS, ManualClock, startTestServer, type TestServer } from "../shared/server.js";

interface Side {
  server: TestServer;
  /** Files uploaded to this server: [kept, deleted by a case]. */
  files: [string, string];
  /** The request-log lines this server wrote. */
  log: Array<{ method: string; url: string; status: number; clientRequestId?: string }>;
}

let direct: Side;
let fastify: Side;

/** A logger at info that keeps the request-log lines. */
function capturingLogger(into: Side["log"]) {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (!line) continue;
        const o = JSON.parse(line);
        if (o.msg === "request") into.push({ method: o.method, url: o.url, status: o.status, ...(o.clientRequestId ? { clientRequestId: o.clientRequestId } : {}) });
      }
      done();
    },
  });
  return pino({ level: "info" }, sink);
}

async function upload(s: TestServer): Promise<string> {
  const form = new FormData();
  form.append("purpose", "user_data");
  form.append("file", new Blob(["direct path\n"]), "notes.txt");
  const r = await fetch(`${s.baseURL}/files`, { method: "POST", headers: { authorization: `Bearer ${API_KEY}` }, body: form });
  expect(r.status).toBe(200);
  return ((await r.json()) as { id: string }).id;
}

async function side(clock: ManualClock, env: Record<string, string>): Promise<Side> {
  const log: Side["log"] = [];
  const server = await startTestServer({ clock, env, logger: capturingLogger(log) });
  const files: [string, string] = [await upload(server), await upload(server)];
  log.length = 0;
  return { server, files, log };
}

beforeAll(async () => {
  const clock = new ManualClock();
  direct = await side(clock, {});
  fastify = await side(clock, { ATRIUM_DIRECT_UNARY: "off" });
});
afterAll(async () => {
  await direct?.server.stop();
  await fastify?.server.stop();
});

interface Case {
  name: string;
  method?: string;
  /** The path with its query; `{file}` and `{gone}` stand for this side's two files. */
  path: string;
  headers?: Record<string, string>;
  /** Bearer key; null: no Authorization header. Default API_KEY. */
  key?: string | null;
  body?: string | Uint8Array;
  http2?: boolean;
  /** Whether the direct path answers it (else it leaves it to Fastify). */
  direct: boolean;
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

// Per request or per connection; the rate-limit state moves with every request and with time.
const VOLATILE = new Set(["date", "x-request-id", "vendor-processing-ms", "connection", "keep-alive", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"]);
const RANDOM_ID = /\b(file-|upload_)[A-Za-z0-9]{24}\b/g;

function normalise(status: number, raw: Record<string, unknown>, body: Buffer): Answer {
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(raw)) if (!k.startsWith(":") && !VOLATILE.has(k) && v !== undefined) headers[k] = String(v);
  const ct = headers["content-type"] ?? "";
  const text = ct.startsWith("application/json") || ct === "";
  const b = Buffer.from(body.toString("latin1").replace(RANDOM_ID, (_id, prefix: string) => prefix + "X".repeat(24)), "latin1");
  return { status, headers, body: text ? b.toString("utf8") : "base64:" + b.toString("base64") };
}

const pathFor = (c: Case, s: Side) => c.path.replace("{file}", s.files[0]).replace("{gone}", s.files[1]);
const headersFor = (c: Case) => {
  const key = c.key === undefined ? API_KEY : c.key;
  return { ...(key === null ? {} : { authorization: `Bearer ${key}` }), ...c.headers };
};

function send(s: Side, c: Case): Promise<Answer> {
  if (c.http2)
    return new Promise((resolve, reject) => {
      const session = http2.connect(s.server.url);
      session.on("error", reject);
      const stream = session.request({ ":method": c.method ?? "GET", ":path": pathFor(c, s), ...headersFor(c) });
      const chunks: Buffer[] = [];
      let head: Record<string, unknown> = {};
      stream.on("response", (h) => (head = h));
      stream.on("data", (d: Buffer) => chunks.push(d));
      stream.on("error", reject);
      stream.on("close", () => {
        session.close();
        resolve(normalise(Number(head[":status"]), head, Buffer.concat(chunks)));
      });
      stream.end(c.body);
    });
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port: s.server.port, method: c.method ?? "GET", path: pathFor(c, s), headers: headersFor(c), agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (d: Buffer) => chunks.push(d));
      res.on("end", () => resolve(normalise(res.statusCode!, res.headers, Buffer.concat(chunks))));
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end(c.body);
  });
}

const J = { "content-type": "application/json" };
const P = { "content-type": "application/proto" };
const getModelBinary = toBinary(GetModelRequestSchema, create(GetModelRequestSchema, { model: "gpt-4o" }));

const cases: Case[] = [
  // REST calls the direct path takes.
  { name: "list models", path: "/v1/models", direct: true },
  { name: "get a built-in model", path: "/v1/models/gpt-4o", direct: true },
  { name: "get a model that does not exist", path: "/v1/models/no-such-model", direct: true },
  { name: "a percent-encoded path variable", path: "/v1/models/gpt%2D4o", direct: true },
  { name: "an encoded slash in a path variable", path: "/v1/models/a%2Fb", direct: true },
  { name: "an empty path variable", path: "/v1/models/", direct: true },
  { name: "list files with paging", path: "/v1/files?limit=1&order=asc", direct: true },
  { name: "list files with purpose", path: "/v1/files?purpose=user_data&limit=5", direct: true },
  { name: "a query value that is not a number", path: "/v1/files?limit=abc", direct: true },
  { name: "an unknown query parameter", path: "/v1/files?colour=blue", direct: true },
  { name: "a query parameter given twice", path: "/v1/files?limit=1&limit=2", direct: true },
  { name: "a map query parameter", path: "/v1/vector_stores?metadata[team]=math", direct: true },
  { name: "a query after a fragment mark", path: "/v1/models#x", direct: true },
  { name: "get a file", path: "/v1/files/{file}", direct: true },
  { name: "get a file that does not exist", path: "/v1/files/file-nope", direct: true },
  { name: "delete a file", method: "DELETE", path: "/v1/files/{gone}", direct: true },
  { name: "delete it again", method: "DELETE", path: "/v1/files/{gone}", direct: true },
  { name: "delete a built-in model", method: "DELETE", path: "/v1/models/gpt-4o", key: KEYS.owner, direct: true },
  { name: "no key", path: "/v1/models", key: null, direct: true },
  { name: "a wrong key", path: "/v1/models", key: "sk-atrium-wrong-key-0000000000", direct: true },
  { name: "a project the key lacks", path: "/v1/models", headers: { "openai-project": "proj_other" }, direct: true },
  { name: "another organization's key", path: "/v1/files/{file}", key: KEYS.otherOrg, direct: true },
  { name: "a client request id", path: "/v1/models/gpt-4o", headers: { "x-client-request-id": "client-1" }, direct: true },
  { name: "a reader key on a delete", method: "DELETE", path: "/v1/files/{file}", key: KEYS.reader, direct: true },

  // REST requests the direct path leaves to Fastify.
  { name: "an invalid client request id", path: "/v1/models", headers: { "x-client-request-id": "caf\u00e9".repeat(200) }, direct: false },
  { name: "custom headers over the budget", path: "/v1/models", headers: { "x-big": "a".repeat(61 * 1024) }, direct: false },
  { name: "a GET with a body", path: "/v1/models", headers: { ...J, "content-length": "2" }, body: "{}", direct: false },
  { name: "a GET with a chunked body", path: "/v1/models", headers: { ...J, "transfer-encoding": "chunked" }, body: "{}", direct: false },
  { name: "HEAD", method: "HEAD", path: "/v1/models", direct: false },
  { name: "a trailing slash", path: "/v1/models/gpt-4o/", direct: false },
  { name: "a doubled slash", path: "//v1/models", direct: false },
  { name: "bad percent-encoding", path: "/v1/models/%zz", direct: false },
  { name: "a path variable over the length limit", path: "/v1/models/" + "m".repeat(200), direct: false },
  { name: "a method the route does not have", method: "PUT", path: "/v1/models/gpt-4o", direct: false },
  { name: "an unknown path", path: "/v1/nope", direct: false },
  { name: "a POST route", method: "POST", path: "/v1/uploads", headers: J, body: JSON.stringify({ bytes: 5, filename: "a.jsonl", mime_type: "application/jsonl", purpose: "batch" }), direct: false },
  { name: "HTTP/2 GET", path: "/v1/models/gpt-4o", http2: true, direct: false },
  { name: "HTTP/2 GET, not found", path: "/v1/files/file-nope", http2: true, direct: false },

  // Connect unary calls the direct path takes, and some it leaves.
  { name: "Connect JSON", method: "POST", path: "/atrium.v1.ModelsService/GetModel", headers: J, body: '{"model":"gpt-4o"}', direct: true },
  { name: "Connect binary", method: "POST", path: "/atrium.v1.ModelsService/GetModel", headers: P, body: getModelBinary, direct: true },
  { name: "Connect not found", method: "POST", path: "/atrium.v1.ModelsService/GetModel", headers: J, body: '{"model":"no-such-model"}', direct: true },
  { name: "Connect without a key", method: "POST", path: "/atrium.v1.ModelsService/ListModels", headers: J, body: "{}", key: null, direct: true },
  { name: "Connect malformed JSON", method: "POST", path: "/atrium.v1.ModelsService/GetModel", headers: J, body: '{"model":', direct: true },
  { name: "Connect with a client request id", method: "POST", path: "/atrium.v1.ModelsService/GetModel", headers: { ...J, "x-client-request-id": "client-2" }, body: '{"model":"gpt-4o"}', direct: true },
  { name: "Connect with a timeout", method: "POST", path: "/atrium.v1.ModelsService/GetModel", headers: { ...J, "connect-timeout-ms": "60000" }, body: '{"model":"gpt-4o"}', direct: true },
  { name: "Connect with gzip accepted", method: "POST", path: "/atrium.v1.ModelsService/ListModels", headers: { ...J, "accept-encoding": "gzip" }, body: "{}", direct: true },
  { name: "Connect with custom headers over the budget", method: "POST", path: "/atrium.v1.ModelsService/GetModel", headers: { ...J, "x-big": "a".repeat(61 * 1024) }, body: '{"model":"gpt-4o"}', direct: false },
  { name: "Connect protocol version 2", method: "POST", path: "/atrium.v1.ModelsService/GetModel", headers: { ...J, "connect-protocol-version": "2" }, body: '{"model":"gpt-4o"}', direct: false },
  { name: "Connect text/plain", method: "POST", path: "/atrium.v1.ModelsService/GetModel", headers: { "content-type": "text/plain" }, body: '{"model":"gpt-4o"}', direct: false },
  { name: "Connect with a query string", method: "POST", path: "/atrium.v1.ModelsService/GetModel?x=1", headers: J, body: '{"model":"gpt-4o"}', direct: false },
  { name: "Connect over HTTP/2", method: "POST", path: "/atrium.v1.ModelsService/GetModel", headers: J, body: '{"model":"gpt-4o"}', http2: true, direct: false },
];

/** The request series of /metrics (atrium_requests_total and the byte counters), as a sorted list. */
async function requestSeries(s: Side): Promise<string[]> {
  const text = await (await fetch(`${s.server.url}/metrics`)).text();
  return text
    .split("\n")
    .filter((l) => /^atrium_(requests_total|request_bytes_total|response_bytes_total|request_duration_seconds_count)\{/.test(l) && !l.includes('route="/metrics"'))
    .sort();
}

describe("direct unary path vs Fastify's lifecycle, same requests to both servers", () => {
  it("every case is named once", () => {
    expect(new Set(cases.map((c) => c.name)).size).toBe(cases.length);
  });

  for (const c of cases)
    it(`${c.name} (${c.direct ? "direct" : "left to Fastify"})`, async () => {
      const path = direct.server.directUnary!;
      const before = path.taken;
      const d = await send(direct, c);
      expect(path.taken - before, "answered on the direct path").toBe(c.direct ? 1 : 0);
      const f = await send(fastify, c);
      expect(d).toEqual(f);
    });

  it("the second server runs with the direct path off", () => {
    expect(fastify.server.directUnary).toBeUndefined();
  });

  it("the same request-log lines", async () => {
    // Lines are written when the answer is sent; give the last ones a moment.
    await new Promise((r) => setTimeout(r, 50));
    const strip = (l: Side["log"], s: Side) => l.map((x) => ({ ...x, url: x.url.replace(s.files[0], "{file}").replace(s.files[1], "{gone}") }));
    expect(strip(direct.log, direct)).toEqual(strip(fastify.log, fastify));
    // Requests Node's parser refuses (no handler runs) are not logged, on either side.
    expect(direct.log.length).toBeGreaterThan(cases.length - 5);
    expect(direct.log.filter((l) => l.clientRequestId).map((l) => l.clientRequestId)).toEqual(["client-1", "client-2"]);
  });

  it("the same request metrics", async () => {
    const d = await requestSeries(direct);
    expect(d.length).toBeGreaterThan(20);
    expect(d).toEqual(await requestSeries(fastify));
    expect(d).toContain('atrium_requests_total{route="/v1/models/{model}",protocol="rest",code="200"} 4');
    expect(d).toContain('atrium_requests_total{route="/atrium.v1.ModelsService/GetModel",protocol="connect",code="not_found"} 1');
  });
});

// Shared pieces of the RPC black-box tests (test/transport/grpc.test.ts,
// test/transport/connect/protocol.test.ts, test/transport/tls.test.ts and the areas' RPC tests):
// typed-error checks, streamed uploads and downloads through any Connect-ES transport, a raw REST
// multipart upload, and `overEveryTransport`, which runs an area's suite over every Connect-ES
// transport (Connect JSON/binary over HTTP/1.1 and HTTP/2, gRPC-Web, gRPC) against a fresh server.
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, createRegistry, type MessageInitShape } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type CallOptions, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { FilesService, type CreateFileRequestSchema } from "../../gen/atrium/v1/files_pb.js";
import { UploadsService, type AddUploadPartRequestSchema } from "../../gen/atrium/v1/uploads_pb.js";
import { ModelsService } from "../../gen/atrium/v1/models_pb.js";
import type { HttpBody } from "../../gen/google/api/httpbody_pb.js";
import { ContentRangeSchema, ErrorInfoSchema, file_atrium_v1_options, type ContentRange, type ErrorInfo } from "../../gen/atrium/v1/options_pb.js";
import { md5, sha256 } from "./rest.js";
import { API_KEY, KEYS, startTestServer, type TestServer } from "./server.js";

/** For JSON clients: the messages that travel inside google.protobuf.Any (ContentRange, ErrorInfo). */
export const registry = createRegistry(file_atrium_v1_options);

// connect-node clients default to the binary format; the JSON ones say so explicitly and, like any
// JSON client, need a registry to read the google.protobuf.Any (ContentRange) of a download.
const json = { useBinaryFormat: false, jsonOptions: { registry } } as const;
const binary = { useBinaryFormat: true } as const;

export type FilesClient = Client<typeof FilesService>;
export type UploadsClient = Client<typeof UploadsService>;
export type ModelsClient = Client<typeof ModelsService>;

export interface Clients {
  files: FilesClient;
  uploads: UploadsClient;
  models: ModelsClient;
}

export function clients(t: Transport): Clients {
  return { files: createClient(FilesService, t), uploads: createClient(UploadsService, t), models: createClient(ModelsService, t) };
}

/** Call options carrying `Authorization: Bearer key` plus any extra headers (project selection). */
export function as(key: string | undefined, extra: Record<string, string> = {}): CallOptions {
  return { headers: { ...(key === undefined ? {} : { authorization: `Bearer ${key}` }), ...extra }, timeoutMs: 20_000 };
}

export { md5, sha256 };

/** Deterministic-size random content. */
export const bytes = (n: number) => new Uint8Array(randomBytes(n));

export interface ExpectedError {
  type?: string;
  param?: string;
  code?: string;
  httpStatus: number;
}

/** Runs `fn`, which must fail with `code` and exactly one atrium.v1.ErrorInfo detail matching `info`. */
export async function expectRpcError(fn: () => Promise<unknown>, code: Code, info: ExpectedError): Promise<ConnectError> {
  let err: unknown;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  if (err === undefined) throw new Error(`expected the call to fail with ${Code[code]}, but it succeeded`);
  const ce = ConnectError.from(err);
  const details = ce.findDetails(ErrorInfoSchema);
  expect({ code: Code[ce.code], message: ce.rawMessage }).toEqual({ code: Code[code], message: expect.any(String) });
  expect(details, `ErrorInfo detail of: ${ce.message}`).toHaveLength(1);
  const d: ErrorInfo = details[0];
  expect({ type: d.type, param: d.param, code: d.code, httpStatus: d.httpStatus }).toMatchObject(info);
  // Bad input gets a message that names the offending field; a state
  // conflict (an upload no longer pending) names the state instead.
  if (info.param && info.httpStatus === 400 && info.code !== "invalid_upload_state") expect(ce.rawMessage).toContain(info.param.split(".").pop()!.replace(/\[\d+\]$/, ""));
  return ce;
}

/** A client stream of CreateFile messages: metadata first (or last), then `data` in `chunk`-sized pieces. */
type CreateFileInit = MessageInitShape<typeof CreateFileRequestSchema>;

export async function* fileMessages(
  meta: { purpose?: string; filename?: string; expiresAfter?: CreateFileInit["expiresAfter"] },
  data: Uint8Array,
  opts: { chunk?: number; metaLast?: boolean } = {},
): AsyncGenerator<CreateFileInit> {
  const size = opts.chunk ?? 64 * 1024;
  if (!opts.metaLast) yield meta;
  for (let i = 0; i < data.length; i += size) yield { chunk: data.subarray(i, Math.min(data.length, i + size)) };
  if (opts.metaLast) yield meta;
}

export async function* partMessages(uploadId: string, data: Uint8Array, chunk = 16 * 1024): AsyncGenerator<MessageInitShape<typeof AddUploadPartRequestSchema>> {
  // Only the first message names the upload; the rest carry bytes only.
  yield { uploadId, data: data.subarray(0, Math.min(chunk, data.length)) };
  for (let i = chunk; i < data.length; i += chunk) yield { data: data.subarray(i, Math.min(data.length, i + chunk)) };
}

export interface Download {
  data: Uint8Array;
  chunks: number;
  contentType: string;
  range: ContentRange | undefined;
  /** Content types / extension counts of every chunk after the first (must be empty). */
  laterHeads: Array<{ contentType: string; extensions: number }>;
}

/** Reads GetFileContent to the end and reassembles the bytes. */
export async function download(files: FilesClient, fileId: string, opts: CallOptions, range = ""): Promise<Download> {
  const parts: Uint8Array[] = [];
  let first: { contentType: string; range: ContentRange | undefined } | undefined;
  const laterHeads: Download["laterHeads"] = [];
  for await (const c of files.getFileContent({ fileId, range }, opts)) {
    if (!first) {
      const ranges = c.extensions.map((e) => anyUnpack(e, ContentRangeSchema)).filter((x): x is ContentRange => x !== undefined);
      expect(ranges.length).toBeLessThanOrEqual(1);
      first = { contentType: c.contentType, range: ranges[0] };
    } else laterHeads.push({ contentType: c.contentType, extensions: c.extensions.length });
    parts.push(c.data);
  }
  return { data: Buffer.concat(parts), chunks: parts.length, contentType: first?.contentType ?? "", range: first?.range, laterHeads };
}

/**
 * Reads a server stream of google.api.HttpBody to the end: the bytes, how many messages carried
 * them, and the content type and ContentRange of the first.
 */
export async function readHttpBodies(stream: AsyncIterable<HttpBody>) {
  const parts: Uint8Array[] = [];
  let head: { contentType: string; range: ContentRange | undefined } | undefined;
  for await (const m of stream) {
    head ??= { contentType: m.contentType, range: m.extensions.map((e) => anyUnpack(e, ContentRangeSchema)).find((x) => x !== undefined) };
    parts.push(m.data);
  }
  return { data: Buffer.concat(parts), chunks: parts.length, ...head! };
}

export const contentRange = (size: number, partial: boolean, start: number, end: number) =>
  create(ContentRangeSchema, { size: BigInt(size), partial, start: BigInt(start), end: BigInt(end) });

/** POST /v1/files as raw multipart (what any HTTP client sends). */
export async function restUpload(baseURL: string, key: string, filename: string, purpose: string, data: Uint8Array, headers: Record<string, string> = {}) {
  const form = new FormData();
  form.append("purpose", purpose);
  form.append("file", new Blob([new Uint8Array(data)]), filename);
  const r = await fetch(`${baseURL}/files`, { method: "POST", headers: { authorization: `Bearer ${key}`, ...headers }, body: form });
  const body = (await r.json()) as any;
  expect(r.status, JSON.stringify(body)).toBe(200);
  return body as { id: string; bytes: number; filename: string; purpose: string; created_at: number };
}

/** Every Connect-ES transport the one port serves; each must behave the same for every RPC. */
export const RPC_TRANSPORTS: ReadonlyArray<{ name: string; make: (s: TestServer) => Transport }> = [
  { name: "Connect JSON over HTTP/1.1", make: (s) => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1", ...json }) },
  { name: "Connect binary over HTTP/1.1", make: (s) => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1", ...binary }) },
  { name: "Connect JSON over HTTP/2 (h2c)", make: (s) => createConnectTransport({ baseUrl: s.url, httpVersion: "2", ...json }) },
  { name: "Connect binary over HTTP/2 (h2c)", make: (s) => createConnectTransport({ baseUrl: s.url, httpVersion: "2", ...binary }) },
  { name: "gRPC-Web binary over HTTP/1.1", make: (s) => createGrpcWebTransport({ baseUrl: s.url, httpVersion: "1.1", ...binary }) },
  { name: "gRPC-Web JSON over HTTP/1.1", make: (s) => createGrpcWebTransport({ baseUrl: s.url, httpVersion: "1.1", ...json }) },
  { name: "gRPC-Web binary over HTTP/2 (h2c)", make: (s) => createGrpcWebTransport({ baseUrl: s.url, httpVersion: "2", ...binary }) },
  { name: "gRPC binary over h2c (Connect-ES createGrpcTransport)", make: (s) => createGrpcTransport({ baseUrl: s.url }) },
  { name: "gRPC JSON codec over h2c (application/grpc+json)", make: (s) => createGrpcTransport({ baseUrl: s.url, useBinaryFormat: false, jsonOptions: { registry } }) },
];

/**
 * Declares `suite` once per transport of RPC_TRANSPORTS, under "<area> over <transport>". Each
 * transport gets a fresh server of its own, so lists are exact; `c` holds its clients once the
 * server is up (inside tests and hooks).
 */
export function overEveryTransport(area: string, suite: (c: Clients) => void) {
  for (const { name, make } of RPC_TRANSPORTS) {
    describe(`${area} over ${name}`, () => {
      let s: TestServer | undefined;
      const c = {} as Clients;
      beforeAll(async () => {
        s = await startTestServer();
        Object.assign(c, clients(make(s)));
      });
      afterAll(async () => s?.stop());
      suite(c);
    });
  }
}

/**
 * Cross-protocol tenancy for one transport: `fileId` was uploaded over REST with API_KEY into
 * proj_default; `bFileId` over REST with KEYS.projectB into proj_b.
 */
export async function checkTenancy(c: Clients, fileId: string, data: Uint8Array, bFileId: string) {
  const me = as(API_KEY);
  expect((await c.files.getFile({ fileId }, me)).bytes).toBe(BigInt(data.length));
  expect((await c.files.listFiles({}, me)).data.map((f) => f.id)).toContain(fileId);
  expect(sha256((await download(c.files, fileId, me)).data)).toBe(sha256(data));

  // Another project of the same organization, and another organization: NotFound, never a leak.
  for (const key of [KEYS.projectB, KEYS.otherOrg]) {
    const o = as(key);
    const nf = { param: "file_id", httpStatus: 404 };
    await expectRpcError(() => c.files.getFile({ fileId }, o), Code.NotFound, nf);
    await expectRpcError(() => download(c.files, fileId, o), Code.NotFound, nf);
    await expectRpcError(() => c.files.deleteFile({ fileId }, o), Code.NotFound, nf);
    expect((await c.files.listFiles({}, o)).data.map((f) => f.id)).not.toContain(fileId);
  }

  // KEYS.multi: its first project by default; Vendor-Project / OpenAI-Project select proj_b.
  expect((await c.files.getFile({ fileId }, as(KEYS.multi))).id).toBe(fileId);
  await expectRpcError(() => c.files.getFile({ fileId: bFileId }, as(KEYS.multi)), Code.NotFound, { httpStatus: 404 });
  for (const h of ["vendor-project", "openai-project"]) {
    const inB = as(KEYS.multi, { [h]: "proj_b" });
    expect((await c.files.getFile({ fileId: bFileId }, inB)).id).toBe(bFileId);
    const ids = (await c.files.listFiles({}, inB)).data.map((f) => f.id);
    expect(ids).toContain(bFileId);
    expect(ids).not.toContain(fileId);
    await expectRpcError(() => c.files.getFile({ fileId }, inB), Code.NotFound, { httpStatus: 404 });
    expect((await c.files.getFile({ fileId }, as(KEYS.multi, { [h]: "proj_default" }))).id).toBe(fileId);
  }
  await expectRpcError(() => c.files.getFile({ fileId }, as(KEYS.multi, { "vendor-project": "proj_other" })), Code.Unauthenticated, {
    code: "mismatched_project",
    httpStatus: 401,
  });
  await expectRpcError(() => c.files.getFile({ fileId }, as(KEYS.multi, { "vendor-organization": "org-other" })), Code.Unauthenticated, {
    code: "mismatched_organization",
    httpStatus: 401,
  });
  // None of the refused calls touched it.
  expect((await c.files.getFile({ fileId }, me)).id).toBe(fileId);
}

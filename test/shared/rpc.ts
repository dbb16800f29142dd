// Shared pieces of the RPC black-box tests (test/transport/grpc.test.ts,
// test/transport/connect/protocol.test.ts, test/transport/tls.test.ts and the areas' RPC tests):
// typed-error checks, streamed uploads and downloads through any Connect-ES transport, a raw REST
// multipart upload, and `rpcSuite`, the behaviour every Connect-ES transport (Connect JSON/binary
// over HTTP/1.1 and HTTP/2, gRPC-Web, gRPC) must show against a fresh in-process server.
import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { create, createRegistry, type MessageInitShape } from "@bufbuild/protobuf";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { Code, ConnectError, createClient, type CallOptions, type Client, type Transport } from "@connectrpc/connect";
import { FilesService, type CreateFileRequestSchema } from "../../gen/atrium/v1/files_pb.js";
import { UploadsService, type AddUploadPartRequestSchema } from "../../gen/atrium/v1/uploads_pb.js";
import { ModelsService } from "../../gen/atrium/v1/models_pb.js";
import { ContentRangeSchema, ErrorInfoSchema, file_atrium_v1_options, type ContentRange, type ErrorInfo } from "../../gen/atrium/v1/options_pb.js";
import { API_KEY, KEYS, startTestServer, type TestServer } from "./server.js";

/** For JSON clients: the messages that travel inside google.protobuf.Any (ContentRange, ErrorInfo). */
export const registry = createRegistry(file_atrium_v1_options);

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

export const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
export const md5 = (b: Uint8Array) => createHash("md5").update(b).digest("hex");

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
  // Bad input gets a message that names the offending field (DESIGN principle 3); a state
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

const nowSec = () => Math.floor(Date.now() / 1000);

/**
 * The behaviour every Connect-ES transport must show. `make` builds the transport for the server
 * (it is called once, after the server is up). Each suite gets its own server so lists are exact.
 */
export function rpcSuite(name: string, make: (s: TestServer) => Transport) {
  describe(name, () => {
    let s: TestServer;
    let c: Clients;
    const me = as(API_KEY);
    beforeAll(async () => {
      s = await startTestServer();
      c = clients(make(s));
    });
    afterAll(async () => s?.stop());

    describe("files", () => {
      it("CreateFile streams metadata then chunks; GetFile/GetFileContent return it byte-exact", async () => {
        const data = bytes(200_001);
        const before = nowSec();
        const f = await c.files.createFile(fileMessages({ purpose: "assistants", filename: "notes.txt" }, data, { chunk: 7_919 }), me);
        expect(f.id).toMatch(/^file-[A-Za-z0-9]{24}$/);
        expect(f).toMatchObject({ object: "file", bytes: 200_001n, filename: "notes.txt", purpose: "assistants", status: "processed" });
        expect(Number(f.createdAt)).toBeGreaterThanOrEqual(before - 1);
        expect(Number(f.createdAt)).toBeLessThanOrEqual(nowSec() + 1);
        expect(f.expiresAt).toBeUndefined();

        const got = await c.files.getFile({ fileId: f.id }, me);
        expect(got).toEqual(f);

        const d = await download(c.files, f.id, me);
        expect(d.data.length).toBe(data.length);
        expect(sha256(d.data)).toBe(sha256(data));
        expect(d.contentType).toBe("text/plain");
        expect(d.range).toEqual(contentRange(data.length, false, 0, data.length - 1));
      });

      it("accepts the metadata after the bytes (the order the official SDK uses) and expires_after", async () => {
        const data = new TextEncoder().encode('{"a":1}\n{"a":2}\n');
        const f = await c.files.createFile(
          fileMessages({ purpose: "batch", filename: "in.jsonl", expiresAfter: { anchor: "created_at", seconds: 7200n } }, data, { chunk: 5, metaLast: true }),
          me,
        );
        expect(f).toMatchObject({ bytes: BigInt(data.length), filename: "in.jsonl", purpose: "batch" });
        expect(f.expiresAt).toBe(f.createdAt + 7200n);
        const d = await download(c.files, f.id, me);
        expect(Buffer.from(d.data).toString()).toBe('{"a":1}\n{"a":2}\n');
        expect(d.contentType).toBe("application/jsonl");
        // batch files get the 30-day default expiry when none is given
        const g = await c.files.createFile(fileMessages({ purpose: "batch", filename: "b.jsonl" }, data), me);
        expect(g.expiresAt).toBe(g.createdAt + 30n * 24n * 3600n);
      });

      it("a multi-MB file round-trips byte-exact; only the first chunk carries content type and ContentRange", async () => {
        const data = bytes(3 * 1024 * 1024 + 12_345);
        const f = await c.files.createFile(fileMessages({ purpose: "user_data", filename: "blob.bin" }, data, { chunk: 256 * 1024 }), me);
        expect(f.bytes).toBe(BigInt(data.length));
        const d = await download(c.files, f.id, me);
        expect(d.data.length).toBe(data.length);
        expect(sha256(d.data)).toBe(sha256(data));
        expect(d.chunks).toBeGreaterThan(1);
        expect(d.contentType).toBe("application/octet-stream");
        expect(d.range).toEqual(contentRange(data.length, false, 0, data.length - 1));
        expect(d.laterHeads.every((h) => h.contentType === "" && h.extensions === 0)).toBe(true);
      });

      it("serves byte ranges from the `range` field", async () => {
        const data = bytes(100_000);
        const f = await c.files.createFile(fileMessages({ purpose: "user_data", filename: "r.bin" }, data), me);
        const mid = await download(c.files, f.id, me, "bytes=10-19");
        expect(Buffer.from(mid.data)).toEqual(Buffer.from(data.subarray(10, 20)));
        expect(mid.range).toEqual(contentRange(100_000, true, 10, 19));
        const open = await download(c.files, f.id, me, "bytes=99990-");
        expect(Buffer.from(open.data)).toEqual(Buffer.from(data.subarray(99_990)));
        expect(open.range).toEqual(contentRange(100_000, true, 99_990, 99_999));
        const suffix = await download(c.files, f.id, me, "bytes=-5");
        expect(Buffer.from(suffix.data)).toEqual(Buffer.from(data.subarray(99_995)));
        expect(suffix.range).toEqual(contentRange(100_000, true, 99_995, 99_999));
        // An end past the size is clamped.
        const clamped = await download(c.files, f.id, me, "bytes=99998-2000000");
        expect(clamped.range).toEqual(contentRange(100_000, true, 99_998, 99_999));
        expect(clamped.data.length).toBe(2);
        // A range past the end is the RPC form of 416.
        await expectRpcError(() => download(c.files, f.id, me, "bytes=100000-"), Code.OutOfRange, {
          param: "range",
          code: "range_not_satisfiable",
          httpStatus: 416,
        });
      });

      it("lists with limit, order, after and purpose; deletes", async () => {
        const mk = (purpose: string, name: string) => c.files.createFile(fileMessages({ purpose, filename: name }, bytes(10)), as(KEYS.multi, { "vendor-project": "proj_b" }));
        // proj_b is empty in every suite's fresh server until now: these lists are exact.
        const a = await mk("assistants", "a.txt");
        const b = await mk("user_data", "b.txt");
        const v = await mk("vision", "c.png");
        const bp = as(KEYS.projectB);
        const all = await c.files.listFiles({}, bp);
        expect(all.object).toBe("list");
        expect(all.data.map((x) => x.id)).toEqual([v.id, b.id, a.id]); // default order: newest first
        expect(all).toMatchObject({ firstId: v.id, lastId: a.id, hasMore: false });
        const asc = await c.files.listFiles({ order: "asc", limit: 2 }, bp);
        expect(asc.data.map((x) => x.id)).toEqual([a.id, b.id]);
        expect(asc.hasMore).toBe(true);
        const next = await c.files.listFiles({ order: "asc", limit: 2, after: asc.lastId }, bp);
        expect(next.data.map((x) => x.id)).toEqual([v.id]);
        expect(next.hasMore).toBe(false);
        const ud = await c.files.listFiles({ purpose: "user_data" }, bp);
        expect(ud.data.map((x) => x.id)).toEqual([b.id]);
        expect(ud.data[0]).toEqual(b);

        const del = await c.files.deleteFile({ fileId: b.id }, bp);
        expect(del).toMatchObject({ id: b.id, object: "file", deleted: true });
        expect((await c.files.listFiles({}, bp)).data.map((x) => x.id)).toEqual([v.id, a.id]);
        await expectRpcError(() => c.files.getFile({ fileId: b.id }, bp), Code.NotFound, { param: "file_id", httpStatus: 404 });
        await expectRpcError(() => download(c.files, b.id, bp), Code.NotFound, { param: "file_id", httpStatus: 404 });
        await expectRpcError(() => c.files.deleteFile({ fileId: b.id }, bp), Code.NotFound, { param: "file_id", httpStatus: 404 });
        const empty = await c.files.listFiles({ purpose: "fine-tune" }, bp);
        expect(empty).toMatchObject({ object: "list", data: [], hasMore: false });
        expect(empty.firstId).toBeUndefined();
      });

      it("rejects bad input with InvalidArgument naming the field", async () => {
        const inv = (param: string, code?: string) => ({ type: "invalid_request_error", param, httpStatus: 400, ...(code ? { code } : {}) });
        await expectRpcError(() => c.files.createFile(fileMessages({ purpose: "nonsense", filename: "x.txt" }, bytes(10)), me), Code.InvalidArgument, inv("purpose", "invalid_value"));
        await expectRpcError(() => c.files.createFile(fileMessages({ filename: "x.txt" }, bytes(10)), me), Code.InvalidArgument, inv("purpose", "missing_required_parameter"));
        await expectRpcError(() => c.files.createFile(fileMessages({ purpose: "assistants" }, bytes(10)), me), Code.InvalidArgument, inv("file", "missing_required_parameter"));
        await expectRpcError(() => c.files.createFile(fileMessages({ purpose: "assistants", filename: "e.txt" }, new Uint8Array(0)), me), Code.InvalidArgument, inv("file", "empty_file"));
        await expectRpcError(() => c.files.createFile(fileMessages({ purpose: "batch", filename: "x.csv" }, bytes(10)), me), Code.InvalidArgument, inv("file", "invalid_file_format"));
        await expectRpcError(
          () => c.files.createFile(fileMessages({ purpose: "assistants", filename: "x.txt", expiresAfter: { anchor: "created_at", seconds: 60n } }, bytes(10)), me),
          Code.InvalidArgument,
          inv("expires_after.seconds", "integer_out_of_range"),
        );
        await expectRpcError(
          () => c.files.createFile(fileMessages({ purpose: "assistants", filename: "x.txt", expiresAfter: { anchor: "last_active_at", seconds: 3600n } }, bytes(10)), me),
          Code.InvalidArgument,
          inv("expires_after.anchor"),
        );
        await expectRpcError(() => c.files.listFiles({ limit: 0 }, me), Code.InvalidArgument, inv("limit", "integer_out_of_range"));
        await expectRpcError(() => c.files.listFiles({ limit: 10_001 }, me), Code.InvalidArgument, inv("limit", "integer_out_of_range"));
        await expectRpcError(() => c.files.listFiles({ order: "sideways" }, me), Code.InvalidArgument, inv("order"));
        await expectRpcError(() => c.files.listFiles({ purpose: "bogus" }, me), Code.InvalidArgument, inv("purpose"));
        await expectRpcError(() => c.files.listFiles({ after: "file-doesnotexist" }, me), Code.InvalidArgument, inv("after", "invalid_cursor"));
        // Nothing half-written was left behind by the rejected uploads.
        expect((await c.files.listFiles({ purpose: "assistants" }, me)).data.every((f) => f.filename !== "x.txt" && f.filename !== "e.txt")).toBe(true);
      });
    });

    describe("uploads", () => {
      it("create, AddUploadPart (client-streaming), complete with md5 into a File", async () => {
        const data = bytes(300_007);
        const up = await c.uploads.createUpload({ bytes: BigInt(data.length), filename: "big.txt", mimeType: "text/plain", purpose: "assistants" }, me);
        expect(up.id).toMatch(/^upload_/);
        expect(up).toMatchObject({ object: "upload", bytes: BigInt(data.length), filename: "big.txt", purpose: "assistants", status: "pending" });
        expect(up.expiresAt).toBe(up.createdAt + 3600n);
        expect(up.file).toBeUndefined();

        const p1 = await c.uploads.addUploadPart(partMessages(up.id, data.subarray(0, 120_000)), me);
        expect(p1).toMatchObject({ object: "upload.part", uploadId: up.id });
        expect(p1.id).toMatch(/^part_/);
        const p2 = await c.uploads.addUploadPart(partMessages(up.id, data.subarray(120_000), 50_000), me);
        expect(p2.id).not.toBe(p1.id);

        // Wrong order → the bytes differ → the checksum fails, and the upload stays pending.
        await expectRpcError(
          () => c.uploads.completeUpload({ uploadId: up.id, partIds: [p2.id, p1.id], md5: md5(data) }, me),
          Code.InvalidArgument,
          { param: "md5", code: "checksum_mismatch", httpStatus: 400 },
        );
        await expectRpcError(() => c.uploads.completeUpload({ uploadId: up.id, partIds: [p1.id], md5: md5(data) }, me), Code.InvalidArgument, {
          param: "part_ids",
          code: "bytes_mismatch",
          httpStatus: 400,
        });
        await expectRpcError(() => c.uploads.completeUpload({ uploadId: up.id, partIds: [p1.id, p1.id] }, me), Code.InvalidArgument, {
          param: "part_ids[1]",
          httpStatus: 400,
        });
        await expectRpcError(() => c.uploads.completeUpload({ uploadId: up.id, partIds: [p1.id, p2.id], md5: "xyz" }, me), Code.InvalidArgument, {
          param: "md5",
          httpStatus: 400,
        });

        const done = await c.uploads.completeUpload({ uploadId: up.id, partIds: [p1.id, p2.id], md5: md5(data) }, me);
        expect(done).toMatchObject({ id: up.id, status: "completed", bytes: BigInt(data.length) });
        expect(done.file).toMatchObject({ object: "file", bytes: BigInt(data.length), filename: "big.txt", purpose: "assistants", status: "processed" });
        const d = await download(c.files, done.file!.id, me);
        expect(sha256(d.data)).toBe(sha256(data));
        expect(d.contentType).toBe("text/plain");
        expect(await c.files.getFile({ fileId: done.file!.id }, me)).toEqual(done.file);

        await expectRpcError(() => c.uploads.completeUpload({ uploadId: up.id, partIds: [p1.id, p2.id] }, me), Code.InvalidArgument, {
          param: "upload_id",
          code: "invalid_upload_state",
          httpStatus: 400,
        });
        await expectRpcError(() => c.uploads.cancelUpload({ uploadId: up.id }, me), Code.InvalidArgument, { param: "upload_id", code: "invalid_upload_state", httpStatus: 400 });
      });

      it("cancel; parts after cancel are refused; bad input names the field", async () => {
        const up = await c.uploads.createUpload({ bytes: 10n, filename: "img.png", mimeType: "image/png", purpose: "vision" }, me);
        await c.uploads.addUploadPart(partMessages(up.id, bytes(4)), me);
        const cancelled = await c.uploads.cancelUpload({ uploadId: up.id }, me);
        expect(cancelled).toMatchObject({ id: up.id, object: "upload", status: "cancelled" });
        expect(cancelled.file).toBeUndefined();
        await expectRpcError(() => c.uploads.addUploadPart(partMessages(up.id, bytes(4)), me), Code.InvalidArgument, {
          param: "upload_id",
          code: "invalid_upload_state",
          httpStatus: 400,
        });
        await expectRpcError(() => c.uploads.addUploadPart(partMessages("upload_nope", bytes(4)), me), Code.NotFound, { param: "upload_id", httpStatus: 404 });
        await expectRpcError(() => c.uploads.addUploadPart(partMessages("", bytes(4)), me), Code.InvalidArgument, {
          param: "upload_id",
          code: "missing_required_parameter",
          httpStatus: 400,
        });
        await expectRpcError(() => c.uploads.cancelUpload({ uploadId: "upload_nope" }, me), Code.NotFound, { param: "upload_id", httpStatus: 404 });
        const inv = (param: string, code?: string) => ({ param, httpStatus: 400, ...(code ? { code } : {}) });
        await expectRpcError(() => c.uploads.createUpload({ filename: "a.txt", mimeType: "text/plain", purpose: "assistants" }, me), Code.InvalidArgument, inv("bytes", "missing_required_parameter"));
        await expectRpcError(
          () => c.uploads.createUpload({ bytes: 0n, filename: "a.txt", mimeType: "text/plain", purpose: "assistants" }, me),
          Code.InvalidArgument,
          inv("bytes", "integer_out_of_range"),
        );
        await expectRpcError(() => c.uploads.createUpload({ bytes: 5n, mimeType: "text/plain", purpose: "assistants" }, me), Code.InvalidArgument, inv("filename"));
        await expectRpcError(() => c.uploads.createUpload({ bytes: 5n, filename: "a.txt", purpose: "assistants" }, me), Code.InvalidArgument, inv("mime_type"));
        await expectRpcError(
          () => c.uploads.createUpload({ bytes: 5n, filename: "a.png", mimeType: "text/plain", purpose: "vision" }, me),
          Code.InvalidArgument,
          inv("mime_type", "unsupported_mime_type"),
        );
        await expectRpcError(() => c.uploads.createUpload({ bytes: 5n, filename: "a.txt", mimeType: "text/plain", purpose: "evil" }, me), Code.InvalidArgument, inv("purpose"));
      });
    });

    describe("models", () => {
      it("lists and gets the catalog", async () => {
        const list = await c.models.listModels({}, me);
        expect(list.object).toBe("list");
        const m = list.data.find((x) => x.id === "gpt-4o");
        expect(m).toMatchObject({ id: "gpt-4o", object: "model", created: 1715367049n, ownedBy: "system" });
        expect(m!.shutdownDate).toBeUndefined();
        expect(list.data.length).toBeGreaterThan(5);
        const got = await c.models.getModel({ model: "gpt-4o" }, me);
        expect(got).toEqual(m);
        const sunset = list.data.find((x) => x.shutdownDate !== undefined);
        if (sunset) expect(sunset.shutdownDate).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      });

      it("NotFound and PermissionDenied carry ErrorInfo", async () => {
        await expectRpcError(() => c.models.getModel({ model: "no-such-model" }, me), Code.NotFound, {
          type: "invalid_request_error",
          param: "model",
          code: "model_not_found",
          httpStatus: 404,
        });
        // DeleteModel needs the Owner role.
        await expectRpcError(() => c.models.deleteModel({ model: "ft:gpt-4o:org:x:abc" }, me), Code.PermissionDenied, {
          code: "insufficient_permissions",
          httpStatus: 403,
        });
        // An owner still cannot delete a base model, and a missing fine-tuned model is NotFound.
        await expectRpcError(() => c.models.deleteModel({ model: "gpt-4o" }, as(KEYS.owner)), Code.PermissionDenied, {
          param: "model",
          code: "model_not_deletable",
          httpStatus: 403,
        });
        await expectRpcError(() => c.models.deleteModel({ model: "ft:gpt-4o:org:x:abc" }, as(KEYS.owner)), Code.NotFound, {
          param: "model",
          code: "model_not_found",
          httpStatus: 404,
        });
      });
    });

    describe("auth errors", () => {
      it("Unauthenticated without a key or with a wrong one, on unary and streaming RPCs", async () => {
        const noKey = as(undefined);
        const badKey = as("sk-atrium-wrong-key-000000000000");
        const unauth = { httpStatus: 401 };
        await expectRpcError(() => c.models.getModel({ model: "gpt-4o" }, noKey), Code.Unauthenticated, unauth);
        await expectRpcError(() => c.models.getModel({ model: "gpt-4o" }, badKey), Code.Unauthenticated, { ...unauth, code: "invalid_api_key" });
        await expectRpcError(() => c.files.listFiles({}, badKey), Code.Unauthenticated, { ...unauth, code: "invalid_api_key" });
        await expectRpcError(() => c.files.createFile(fileMessages({ purpose: "assistants", filename: "a.txt" }, bytes(100_000)), noKey), Code.Unauthenticated, unauth);
        await expectRpcError(() => c.files.createFile(fileMessages({ purpose: "assistants", filename: "a.txt" }, bytes(10)), badKey), Code.Unauthenticated, {
          ...unauth,
          code: "invalid_api_key",
        });
        await expectRpcError(() => download(c.files, "file-x", badKey), Code.Unauthenticated, { ...unauth, code: "invalid_api_key" });
        await expectRpcError(() => c.uploads.addUploadPart(partMessages("upload_x", bytes(10)), noKey), Code.Unauthenticated, unauth);
        await expectRpcError(() => c.models.getModel({ model: "gpt-4o" }, { headers: { authorization: "Basic abc" } }), Code.Unauthenticated, {
          ...unauth,
          code: "invalid_api_key",
        });
        // A project the key does not belong to.
        await expectRpcError(() => c.models.getModel({ model: "gpt-4o" }, as(API_KEY, { "vendor-project": "proj_b" })), Code.Unauthenticated, {
          ...unauth,
          code: "mismatched_project",
        });
      });

      it("PermissionDenied for a read-only key's writes; its reads work", async () => {
        const reader = as(KEYS.reader);
        const f = await c.files.createFile(fileMessages({ purpose: "assistants", filename: "r.txt" }, bytes(10)), me);
        expect((await c.files.getFile({ fileId: f.id }, reader)).id).toBe(f.id);
        expect((await download(c.files, f.id, reader)).data.length).toBe(10);
        const denied = { type: "invalid_request_error", code: "insufficient_permissions", httpStatus: 403 };
        await expectRpcError(() => c.files.createFile(fileMessages({ purpose: "assistants", filename: "w.txt" }, bytes(10)), reader), Code.PermissionDenied, denied);
        await expectRpcError(() => c.files.deleteFile({ fileId: f.id }, reader), Code.PermissionDenied, denied);
        await expectRpcError(
          () => c.uploads.createUpload({ bytes: 5n, filename: "a.txt", mimeType: "text/plain", purpose: "assistants" }, reader),
          Code.PermissionDenied,
          denied,
        );
        expect((await c.files.getFile({ fileId: f.id }, me)).id).toBe(f.id);
      });
    });
  });
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

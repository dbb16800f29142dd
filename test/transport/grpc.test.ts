// Black-box gRPC tests with the reference Node client, @grpc/grpc-js with @grpc/proto-loader loading
// proto/ at run time (no generated code), over plain h2c with prior knowledge on the same port that
// serves REST. Connect-ES's gRPC transport runs each area's RPCs in that area's folder, through
// overEveryTransport (test/shared/rpc.ts).
import { readdirSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { AnySchema, anyUnpack } from "@bufbuild/protobuf/wkt";
import { BinaryReader } from "@bufbuild/protobuf/wire";
import { createGrpcTransport } from "@connectrpc/connect-node";
import OpenAI, { toFile } from "openai";
import { CreateFileRequestSchema } from "../../gen/atrium/v1/files_pb.js";
import { ContentRangeSchema, ErrorInfoSchema, type ErrorInfo } from "../../gen/atrium/v1/options_pb.js";
import { API_KEY, KEYS, startTestServer, type TestServer } from "../shared/server.js";
import { bytes, checkTenancy, clients, md5, restUpload, sha256 } from "../shared/rpc.js";

// ---- @grpc/grpc-js + @grpc/proto-loader ------------------------------------------------------

const PROTO_DIR = fileURLToPath(new URL("../../proto", import.meta.url));
// proto-loader resolves google/protobuf/*.proto from the copies protobufjs ships.
const require = createRequire(import.meta.url);
const WKT_DIR = dirname(createRequire(require.resolve("@grpc/proto-loader")).resolve("protobufjs/package.json"));

const definition = protoLoader.loadSync(["atrium/v1/files.proto", "atrium/v1/uploads.proto", "atrium/v1/models.proto"], {
  includeDirs: [PROTO_DIR, WKT_DIR],
  keepCase: true,
  longs: String,
  defaults: true,
  oneofs: true,
});
const atrium = (grpc.loadPackageDefinition(definition) as any).atrium.v1;

interface GrpcClients {
  files: any;
  uploads: any;
  models: any;
  close(): void;
}

function grpcClients(port: number): GrpcClients {
  const target = `127.0.0.1:${port}`;
  const creds = grpc.credentials.createInsecure();
  const files = new atrium.FilesService(target, creds);
  // One channel for all three services, as a real application would share it.
  const opts = { channelOverride: files.getChannel() };
  const uploads = new atrium.UploadsService(target, creds, opts);
  const models = new atrium.ModelsService(target, creds, opts);
  return { files, uploads, models, close: () => files.close() };
}

function md(key: string | undefined, extra: Record<string, string> = {}): grpc.Metadata {
  const m = new grpc.Metadata();
  if (key !== undefined) m.set("authorization", `Bearer ${key}`);
  for (const [k, v] of Object.entries(extra)) m.set(k, v);
  return m;
}

const deadline = () => ({ deadline: Date.now() + 20_000 });

function unary<T = any>(client: any, method: string, req: object, meta: grpc.Metadata): Promise<T> {
  return new Promise((resolve, reject) => client[method](req, meta, deadline(), (err: any, res: T) => (err ? reject(err) : resolve(res))));
}

/** A client-streaming call that honours back-pressure (waits for 'drain'). */
async function clientStream<T = any>(client: any, method: string, messages: Iterable<object>, meta: grpc.Metadata): Promise<T> {
  let call: grpc.ClientWritableStream<object>;
  const result = new Promise<T>((resolve, reject) => {
    call = client[method](meta, deadline(), (err: any, res: T) => (err ? reject(err) : resolve(res)));
  });
  const failed = result.then(
    () => false,
    () => true,
  );
  for (const m of messages) {
    if (!call!.write(m)) {
      const stop = await Promise.race([new Promise<boolean>((r) => call!.once("drain", () => r(false))), failed]);
      if (stop) break; // the server answered early (an error): stop sending
    }
  }
  call!.end();
  return result;
}

interface GrpcDownload {
  data: Buffer;
  chunks: any[];
  headers: grpc.Metadata | undefined;
}

function serverStream(client: any, method: string, req: object, meta: grpc.Metadata): Promise<GrpcDownload> {
  return new Promise((resolve, reject) => {
    const call = client[method](req, meta, deadline());
    const chunks: any[] = [];
    let headers: grpc.Metadata | undefined;
    call.on("metadata", (m: grpc.Metadata) => (headers = m));
    call.on("data", (c: any) => chunks.push(c));
    call.on("error", reject);
    call.on("end", () => resolve({ data: Buffer.concat(chunks.map((c) => c.data)), chunks, headers }));
  });
}

function* fileChunks(meta: object, data: Uint8Array, chunk = 64 * 1024): Generator<object> {
  yield meta;
  for (let i = 0; i < data.length; i += chunk) yield { chunk: data.subarray(i, i + chunk) };
}

/** The atrium.v1.ErrorInfo details of a gRPC error, from its google.rpc.Status trailer. */
function errorInfos(err: grpc.ServiceError): ErrorInfo[] {
  const raw = err.metadata?.get("grpc-status-details-bin") ?? [];
  expect(raw, "grpc-status-details-bin trailer").toHaveLength(1);
  const r = new BinaryReader(raw[0] as Buffer);
  const out: ErrorInfo[] = [];
  let code: number | undefined;
  while (r.pos < r.len) {
    const [no, wt] = r.tag();
    if (no === 1) code = r.int32();
    else if (no === 3) {
      const info = anyUnpack(fromBinary(AnySchema, r.bytes()), ErrorInfoSchema);
      if (info) out.push(info);
    } else r.skip(wt);
  }
  expect(code).toBe(err.code);
  return out;
}

async function expectGrpcError(p: Promise<unknown>, status: grpc.status, info: Partial<Pick<ErrorInfo, "type" | "param" | "code" | "httpStatus">>) {
  let err: grpc.ServiceError | undefined;
  try {
    await p;
  } catch (e) {
    err = e as grpc.ServiceError;
  }
  expect(err, `expected ${grpc.status[status]}`).toBeDefined();
  expect(grpc.status[err!.code], err!.details).toBe(grpc.status[status]);
  expect(err!.details.length).toBeGreaterThan(0);
  const infos = errorInfos(err!);
  expect(infos).toHaveLength(1);
  const { type, param, code, httpStatus } = infos[0];
  expect({ type, param, code, httpStatus }).toMatchObject(info);
  return err!;
}

function contentRangeOf(chunk: any) {
  expect(chunk.extensions).toHaveLength(1);
  const ext = chunk.extensions[0];
  expect(ext.type_url).toBe("type.googleapis.com/atrium.v1.ContentRange");
  const r = fromBinary(ContentRangeSchema, ext.value);
  return { size: Number(r.size), partial: r.partial, start: Number(r.start), end: Number(r.end) };
}

/**
 * Starts a CreateFile over raw HTTP/2 with gRPC framing, sends 1 MiB and waits until the server is
 * writing it to a temp file; returns the TCP socket so the test can drop the connection. Raw,
 * because Node-based clients' cancel sends END_STREAM before RST_STREAM, which a server must read
 * as "the client finished sending".
 */
async function startDroppedUpload(s: TestServer, tmpCount: () => number): Promise<net.Socket> {
  let socket: net.Socket;
  const session = http2.connect(s.url, { createConnection: () => (socket = net.connect(s.port, "127.0.0.1")) });
  session.on("error", () => {});
  const stream = session.request({
    ":method": "POST",
    ":path": "/atrium.v1.FilesService/CreateFile",
    "content-type": "application/grpc",
    te: "trailers",
    authorization: `Bearer ${KEYS.projectB}`,
  });
  stream.on("error", () => {});
  const frame = (m: Uint8Array) => {
    const head = Buffer.alloc(5); // flags 0, then the big-endian length
    head.writeUInt32BE(m.length, 1);
    return Buffer.concat([head, m]);
  };
  stream.write(frame(toBinary(CreateFileRequestSchema, create(CreateFileRequestSchema, { purpose: "user_data", filename: "dropped.bin" }))));
  for (let i = 0; i < 16; i++) stream.write(frame(toBinary(CreateFileRequestSchema, create(CreateFileRequestSchema, { chunk: bytes(64 * 1024) }))));
  const before = tmpCount();
  for (let i = 0; i < 100 && tmpCount() === before; i++) await new Promise((r) => setTimeout(r, 20));
  return socket!;
}

describe("@grpc/grpc-js + @grpc/proto-loader over h2c on the REST port", () => {
  let s: TestServer;
  let g: GrpcClients;
  const me = () => md(API_KEY);
  beforeAll(async () => {
    s = await startTestServer();
    g = grpcClients(s.port);
  });
  afterAll(async () => {
    g?.close();
    await s?.stop();
  });

  it("one port: REST and gRPC answer on it side by side", async () => {
    const [rest, model] = await Promise.all([
      fetch(`${s.baseURL}/models/gpt-4o`, { headers: { authorization: `Bearer ${API_KEY}` } }).then((r) => r.json()),
      unary(g.models, "GetModel", { model: "gpt-4o" }, me()),
    ]);
    expect(new URL(s.url).port).toBe(String(s.port));
    expect(rest).toMatchObject({ id: "gpt-4o", object: "model", created: 1715367049, owned_by: "system" });
    // proto-loader with defaults: true fills absent optionals with their defaults.
    expect(model).toMatchObject({ id: "gpt-4o", object: "model", created: "1715367049", owned_by: "system" });
    const list = await unary(g.models, "ListModels", {}, me());
    expect(list.object).toBe("list");
    expect(list.data.map((m: any) => m.id)).toContain("gpt-4o");
  });

  it("CreateFile client-streaming (multi-MB, with back-pressure) and GetFileContent reassembled byte-exact", async () => {
    const data = bytes(6 * 1024 * 1024 + 777);
    const f = await clientStream(g.files, "CreateFile", fileChunks({ purpose: "user_data", filename: "grpc.bin" }, data, 100_000), me());
    expect(f).toMatchObject({ object: "file", bytes: String(data.length), filename: "grpc.bin", purpose: "user_data", status: "processed" });
    expect(f.id).toMatch(/^file-/);

    const d = await serverStream(g.files, "GetFileContent", { file_id: f.id }, me());
    expect(d.data.length).toBe(data.length);
    expect(sha256(d.data)).toBe(sha256(data));
    expect(d.chunks.length).toBeGreaterThan(1);
    expect(d.chunks[0].content_type).toBe("application/octet-stream");
    expect(contentRangeOf(d.chunks[0])).toEqual({ size: data.length, partial: false, start: 0, end: data.length - 1 });
    for (const c of d.chunks.slice(1)) {
      expect(c.content_type).toBe("");
      expect(c.extensions).toEqual([]);
    }
    // Response headers arrive as initial metadata.
    expect(d.headers?.get("x-request-id")[0]).toMatch(/^req_/);

    const part = await serverStream(g.files, "GetFileContent", { file_id: f.id, range: "bytes=1000-1999" }, me());
    expect(part.data).toEqual(Buffer.from(data.subarray(1000, 2000)));
    expect(contentRangeOf(part.chunks[0])).toEqual({ size: data.length, partial: true, start: 1000, end: 1999 });
  });

  it("list, get, delete", async () => {
    const b = () => md(KEYS.projectB);
    const a = await clientStream(g.files, "CreateFile", fileChunks({ purpose: "assistants", filename: "a.txt" }, bytes(3)), b());
    const c = await clientStream(g.files, "CreateFile", fileChunks({ filename: "c.jsonl", purpose: "fine-tune" }, Buffer.from('{"x":1}\n')), b());
    const list = await unary(g.files, "ListFiles", {}, b());
    expect(list).toMatchObject({ object: "list", has_more: false, first_id: c.id, last_id: a.id });
    expect(list.data.map((x: any) => x.id)).toEqual([c.id, a.id]);
    const ft = await unary(g.files, "ListFiles", { purpose: "fine-tune", limit: 5 }, b());
    expect(ft.data.map((x: any) => x.id)).toEqual([c.id]);
    expect(await unary(g.files, "GetFile", { file_id: a.id }, b())).toEqual(a);
    expect(await unary(g.files, "DeleteFile", { file_id: a.id }, b())).toEqual({ id: a.id, object: "file", deleted: true });
    await expectGrpcError(unary(g.files, "GetFile", { file_id: a.id }, b()), grpc.status.NOT_FOUND, { param: "file_id", httpStatus: 404 });
    expect((await unary(g.files, "ListFiles", {}, b())).data.map((x: any) => x.id)).toEqual([c.id]);
  });

  it("uploads: create, AddUploadPart stream, complete with md5, cancel", async () => {
    const data = bytes(200_000);
    const up = await unary(g.uploads, "CreateUpload", { bytes: data.length, filename: "u.jsonl", mime_type: "application/jsonl", purpose: "batch" }, me());
    expect(up).toMatchObject({ object: "upload", status: "pending", bytes: String(data.length), purpose: "batch", filename: "u.jsonl" });
    const parts = [];
    for (const [from, to] of [
      [0, 64_000],
      [64_000, 200_000],
    ]) {
      const slice = data.subarray(from, to);
      const msgs = [{ upload_id: up.id, data: slice.subarray(0, 10_000) }, { data: slice.subarray(10_000) }];
      parts.push(await clientStream(g.uploads, "AddUploadPart", msgs, me()));
    }
    expect(parts[0]).toMatchObject({ object: "upload.part", upload_id: up.id });
    const done = await unary(g.uploads, "CompleteUpload", { upload_id: up.id, part_ids: parts.map((p) => p.id), md5: md5(data) }, me());
    expect(done.status).toBe("completed");
    expect(done.file).toMatchObject({ object: "file", bytes: String(data.length), filename: "u.jsonl", purpose: "batch" });
    const d = await serverStream(g.files, "GetFileContent", { file_id: done.file.id }, me());
    expect(sha256(d.data)).toBe(sha256(data));
    expect(d.chunks[0].content_type).toBe("application/jsonl");

    const other = await unary(g.uploads, "CreateUpload", { bytes: 5, filename: "x.txt", mime_type: "text/plain", purpose: "assistants" }, me());
    expect(await unary(g.uploads, "CancelUpload", { upload_id: other.id }, me())).toMatchObject({ id: other.id, status: "cancelled" });
    await expectGrpcError(unary(g.uploads, "CompleteUpload", { upload_id: other.id, part_ids: ["part_x"] }, me()), grpc.status.INVALID_ARGUMENT, {
      param: "upload_id",
      code: "invalid_upload_state",
      httpStatus: 400,
    });
    await expectGrpcError(
      unary(g.uploads, "CompleteUpload", { upload_id: up.id, part_ids: parts.map((p) => p.id), md5: md5(data) }, me()),
      grpc.status.INVALID_ARGUMENT,
      { param: "upload_id", code: "invalid_upload_state" },
    );
  });

  it("status codes and ErrorInfo details on errors", async () => {
    await expectGrpcError(unary(g.files, "GetFile", { file_id: "file-missing" }, me()), grpc.status.NOT_FOUND, {
      type: "invalid_request_error",
      param: "file_id",
      httpStatus: 404,
    });
    await expectGrpcError(serverStream(g.files, "GetFileContent", { file_id: "file-missing" }, me()), grpc.status.NOT_FOUND, { param: "file_id", httpStatus: 404 });
    await expectGrpcError(unary(g.models, "GetModel", { model: "nope" }, me()), grpc.status.NOT_FOUND, { param: "model", code: "model_not_found", httpStatus: 404 });
    const bad = await expectGrpcError(unary(g.files, "ListFiles", { limit: 0 }, me()), grpc.status.INVALID_ARGUMENT, {
      param: "limit",
      code: "integer_out_of_range",
      httpStatus: 400,
    });
    expect(bad.details).toContain("limit");
    await expectGrpcError(clientStream(g.files, "CreateFile", fileChunks({ purpose: "wrong", filename: "a.txt" }, bytes(1_000_000)), me()), grpc.status.INVALID_ARGUMENT, {
      param: "purpose",
      httpStatus: 400,
    });
    await expectGrpcError(unary(g.uploads, "CreateUpload", { filename: "a.txt", mime_type: "text/plain", purpose: "assistants" }, me()), grpc.status.INVALID_ARGUMENT, {
      param: "bytes",
      code: "missing_required_parameter",
    });
    await expectGrpcError(unary(g.models, "GetModel", { model: "gpt-4o" }, md(undefined)), grpc.status.UNAUTHENTICATED, { httpStatus: 401 });
    await expectGrpcError(unary(g.models, "GetModel", { model: "gpt-4o" }, md("sk-nope-nope-nope")), grpc.status.UNAUTHENTICATED, {
      code: "invalid_api_key",
      httpStatus: 401,
    });
    await expectGrpcError(clientStream(g.files, "CreateFile", fileChunks({ purpose: "assistants", filename: "a.txt" }, bytes(10)), md(KEYS.reader)), grpc.status.PERMISSION_DENIED, {
      code: "insufficient_permissions",
      httpStatus: 403,
    });
    await expectGrpcError(unary(g.models, "DeleteModel", { model: "ft:gpt-4o:x:y:z" }, me()), grpc.status.PERMISSION_DENIED, { httpStatus: 403 });
    const f = await clientStream(g.files, "CreateFile", fileChunks({ purpose: "assistants", filename: "r.txt" }, bytes(10)), me());
    await expectGrpcError(serverStream(g.files, "GetFileContent", { file_id: f.id, range: "bytes=50-60" }, me()), grpc.status.OUT_OF_RANGE, {
      param: "range",
      code: "range_not_satisfiable",
      httpStatus: 416,
    });
  });

  it("a CreateFile whose connection drops midway, or that the server rejects, leaves no file, blob or temp file behind", async () => {
    const blobCount = () => readdirSync(join(s.dataDir, "blobs"), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
    const tmpCount = () => readdirSync(join(s.dataDir, "tmp")).length;
    const b = () => md(KEYS.multi, { "vendor-project": "proj_b" });
    const before = { blobs: blobCount(), files: (await unary(g.files, "ListFiles", {}, b())).data.length };
    const settle = async () => {
      for (let i = 0; i < 100 && (tmpCount() > 0 || blobCount() > before.blobs); i++) await new Promise((r) => setTimeout(r, 50));
    };

    // The connection dies mid-upload (no END_STREAM, no RST_STREAM: the TCP socket just closes).
    const socket = await startDroppedUpload(s, tmpCount);
    expect(tmpCount(), "the upload is streaming into its temp file").toBe(1);
    socket.destroy();
    await settle();
    expect(tmpCount()).toBe(0);
    expect(blobCount()).toBe(before.blobs);
    expect((await unary(g.files, "ListFiles", {}, b())).data.length).toBe(before.files);

    // Rejected by the server after the bytes (the metadata came last and is invalid).
    const rejected = [{ chunk: bytes(300_000) }, { purpose: "batch", filename: "not-jsonl.bin" }];
    await expectGrpcError(clientStream(g.files, "CreateFile", rejected, b()), grpc.status.INVALID_ARGUMENT, { param: "file", code: "invalid_file_format" });
    await settle();
    expect(tmpCount()).toBe(0);
    expect(blobCount()).toBe(before.blobs);
    expect((await unary(g.files, "ListFiles", {}, b())).data.length).toBe(before.files);
  });

  it("many concurrent calls on one channel", async () => {
    const data = bytes(512 * 1024);
    const f = await clientStream(g.files, "CreateFile", fileChunks({ purpose: "user_data", filename: "cc.bin" }, data), me());
    const res = await Promise.all([
      ...Array.from({ length: 40 }, () => unary(g.models, "GetModel", { model: "gpt-4o-mini" }, me()).then((m) => m.id)),
      ...Array.from({ length: 4 }, () => serverStream(g.files, "GetFileContent", { file_id: f.id }, me()).then((d) => sha256(d.data))),
      ...Array.from({ length: 4 }, (_, i) =>
        clientStream(g.files, "CreateFile", fileChunks({ purpose: "user_data", filename: `p${i}.bin` }, data), me()).then((x) => x.bytes),
      ),
    ]);
    expect(res.filter((x) => x === "gpt-4o-mini")).toHaveLength(40);
    expect(res.filter((x) => x === sha256(data))).toHaveLength(4);
    expect(res.filter((x) => x === String(data.length))).toHaveLength(4);
  });
});

describe("tenancy across REST (official SDK), Connect-ES gRPC and grpc-js", () => {
  let s: TestServer;
  let g: GrpcClients;
  const data = bytes(40_000);
  let fileId: string;
  let bFileId: string;
  beforeAll(async () => {
    s = await startTestServer();
    g = grpcClients(s.port);
    const sdk = new OpenAI({ apiKey: API_KEY, baseURL: s.baseURL, maxRetries: 0 });
    const f = await sdk.files.create({ file: await toFile(Buffer.from(data), "sdk.txt"), purpose: "assistants" });
    fileId = f.id;
    bFileId = (await restUpload(s.baseURL, KEYS.projectB, "b.txt", "assistants", bytes(10))).id;
  });
  afterAll(async () => {
    g?.close();
    await s?.stop();
  });

  it("Connect-ES gRPC: the SDK's upload is visible to the same key, and to no other project", async () => {
    await checkTenancy(clients(createGrpcTransport({ baseUrl: s.url })), fileId, data, bFileId);
  });

  it("grpc-js: same key sees it; other projects and organizations get NOT_FOUND; metadata selects the project", async () => {
    const got = await unary(g.files, "GetFile", { file_id: fileId }, md(API_KEY));
    expect(got).toMatchObject({ id: fileId, filename: "sdk.txt", bytes: String(data.length), purpose: "assistants" });
    expect(sha256((await serverStream(g.files, "GetFileContent", { file_id: fileId }, md(API_KEY))).data)).toBe(sha256(data));
    expect((await unary(g.files, "ListFiles", {}, md(API_KEY))).data.map((f: any) => f.id)).toContain(fileId);

    for (const key of [KEYS.projectB, KEYS.otherOrg]) {
      await expectGrpcError(unary(g.files, "GetFile", { file_id: fileId }, md(key)), grpc.status.NOT_FOUND, { param: "file_id", httpStatus: 404 });
      await expectGrpcError(serverStream(g.files, "GetFileContent", { file_id: fileId }, md(key)), grpc.status.NOT_FOUND, { httpStatus: 404 });
      await expectGrpcError(unary(g.files, "DeleteFile", { file_id: fileId }, md(key)), grpc.status.NOT_FOUND, { httpStatus: 404 });
      expect((await unary(g.files, "ListFiles", {}, md(key))).data.map((f: any) => f.id)).not.toContain(fileId);
    }

    expect((await unary(g.files, "GetFile", { file_id: fileId }, md(KEYS.multi))).id).toBe(fileId);
    for (const h of ["vendor-project", "openai-project"]) {
      const inB = md(KEYS.multi, { [h]: "proj_b" });
      expect((await unary(g.files, "GetFile", { file_id: bFileId }, inB)).id).toBe(bFileId);
      await expectGrpcError(unary(g.files, "GetFile", { file_id: fileId }, inB), grpc.status.NOT_FOUND, { httpStatus: 404 });
    }
    await expectGrpcError(unary(g.files, "GetFile", { file_id: fileId }, md(KEYS.multi, { "vendor-project": "proj_other" })), grpc.status.UNAUTHENTICATED, {
      code: "mismatched_project",
    });

    // The file survived every refused delete, and the SDK still reads it.
    const sdk = new OpenAI({ apiKey: API_KEY, baseURL: s.baseURL, maxRetries: 0 });
    const content = await sdk.files.content(fileId);
    expect(sha256(new Uint8Array(await content.arrayBuffer()))).toBe(sha256(data));
  });

  it("a grpc-js upload is visible to the SDK with the same key only", async () => {
    const payload = bytes(33_333);
    const f = await clientStream(g.files, "CreateFile", fileChunks({ purpose: "user_data", filename: "g.bin" }, payload), md(KEYS.multi, { "openai-project": "proj_b" }));
    const sdkB = new OpenAI({ apiKey: KEYS.projectB, baseURL: s.baseURL, maxRetries: 0 });
    expect(await sdkB.files.retrieve(f.id)).toMatchObject({ id: f.id, bytes: 33_333, filename: "g.bin", purpose: "user_data" });
    const sdkMultiB = new OpenAI({ apiKey: KEYS.multi, baseURL: s.baseURL, maxRetries: 0, project: "proj_b" });
    expect(sha256(new Uint8Array(await (await sdkMultiB.files.content(f.id)).arrayBuffer()))).toBe(sha256(payload));
    const sdkA = new OpenAI({ apiKey: API_KEY, baseURL: s.baseURL, maxRetries: 0 });
    await expect(sdkA.files.retrieve(f.id)).rejects.toMatchObject({ status: 404 });
  });
});

// Containers over the typed protocols on the same port: the life cycle through a Connect client,
// a container file downloaded as a gRPC server stream of google.api.HttpBody (with Range), and
// another project's container a NotFound in every protocol.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, createClient, type CallOptions, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { ContainersService, type CreateContainerFileRequestSchema } from "../../../gen/atrium/v1/containers_pb.js";
import type { ContentRange } from "../../../gen/atrium/v1/options_pb.js";
import { API_KEY, KEYS, ManualClock, startTestServer, type TestServer } from "../../shared/server.js";
import { as, bytes, contentRange, expectRpcError, readHttpBodies, registry, restUpload, sha256 } from "../../shared/rpc.js";

type ContainersClient = Client<typeof ContainersService>;
type FileMessage = MessageInitShape<typeof CreateContainerFileRequestSchema>;

let s: TestServer;
let clock: ManualClock;
const me = as(API_KEY);

beforeAll(async () => {
  clock = new ManualClock();
  s = await startTestServer({ clock });
});
afterAll(async () => s?.stop());

const connect = (): ContainersClient => createClient(ContainersService, createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" }));
const grpc = (): ContainersClient => createClient(ContainersService, createGrpcTransport({ baseUrl: s.url }));
const grpcWeb = (): ContainersClient => createClient(ContainersService, createGrpcWebTransport({ baseUrl: s.url, httpVersion: "1.1", useBinaryFormat: false, jsonOptions: { registry } }));

/** The first message names the container and the file; the rest carry the bytes. */
async function* upload(containerId: string, filename: string, data: Uint8Array, chunk = 64 * 1024): AsyncGenerator<FileMessage> {
  yield { containerId, filename };
  for (let i = 0; i < data.length; i += chunk) yield { chunk: data.subarray(i, Math.min(data.length, i + chunk)) };
}

async function* one(m: FileMessage): AsyncGenerator<FileMessage> {
  yield m;
}

const download = (c: ContainersClient, containerId: string, fileId: string, opts: CallOptions, range = "") =>
  readHttpBodies(c.getContainerFileContent({ containerId, fileId, range }, opts));

describe("the life cycle through a Connect client (HTTP/1.1)", () => {
  it("create, retrieve, list, upload, share a File, list files, download, delete", async () => {
    const c = connect();
    const made = await c.createContainer(
      {
        name: "rpc",
        memoryLimit: "4g",
        expiresAfter: { anchor: "last_active_at", minutes: 30 },
        networkPolicy: { type: "allowlist", allowedDomains: ["pypi.org"], domainSecrets: [{ domain: "pypi.org", name: "PIP_TOKEN", value: "rpc-secret-value" }] },
      },
      me,
    );
    expect(made.id).toMatch(/^cntr_/);
    expect(made).toMatchObject({
      object: "container",
      name: "rpc",
      status: "running",
      memoryLimit: "4g",
      expiresAfter: { anchor: "last_active_at", minutes: 30 },
      networkPolicy: { type: "allowlist", allowedDomains: ["pypi.org"] },
      createdAt: BigInt(clock.now()),
      lastActiveAt: BigInt(clock.now()),
    });
    expect(JSON.stringify(made, (_k, v) => (typeof v === "bigint" ? String(v) : v))).not.toContain("rpc-secret-value");
    clock.advance(5);
    expect((await c.getContainer({ containerId: made.id }, me)).lastActiveAt).toBe(BigInt(clock.now()));
    expect((await c.listContainers({ name: "rpc" }, me)).data.map((x) => x.id)).toEqual([made.id]);

    const data = bytes(3 * 1024 * 1024 + 5);
    const up = await c.createContainerFile(upload(made.id, "model.bin", data), me);
    expect(up).toMatchObject({ object: "container.file", bytes: BigInt(data.length), containerId: made.id, path: "/mnt/data/model.bin", source: "user" });
    const got = await download(c, made.id, up.id, me);
    expect(sha256(got.data)).toBe(sha256(data));
    expect(got.contentType).toBe("application/octet-stream");

    const file = await restUpload(s.baseURL, API_KEY, "notes.txt", "assistants", new TextEncoder().encode("shared over rpc"));
    const shared = await c.createContainerFile(one({ containerId: made.id, fileId: file.id }), me);
    expect(shared).toMatchObject({ path: "/mnt/data/notes.txt", bytes: 15n });
    expect(Buffer.from((await download(c, made.id, shared.id, me)).data).toString()).toBe("shared over rpc");

    const list = await c.listContainerFiles({ containerId: made.id, order: "asc" }, me);
    expect(list).toMatchObject({ object: "list", hasMore: false, firstId: up.id, lastId: shared.id });
    expect(await c.getContainerFile({ containerId: made.id, fileId: up.id }, me)).toEqual(up);

    expect(await c.deleteContainerFile({ containerId: made.id, fileId: up.id }, me)).toMatchObject({ id: up.id, object: "container.file.deleted", deleted: true });
    await expectRpcError(() => c.getContainerFile({ containerId: made.id, fileId: up.id }, me), Code.NotFound, { param: "file_id", httpStatus: 404 });
    expect(await c.deleteContainer({ containerId: made.id }, me)).toMatchObject({ id: made.id, object: "container.deleted", deleted: true });
    await expectRpcError(() => c.getContainer({ containerId: made.id }, me), Code.NotFound, { param: "container_id", httpStatus: 404 });
  });

  it("errors carry the REST error's param and code", async () => {
    const c = connect();
    await expectRpcError(() => c.createContainer({ name: "x", memoryLimit: "2g" }, me), Code.InvalidArgument, { param: "memory_limit", httpStatus: 400 });
    await expectRpcError(() => c.createContainer({}, me), Code.InvalidArgument, { param: "name", code: "missing_required_parameter", httpStatus: 400 });
    await expectRpcError(
      () => c.createContainer({ name: "x", skills: [{ type: "skill_reference", skillId: "skill_1", version: { kind: { case: "stringValue", value: "0" } } }] }, me),
      Code.InvalidArgument,
      { param: "skills[0].version", httpStatus: 400 },
    );
    const made = await c.createContainer({ name: "errs" }, me);
    const file = await restUpload(s.baseURL, API_KEY, "f.txt", "assistants", new TextEncoder().encode("f"));
    async function* both(): AsyncGenerator<FileMessage> {
      yield { containerId: made.id, fileId: file.id };
      yield { chunk: new Uint8Array([1, 2, 3]) };
    }
    await expectRpcError(() => c.createContainerFile(both(), me), Code.InvalidArgument, { param: "file_id", httpStatus: 400 });
    await expectRpcError(() => c.createContainerFile(one({ filename: "x.txt", chunk: new Uint8Array([1]) }), me), Code.InvalidArgument, {
      param: "container_id",
      code: "missing_required_parameter",
      httpStatus: 400,
    });
    await expectRpcError(() => c.createContainerFile(one({ containerId: made.id, fileId: "file-nope" }), me), Code.NotFound, { param: "file_id", httpStatus: 404 });
    await expectRpcError(() => c.createContainer({ name: "x" }, as(KEYS.reader)), Code.PermissionDenied, { httpStatus: 403 });
  });

  it("an expired container's files are an InvalidArgument container_expired", async () => {
    const c = connect();
    const made = await c.createContainer({ name: "rpc-expiry", expiresAfter: { anchor: "last_active_at", minutes: 1 } }, me);
    const f = await c.createContainerFile(upload(made.id, "x.txt", new TextEncoder().encode("x")), me);
    clock.advance(60);
    await s.sweeper.runOnce();
    expect((await c.getContainer({ containerId: made.id }, me)).status).toBe("expired");
    const expired = { param: "container_id", code: "container_expired", httpStatus: 400 };
    await expectRpcError(() => download(c, made.id, f.id, me), Code.InvalidArgument, expired);
    await expectRpcError(() => c.createContainerFile(upload(made.id, "y.txt", new Uint8Array([1])), me), Code.InvalidArgument, expired);
  });
});

describe("a container file as a gRPC server stream", () => {
  it("streams the exact bytes in chunks; a Range gives the slice and its ContentRange", async () => {
    const g = grpc();
    const made = await g.createContainer({ name: "grpc" }, me);
    const data = bytes(2 * 1024 * 1024 + 999);
    const up = await g.createContainerFile(upload(made.id, "frames.bin", data, 100_000), me);
    const whole = await download(g, made.id, up.id, me);
    expect(whole.data.length).toBe(data.length);
    expect(sha256(whole.data)).toBe(sha256(data));
    expect(whole.chunks).toBeGreaterThan(1);
    expect(whole.range).toEqual(contentRange(data.length, false, 0, data.length - 1));
    const part = await download(g, made.id, up.id, me, "bytes=100-199");
    expect(Buffer.from(part.data).equals(Buffer.from(data.subarray(100, 200)))).toBe(true);
    expect(part.range).toEqual(contentRange(data.length, true, 100, 199));
    await expectRpcError(() => download(g, made.id, up.id, me, `bytes=${data.length}-`), Code.OutOfRange, { httpStatus: 416 });
  });
});

describe("tenancy: another project's container is not found in any protocol", () => {
  it("REST, Connect, gRPC-Web and gRPC all answer NotFound / 404 and never list it", async () => {
    const owner = connect();
    const made = await owner.createContainer({ name: "walled" }, me);
    const f = await owner.createContainerFile(upload(made.id, "w.txt", new TextEncoder().encode("walled")), me);
    const file = await restUpload(s.baseURL, API_KEY, "mine.txt", "assistants", new TextEncoder().encode("m"));
    const nf = { httpStatus: 404 };
    const clients: Array<[string, ContainersClient]> = [
      ["connect", connect()],
      ["grpc-web", grpcWeb()],
      ["grpc", grpc()],
    ];
    for (const key of [KEYS.projectB, KEYS.otherOrg]) {
      const o = as(key);
      for (const [, c] of clients) {
        await expectRpcError(() => c.getContainer({ containerId: made.id }, o), Code.NotFound, { ...nf, param: "container_id" });
        await expectRpcError(() => c.listContainerFiles({ containerId: made.id }, o), Code.NotFound, nf);
        await expectRpcError(() => c.getContainerFile({ containerId: made.id, fileId: f.id }, o), Code.NotFound, nf);
        await expectRpcError(() => download(c, made.id, f.id, o), Code.NotFound, nf);
        await expectRpcError(() => c.createContainerFile(upload(made.id, "x.txt", new Uint8Array([1])), o), Code.NotFound, nf);
        await expectRpcError(() => c.deleteContainerFile({ containerId: made.id, fileId: f.id }, o), Code.NotFound, nf);
        await expectRpcError(() => c.deleteContainer({ containerId: made.id }, o), Code.NotFound, nf);
        // My File cannot be shared into their container, nor into mine by them.
        const theirs = await c.createContainer({ name: "theirs" }, o);
        await expectRpcError(() => c.createContainerFile(one({ containerId: theirs.id, fileId: file.id }), o), Code.NotFound, { ...nf, param: "file_id" });
        await expectRpcError(() => c.createContainer({ name: "t", fileIds: [file.id] }, o), Code.NotFound, { ...nf, param: "file_ids[0]" });
        expect((await c.listContainers({ limit: 100 }, o)).data.map((x) => x.id)).not.toContain(made.id);
      }
      for (const path of [`/containers/${made.id}`, `/containers/${made.id}/files/${f.id}/content`]) {
        const r = await fetch(`${s.baseURL}${path}`, { headers: { authorization: `Bearer ${key}` } });
        expect(r.status).toBe(404);
        await r.arrayBuffer();
      }
    }
    // Untouched by all of that.
    expect(Buffer.from((await download(owner, made.id, f.id, me)).data).toString()).toBe("walled");
  });
});

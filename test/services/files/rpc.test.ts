// The files area over every typed protocol the port serves (Connect JSON/binary over HTTP/1.1 and
// h2c, gRPC-Web, gRPC): client-streamed CreateFile, GetFileContent as a server stream with
// ContentRange, ranges, lists, deletes and the errors as typed codes with atrium.v1.ErrorInfo.
import { expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { API_KEY, KEYS } from "../../shared/server.js";
import { as, bytes, contentRange, download, expectRpcError, fileMessages, overEveryTransport, sha256 } from "../../shared/rpc.js";

const nowSec = () => Math.floor(Date.now() / 1000);
const me = as(API_KEY);

overEveryTransport("files", (c) => {
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

// The uploads area over every typed protocol the port serves: CreateUpload, client-streamed
// AddUploadPart, CompleteUpload into a File (md5, order and size checks), cancel, and the errors as
// typed codes with atrium.v1.ErrorInfo.
import { expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { API_KEY } from "../../shared/server.js";
import { as, bytes, download, expectRpcError, md5, overEveryTransport, partMessages, sha256 } from "../../shared/rpc.js";

const me = as(API_KEY);

overEveryTransport("uploads", (c) => {
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

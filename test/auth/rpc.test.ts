// Authentication and roles over every typed protocol the port serves: Unauthenticated without a
// key, with a wrong one or for a project the key lacks, on unary and streaming RPCs; a read-only
// key's writes PermissionDenied while its reads work.
import { expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { API_KEY, KEYS } from "../shared/server.js";
import { as, bytes, download, expectRpcError, fileMessages, overEveryTransport, partMessages } from "../shared/rpc.js";

const me = as(API_KEY);

overEveryTransport("auth errors", (c) => {
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

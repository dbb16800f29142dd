// The models area over every typed protocol the port serves: the catalog listed and read, and
// NotFound / PermissionDenied with atrium.v1.ErrorInfo.
import { expect, it } from "vitest";
import { Code } from "@connectrpc/connect";
import { API_KEY, KEYS } from "../../shared/server.js";
import { as, expectRpcError, overEveryTransport } from "../../shared/rpc.js";

const me = as(API_KEY);

overEveryTransport("models", (c) => {
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

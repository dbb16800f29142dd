// The models area's API for other areas: FineTunedModels and the modelNotFound error.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError, toRestError } from "../../../src/common/errors.js";
import { fineTunedModels, modelNotFound } from "../../../src/services/models/index.js";
import { DuplicateRecord, openSqliteRecordStore } from "../../../src/storage/index.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function openStore() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-models-"));
  const store = openSqliteRecordStore(path.join(dir, "atrium.db"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => store.close());
  return store;
}

const scope = { projectId: "proj_a" };

describe("FineTunedModels", () => {
  it("creates models inside the caller's atomic write, gets, lists and deletes them per project", async () => {
    const records = openStore();
    const models = fineTunedModels({ records });
    const a = { id: "ft:gpt-4o-mini:org:a:1", created: 10, ownedBy: "org_1" };
    const b = { id: "ft:gpt-4o-mini:org:b:2", created: 20, ownedBy: "org_1" };
    await records.atomically([models.createOp(scope, a), models.createOp(scope, b)]);
    expect(await models.get(scope, a.id)).toEqual(a);
    expect(await models.has(scope, b.id)).toBe(true);
    expect(await models.has({ projectId: "proj_b" }, b.id)).toBe(false);
    expect(await models.list(scope)).toEqual([a, b]);
    await expect(records.atomically([models.createOp(scope, a)])).rejects.toBeInstanceOf(DuplicateRecord);
    await records.atomically([models.deleteOp(scope, a.id), models.deleteOp(scope, "ft:absent")]);
    expect(await models.get(scope, a.id)).toBeUndefined();
    expect(await models.delete(scope, b.id)).toBe(true);
    expect(await models.delete(scope, b.id)).toBe(false);
    expect(await models.list(scope)).toEqual([]);
  });
});

describe("modelNotFound", () => {
  it("is the platform's 404 model_not_found naming the field", () => {
    const e = modelNotFound("gpt-9");
    expect(e).toBeInstanceOf(ApiError);
    expect(toRestError(e)).toMatchObject({
      status: 404,
      body: { error: { message: "The model 'gpt-9' does not exist or you do not have access to it.", type: "invalid_request_error", param: "model", code: "model_not_found" } },
    });
    expect(modelNotFound("x", "body.model").param).toBe("body.model");
    const cause = new Error("upstream");
    expect(modelNotFound("x", "model", cause).cause).toBe(cause);
  });
});

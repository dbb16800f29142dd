// Models (spec 4.7, 2.8): the built-in catalog, the project's fine-tuned models, and deletion,
// which needs the Owner role (or an admin key) and only applies to fine-tuned models.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { ADMIN_KEY, API_KEY, KEYS, startTestServer, type TestServer } from "../../shared/server.js";
import { api, expectError, sdk, sdkError } from "../../shared/rest.js";

let s: TestServer;
let client: OpenAI;

beforeAll(async () => {
  s = await startTestServer();
  client = sdk(s.baseURL);
});
afterAll(async () => s?.stop());

async function insertFineTuned(id: string, projectId = "proj_default", ownedBy = "org-default") {
  const created = Math.floor(Date.now() / 1000);
  await s.deps.records.collection("fine_tuned_model").insert({ projectId }, { id, createdAt: created, data: { id, created, ownedBy } });
  return created;
}

describe("models: list and retrieve", () => {
  it("GET /models is {object: list, data} of Model objects (raw)", async () => {
    const res = await api(s.baseURL, "/models");
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.object).toBe("list");
    expect(Array.isArray(body.data)).toBe(true);
    expect(body.data.length).toBeGreaterThan(5);
    for (const m of body.data) {
      expect(Object.keys(m).sort()).toEqual(["created", "id", "object", "owned_by", "shutdown_date"]);
      expect(m.object).toBe("model");
      expect(typeof m.id).toBe("string");
      expect(Number.isInteger(m.created)).toBe(true);
      expect(typeof m.owned_by).toBe("string");
      expect(m.shutdown_date === null || /^\d{4}-\d{2}-\d{2}/.test(m.shutdown_date)).toBe(true);
    }
    expect(new Set(body.data.map((m: { id: string }) => m.id)).size).toBe(body.data.length);
  });

  it("the SDK lists (and auto-paginates) the same models", async () => {
    const raw = await (await api(s.baseURL, "/models")).json();
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(raw.data.map((m: { id: string }) => m.id));
    expect(ids).toContain("gpt-4o");
    expect(ids).toContain("text-embedding-3-small");
  });

  it("retrieve returns the model; a model with an announced shutdown carries its date", async () => {
    const m = await client.models.retrieve("gpt-4o");
    expect(m).toEqual({ id: "gpt-4o", object: "model", created: 1715367049, owned_by: "system", shutdown_date: null });
    const listed = (await client.models.list()).data.find((x) => x.id === "gpt-4o");
    expect(listed).toEqual(m);
    const withShutdown = (await client.models.list()).data.find((x) => (x as any).shutdown_date !== null);
    if (withShutdown) expect(await client.models.retrieve(withShutdown.id)).toEqual(withShutdown);
  });

  it("an unknown model is a 404 model_not_found", async () => {
    const e = await sdkError(client.models.retrieve("gpt-nonexistent"), 404);
    expect(e.code).toBe("model_not_found");
    await expectError(await api(s.baseURL, "/models/gpt-nonexistent"), 404, { code: "model_not_found" });
  });

  it("model ids with ':' and URL-escaped characters route correctly", async () => {
    await expectError(await api(s.baseURL, "/models/ft%3Agpt-4o-mini%3Anope%3Ax%3Ay"), 404, { code: "model_not_found" });
    await expectError(await api(s.baseURL, "/models/ft:gpt-4o-mini:nope:x:y"), 404, { code: "model_not_found" });
  });
});

describe("models: fine-tuned models and deletion", () => {
  const FT = "ft:gpt-4o-mini:org-default:x:abc";
  const FT_ADMIN = "ft:gpt-4o-mini:org-default:y:def";
  const FT_B = "ft:gpt-4o-mini:org-default:b:ghi";
  let created: number;

  beforeAll(async () => {
    created = await insertFineTuned(FT);
    await insertFineTuned(FT_ADMIN);
    await insertFineTuned(FT_B, "proj_b");
  });

  it("the project's fine-tuned models are listed and retrievable, only in their project", async () => {
    const ids = (await client.models.list()).data.map((m) => m.id);
    expect(ids).toContain(FT);
    expect(ids).toContain(FT_ADMIN);
    expect(ids).not.toContain(FT_B);
    expect(await client.models.retrieve(FT)).toEqual({ id: FT, object: "model", created, owned_by: "org-default", shutdown_date: null });
    const b = sdk(s.baseURL, KEYS.projectB);
    expect((await b.models.list()).data.map((m) => m.id)).toContain(FT_B);
    expect((await b.models.list()).data.map((m) => m.id)).not.toContain(FT);
    await sdkError(b.models.retrieve(FT), 404);
    await sdkError(client.models.retrieve(FT_B), 404);
  });

  it("deleting a built-in model is a 403, even for the owner and admin", async () => {
    for (const key of [KEYS.owner, ADMIN_KEY]) {
      const e = await sdkError(sdk(s.baseURL, key).models.delete("gpt-4o"), 403);
      expect(e.param).toBe("model");
    }
    expect((await client.models.retrieve("gpt-4o")).id).toBe("gpt-4o");
  });

  it("deleting an unknown model is a 404 model_not_found", async () => {
    const e = await sdkError(sdk(s.baseURL, KEYS.owner).models.delete("ft:gpt-4o-mini:org-default:none:zzz"), 404);
    expect(e.code).toBe("model_not_found");
  });

  it("a member or reader key cannot delete a fine-tuned model (403); it is still there", async () => {
    await sdkError(client.models.delete(FT), 403);
    await sdkError(sdk(s.baseURL, KEYS.reader).models.delete(FT), 403);
    await expectError(await api(s.baseURL, `/models/${FT}`, { method: "DELETE", key: API_KEY }), 403, { type: "invalid_request_error" });
    expect((await client.models.retrieve(FT)).id).toBe(FT);
  });

  it("another project's fine-tuned model is a 404 to the owner of this project", async () => {
    const e = await sdkError(sdk(s.baseURL, KEYS.owner).models.delete(FT_B), 404);
    expect(e.code).toBe("model_not_found");
    expect((await sdk(s.baseURL, KEYS.projectB).models.retrieve(FT_B)).id).toBe(FT_B);
  });

  it("the owner key deletes it: {id, object: model, deleted: true}; then it is gone", async () => {
    const res = await api(s.baseURL, `/models/${FT}`, { method: "DELETE", key: KEYS.owner });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ id: FT, object: "model", deleted: true });
    await sdkError(client.models.retrieve(FT), 404);
    expect((await client.models.list()).data.map((m) => m.id)).not.toContain(FT);
    const again = await sdkError(sdk(s.baseURL, KEYS.owner).models.delete(FT), 404);
    expect(again.code).toBe("model_not_found");
  });

  it("the admin key deletes it too (SDK)", async () => {
    const del = await sdk(s.baseURL, ADMIN_KEY).models.delete(FT_ADMIN);
    expect(del).toEqual({ id: FT_ADMIN, object: "model", deleted: true });
    await sdkError(client.models.retrieve(FT_ADMIN), 404);
  });

  it("the admin key selecting proj_b with the project header deletes that project's model", async () => {
    const admin = sdk(s.baseURL, ADMIN_KEY, { project: "proj_b" });
    expect(await admin.models.delete(FT_B)).toEqual({ id: FT_B, object: "model", deleted: true });
    await sdkError(sdk(s.baseURL, KEYS.projectB).models.retrieve(FT_B), 404);
  });
});

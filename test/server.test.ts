import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY, startTestServer, type TestServer } from "./shared/server.js";

describe("server smoke", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(async () => s?.stop());

  it("answers /healthz without auth and /v1/models with a key", async () => {
    expect(await (await fetch(`${s.url}/healthz`)).json()).toEqual({ status: "ok" });
    const r = await fetch(`${s.baseURL}/models/gpt-4o`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ id: "gpt-4o", object: "model", created: 1715367049, owned_by: "system", shutdown_date: null });
  });
});

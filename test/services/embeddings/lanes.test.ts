// The shared encoder's queue seen from the API: a maximum-size embeddings request (2,048 inputs)
// is served even though it takes longer than the provider's time limit in all (the limit is per
// unit of work), and while it holds the interactive lane, which this server bounds to one request
// (ATRIUM_ENCODER_INTERACTIVE_MAX_REQUESTS=1), other embeddings and moderation requests are
// refused at once: 503 in the platform's shape with retry-after, not a wait.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../shared/server.js";
import { api, expectError } from "../../shared/rest.js";

const MODEL = "atrium-embed-use-lite";
const ENV = "ATRIUM_ENCODER_INTERACTIVE_MAX_REQUESTS";

let s: TestServer;
let saved: string | undefined;

beforeAll(async () => {
  // The encoder reads its bounds from the process environment when the embeddings area starts.
  saved = process.env[ENV];
  process.env[ENV] = "1";
  s = await startTestServer({ config: { providers: { embeddings: { timeout_ms: 5000 }, moderation: { timeout_ms: 60_000 } } } });
  // The worker's first unit loads the model, which may take longer than 5 s on a busy machine;
  // the model stays loaded even when that unit is cut short.
  for (let i = 0; i < 5; i++) {
    const res = await api(s.baseURL, "/embeddings", { method: "POST", json: { model: MODEL, input: "warm up" } });
    await res.arrayBuffer();
    if (res.status === 200) break;
  }
});
afterAll(async () => {
  await s?.stop();
  if (saved === undefined) delete process.env[ENV];
  else process.env[ENV] = saved;
});

describe("embeddings: the encoder's bounded interactive lane", () => {
  it("serves 2,048 inputs past the 5 s limit while a second request is refused at once with 503 and retry-after", async () => {
    const inputs = Array.from({ length: 2048 }, (_, i) => `item ${i} of the catalogue`);
    let bigDone = false;
    const big = api(s.baseURL, "/embeddings", { method: "POST", json: { model: MODEL, input: inputs } }).finally(() => (bigDone = true));

    // Asked until the big request holds the lane (or it ended, which fails below).
    let refused: Response | undefined;
    while (!bigDone && !refused) {
      const res = await api(s.baseURL, "/embeddings", { method: "POST", json: { model: MODEL, input: "a small request" } });
      if (res.status === 503) refused = res;
      else {
        expect(res.status).toBe(200);
        await res.arrayBuffer();
      }
    }
    expect(refused, "a second request while 2,048 inputs are embedded").toBeDefined();
    expect(Number(refused!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(refused!.headers.get("retry-after-ms"))).toBeGreaterThanOrEqual(1000);
    await expectError(refused!, 503, { code: "engine_overloaded", type: "server_error", message: /busy/ });

    // A moderation needs the same encoder: refused the same way while the lane is full.
    if (!bigDone) {
      const mod = await api(s.baseURL, "/moderations", { method: "POST", json: { input: "hello there" } });
      if (!bigDone) {
        expect(mod.headers.get("retry-after")).not.toBeNull();
        await expectError(mod, 503, { code: "engine_overloaded" });
      }
    }

    const res = await big;
    const text = await res.text();
    expect(res.status, text.slice(0, 300)).toBe(200);
    const body = JSON.parse(text) as { data: Array<{ index: number; embedding: number[] }> };
    expect(body.data).toHaveLength(2048);
    expect(body.data[2047]!.index).toBe(2047);
    expect(body.data[2047]!.embedding).toHaveLength(512);
  }, 180_000);
});

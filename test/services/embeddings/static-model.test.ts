// The static embedding model (atrium-embed-static-use-lite) through the official SDK: listed in
// /v1/models as the server's own, served by /v1/embeddings with the platform's shapes, and
// refused with a clear 400 where the encoder would be (dimensions out of range).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { getEncoding } from "../../../src/engines/tokenizer/index.js";
import { StaticEmbedder, STATIC_EMBEDDING_MODEL as STATIC_MODEL_ID } from "../../../src/engines/embeddings/index.js";
import { MODEL_CACHE_DIR, startTestServer, type TestServer } from "../../shared/server.js";
import { api, expectError, sdk } from "../../shared/rest.js";

const MODEL = "atrium-embed-static-use-lite";
const PASSWORD = "How do I reset my password?";
const CHANGE = "Where can I change my password?";
const WEATHER = "The weather in Paris is sunny";

let s: TestServer;
let client: OpenAI;

beforeAll(async () => {
  await tableReady();
  s = await startTestServer();
  client = sdk(s.baseURL);
}, 300_000);
afterAll(async () => s?.stop());

/** The static model's table in the shared model cache (built there by the first test that needs it: tens of seconds). */
async function tableReady(): Promise<void> {
  const e = new StaticEmbedder({ cacheDir: MODEL_CACHE_DIR });
  try {
    await e.embed(["warm"], { model: STATIC_MODEL_ID });
  } finally {
    await e.close();
  }
}


const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let d = 0;
  for (let i = 0; i < a.length; i++) d += a[i]! * b[i]!;
  return d;
};

describe("the static embedding model", () => {
  it("is listed in /v1/models, owned by atrium, and retrievable by id", async () => {
    const ids = [];
    for await (const m of client.models.list()) ids.push(m);
    const listed = ids.find((m) => m.id === MODEL);
    expect(listed).toMatchObject({ id: MODEL, object: "model", owned_by: "atrium" });
    expect(ids.find((m) => m.id === "atrium-embed-use-lite")).toBeDefined();
    expect(await client.models.retrieve(MODEL)).toMatchObject({ id: MODEL, owned_by: "atrium" });
  });

  it("embeds an array in order: unit vectors of 512 floats, paraphrases closer than unrelated text, usage in cl100k_base", async () => {
    const res = await client.embeddings.create({ model: MODEL, input: [PASSWORD, CHANGE, WEATHER], encoding_format: "float" });
    expect(res.model).toBe(MODEL);
    expect(res.data.map((d) => d.index)).toEqual([0, 1, 2]);
    const [a, b, c] = res.data.map((d) => d.embedding);
    for (const v of [a!, b!, c!]) {
      expect(v).toHaveLength(512);
      expect(Math.sqrt(dot(v, v))).toBeCloseTo(1, 5);
    }
    // Averaged piece vectors share a common direction, so cosines run high; the order is what counts.
    expect(dot(a!, b!)).toBeGreaterThan(dot(a!, c!) + 0.1);
    const tokens = [PASSWORD, CHANGE, WEATHER].reduce((n, t) => n + getEncoding("cl100k_base").countTokens(t), 0);
    expect(res.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
  });

  it("gives the same vector for the same text in any batch, base64 equal to float, and shortened vectors renormalised", async () => {
    const alone = (await client.embeddings.create({ model: MODEL, input: WEATHER, encoding_format: "float" })).data[0]!.embedding;
    const batched = (await client.embeddings.create({ model: MODEL, input: [PASSWORD, WEATHER], encoding_format: "float" })).data[1]!.embedding;
    expect(batched).toEqual(alone);
    // The SDK decodes base64 into floats when no encoding_format is given.
    const decoded = (await client.embeddings.create({ model: MODEL, input: WEATHER })).data[0]!.embedding;
    // JSON floats are printed float32 values, base64 carries the float32 bits: equal to float32 precision.
    expect(decoded).toHaveLength(alone.length);
    expect(Math.max(...decoded.map((x, i) => Math.abs(x - alone[i]!)))).toBeLessThan(1e-7);
    const short = (await client.embeddings.create({ model: MODEL, input: WEATHER, dimensions: 64, encoding_format: "float" })).data[0]!.embedding;
    expect(short).toHaveLength(64);
    expect(Math.sqrt(dot(short, short))).toBeCloseTo(1, 5);
    const scale = Math.sqrt(dot(alone.slice(0, 64), alone.slice(0, 64)));
    expect(short[0]!).toBeCloseTo(alone[0]! / scale, 5);
  });

  it("refuses dimensions beyond 512, naming the field", async () => {
    await expectError(await api(s.baseURL, "/embeddings", { method: "POST", json: { model: MODEL, input: "x", dimensions: 513 } }), 400, { param: "dimensions" });
  });
});

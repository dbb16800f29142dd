// POST /v1/embeddings through the official SDK, raw HTTP and a Connect client: the local model
// (atrium-embed-use-lite), the platform's shapes (float and base64, dimensions, token-id inputs),
// every validation error, the platform's model names with and without an upstream provider.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { fromJson, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { EmbeddingsService } from "../../../gen/atrium/v1/embeddings_pb.js";
import { getEncoding } from "../../../src/engines/tokenizer/index.js";
import { API_KEY, startTestServer, tempDir, type TestServer } from "../../shared/server.js";
import { startFakeUpstream, type FakeUpstream, type UpstreamRequest } from "../../shared/fake-upstream.js";
import { api, expectError, sdk } from "../../shared/rest.js";
import { as, expectRpcError } from "../../shared/rpc.js";

const MODEL = "atrium-embed-use-lite";
const PASSWORD = "How do I reset my password?";
const CREDENTIALS = "I forgot my login credentials and need to change them";
const WEATHER = "The weather in Paris is sunny";

let s: TestServer;
let client: OpenAI;

beforeAll(async () => {
  s = await startTestServer();
  client = sdk(s.baseURL);
});
afterAll(async () => s?.stop());

const cl100k = () => getEncoding("cl100k_base");
const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let d = 0;
  for (let i = 0; i < a.length; i++) d += a[i]! * b[i]!;
  return d;
};
const norm = (a: ArrayLike<number>) => Math.sqrt(dot(a, a));
const post = (json: unknown) => api(s.baseURL, "/embeddings", { method: "POST", json });

describe("embeddings: the local model through the official SDK", () => {
  it("embeds a string: 512 floats of unit length, usage in cl100k_base tokens", async () => {
    const res = await client.embeddings.create({ model: MODEL, input: PASSWORD, encoding_format: "float" });
    expect(res.object).toBe("list");
    expect(res.model).toBe(MODEL);
    expect(res.data).toHaveLength(1);
    expect(res.data[0]!.object).toBe("embedding");
    expect(res.data[0]!.index).toBe(0);
    expect(res.data[0]!.embedding).toHaveLength(512);
    expect(norm(res.data[0]!.embedding)).toBeCloseTo(1, 5);
    const tokens = cl100k().countTokens(PASSWORD);
    expect(res.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
  });

  it("embeds an array in order; paraphrases are closer than unrelated sentences", async () => {
    const res = await client.embeddings.create({ model: MODEL, input: [PASSWORD, CREDENTIALS, WEATHER], encoding_format: "float" });
    expect(res.data.map((d) => d.index)).toEqual([0, 1, 2]);
    const [a, b, c] = res.data.map((d) => d.embedding);
    expect(dot(a!, b!)).toBeGreaterThan(dot(a!, c!) + 0.3);
    expect(dot(a!, b!)).toBeGreaterThan(dot(b!, c!) + 0.3);
    const tokens = [PASSWORD, CREDENTIALS, WEATHER].reduce((n, t) => n + cl100k().countTokens(t), 0);
    expect(res.usage.prompt_tokens).toBe(tokens);
  });

  it("the SDK's default (base64, decoded by the SDK) gives exactly the float vectors", async () => {
    const floats = await client.embeddings.create({ model: MODEL, input: [PASSWORD, WEATHER], encoding_format: "float" });
    const decoded = await client.embeddings.create({ model: MODEL, input: [PASSWORD, WEATHER] }); // asks for base64
    for (let i = 0; i < 2; i++) {
      const f = floats.data[i]!.embedding;
      const d = decoded.data[i]!.embedding;
      expect(d).toHaveLength(512);
      // The JSON numbers are the shortest decimals of the same float32 values.
      expect(f.map((x) => Math.fround(x))).toEqual(d);
    }
  });

  it("dimensions: the first N components, renormalised", async () => {
    const full = (await client.embeddings.create({ model: MODEL, input: CREDENTIALS, encoding_format: "float" })).data[0]!.embedding;
    const short = (await client.embeddings.create({ model: MODEL, input: CREDENTIALS, dimensions: 64, encoding_format: "float" })).data[0]!.embedding;
    expect(short).toHaveLength(64);
    expect(norm(short)).toBeCloseTo(1, 5);
    const head = full.slice(0, 64);
    const n = norm(head);
    head.forEach((x, i) => expect(short[i]).toBeCloseTo(x / n, 5));
    const viaBase64 = (await client.embeddings.create({ model: MODEL, input: CREDENTIALS, dimensions: 512 })).data[0]!.embedding;
    expect(viaBase64).toHaveLength(512);
  });

  it("token-id inputs (one array, or an array of arrays) embed their decoded text; usage counts the ids", async () => {
    const ids = [cl100k().encode(PASSWORD), cl100k().encode(WEATHER)];
    const text = await client.embeddings.create({ model: MODEL, input: [PASSWORD, WEATHER] });
    const many = await client.embeddings.create({ model: MODEL, input: ids });
    const one = await client.embeddings.create({ model: MODEL, input: ids[0]! });
    expect(many.data.map((d) => d.embedding)).toEqual(text.data.map((d) => d.embedding));
    expect(one.data[0]!.embedding).toEqual(text.data[0]!.embedding);
    expect(many.usage.prompt_tokens).toBe(ids[0]!.length + ids[1]!.length);
    expect(one.usage.prompt_tokens).toBe(ids[0]!.length);
  });

  it("the model is listed in /v1/models, owned by atrium", async () => {
    const ids: Array<{ id: string; owned_by: string }> = [];
    for await (const m of client.models.list()) ids.push(m);
    expect(ids.find((m) => m.id === MODEL)?.owned_by).toBe("atrium");
    const m = await client.models.retrieve(MODEL);
    expect(m).toMatchObject({ id: MODEL, object: "model", owned_by: "atrium" });
  });
});

describe("embeddings: the exact REST JSON", () => {
  it("float: {object, data: [{object, index, embedding: [numbers]}], model, usage}", async () => {
    const res = await post({ model: MODEL, input: ["a", "b"] });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(Object.keys(body).sort()).toEqual(["data", "model", "object", "usage"]);
    expect(Object.keys(body.usage).sort()).toEqual(["prompt_tokens", "total_tokens"]);
    for (const [i, d] of body.data.entries()) {
      expect(Object.keys(d).sort()).toEqual(["embedding", "index", "object"]);
      expect(d).toMatchObject({ object: "embedding", index: i });
      expect(d.embedding).toHaveLength(512);
      expect(d.embedding.every((x: unknown) => typeof x === "number")).toBe(true);
    }
  });

  it("base64: little-endian float32 bytes", async () => {
    const floats = (await (await post({ model: MODEL, input: "hello" })).json()).data[0].embedding as number[];
    const body = await (await post({ model: MODEL, input: "hello", encoding_format: "base64" })).json();
    expect(typeof body.data[0].embedding).toBe("string");
    const bytes = Buffer.from(body.data[0].embedding, "base64");
    expect(bytes.length).toBe(512 * 4);
    const decoded = Array.from({ length: 512 }, (_, i) => bytes.readFloatLE(i * 4));
    expect(decoded).toEqual(floats.map((x) => Math.fround(x)));
  });
});

describe("embeddings: validation (400 naming the field)", () => {
  const cases: Array<[string, unknown, number, string | null, string | null]> = [
    ["no input", { model: MODEL }, 400, "input", "missing_required_parameter"],
    ["no model", { input: "x" }, 400, "model", "missing_required_parameter"],
    ["empty string", { model: MODEL, input: "" }, 400, "input", "empty_string"],
    ["an empty string in an array", { model: MODEL, input: ["a", "b", ""] }, 400, "input[2]", "empty_string"],
    ["empty array", { model: MODEL, input: [] }, 400, "input", "empty_array"],
    ["empty token array in an array", { model: MODEL, input: [[1, 2], []] }, 400, "input[1]", "empty_array"],
    ["2049 inputs", { model: MODEL, input: Array.from({ length: 2049 }, () => "x") }, 400, "input", "array_above_max_length"],
    ["an input over 8192 tokens", { model: MODEL, input: ["ok", "hello ".repeat(9000)] }, 400, "input[1]", "context_length_exceeded"],
    ["a token array over 8192", { model: MODEL, input: Array.from({ length: 8193 }, () => 15339) }, 400, "input", "context_length_exceeded"],
    ["over 300,000 tokens in total", { model: MODEL, input: Array.from({ length: 40 }, () => "hello ".repeat(8000)) }, 400, "input", "max_tokens_per_request"],
    ["a number", { model: MODEL, input: 5 }, 400, "input", "invalid_type"],
    ["an object", { model: MODEL, input: { text: "x" } }, 400, "input", "invalid_type"],
    ["mixed array", { model: MODEL, input: ["a", 5] }, 400, "input[1]", "invalid_type"],
    ["a fractional token id", { model: MODEL, input: [1, 2.5] }, 400, "input[1]", "invalid_type"],
    ["an unknown token id", { model: MODEL, input: [[1, 2], [3, 999999]] }, 400, "input[1][1]", "invalid_value"],
    ["a negative token id", { model: MODEL, input: [-1] }, 400, "input[0]", "invalid_value"],
    ["dimensions 0", { model: MODEL, input: "x", dimensions: 0 }, 400, "dimensions", "invalid_value"],
    ["dimensions 513 for the local model", { model: MODEL, input: "x", dimensions: 513 }, 400, "dimensions", "invalid_value"],
    ["dimensions not an integer", { model: MODEL, input: "x", dimensions: 1.5 }, 400, "dimensions", "invalid_type"],
    ["encoding_format hex", { model: MODEL, input: "x", encoding_format: "hex" }, 400, "encoding_format", "invalid_value"],
    ["an unknown field", { model: MODEL, input: "x", foo: 1 }, 400, "foo", "unknown_parameter"],
    ["a chat model", { model: "gpt-4o", input: "x" }, 400, "model", "model_not_supported"],
    ["an unknown model", { model: "no-such-embedder", input: "x" }, 404, "model", "model_not_found"],
    ["a model named like an object property", { model: "constructor", input: "x" }, 404, "model", "model_not_found"],
    ["a model name of 256 characters is looked up", { model: "m".repeat(256), input: "x" }, 404, "model", "model_not_found"],
    ["a model name over 256 characters", { model: "m".repeat(257), input: "x" }, 400, "model", "string_above_max_length"],
    ["a user over 256 characters", { model: MODEL, input: "x", user: "u".repeat(257) }, 400, "user", "string_above_max_length"],
  ];
  for (const [name, body, status, param, code] of cases) {
    it(name, async () => {
      const e = await expectError(await post(body), status, { param, type: "invalid_request_error" });
      if (code !== "unknown_parameter") expect(e.code).toBe(code);
      if (param) expect(e.message).toContain(param);
    });
  }

  it("a user of 256 characters is accepted", async () => {
    expect((await post({ model: MODEL, input: "x", user: "u".repeat(256) })).status).toBe(200);
  });

  it("the SDK raises the same errors (BadRequestError with param)", async () => {
    const err = await client.embeddings.create({ model: MODEL, input: ["a", ""] }).catch((e) => e);
    expect(err.status).toBe(400);
    expect(err.param).toBe("input[1]");
  });
});

describe("embeddings: the platform's models", () => {
  for (const model of ["text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002"]) {
    it(`${model} without an upstream is a 400 naming providers.embeddings, never local vectors`, async () => {
      const e = await expectError(await post({ model, input: "hello" }), 400, { param: "model", code: "model_not_available" });
      expect(e.message).toContain("providers.embeddings");
    });
  }

  describe("with an upstream configured (a fake OpenAI-compatible service)", () => {
    let upstream: FakeUpstream;
    let seen: UpstreamRequest[] = [];
    let s2: TestServer;
    let client2: OpenAI;

    beforeAll(async () => {
      upstream = await startFakeUpstream(({ body }) => {
        if (body.input.includes("refuse me"))
          return { status: 400, json: { error: { message: "upstream says no", type: "invalid_request_error", param: "input", code: "upstream_no" } } };
        const dims = body.dimensions ?? 3;
        const data = body.input.map((t: string, index: number) => ({ object: "embedding", index, embedding: Array.from({ length: dims }, (_, j) => (t.length + j) / 8) }));
        return { json: { object: "list", data, model: body.model, usage: { prompt_tokens: 42, total_tokens: 42 } } };
      });
      seen = upstream.seen;
      const dir = tempDir();
      const config = join(dir, "atrium.json");
      writeFileSync(config, JSON.stringify({ providers: { embeddings: { base_url: upstream.baseUrl, api_key_env: "TEST_UPSTREAM_KEY" } } }));
      s2 = await startTestServer({ env: { ATRIUM_CONFIG: config, TEST_UPSTREAM_KEY: "sk-upstream" } });
      client2 = sdk(s2.baseURL);
    });
    afterAll(async () => {
      await s2?.stop();
      await upstream?.close();
    });

    it("forwards text-embedding-3-small with its dimensions; the SDK decodes the base64 answer", async () => {
      seen.length = 0;
      const res = await client2.embeddings.create({ model: "text-embedding-3-small", input: ["ab", "abcd"], dimensions: 2 });
      expect(seen).toHaveLength(1);
      expect(seen[0]!.url).toBe("/v1/embeddings");
      expect(seen[0]!.auth).toBe("Bearer sk-upstream");
      expect(seen[0]!.body).toMatchObject({ model: "text-embedding-3-small", input: ["ab", "abcd"], dimensions: 2 });
      expect(res.model).toBe("text-embedding-3-small");
      expect(res.data.map((d) => d.embedding)).toEqual([
        [0.25, 0.375],
        [0.5, 0.625],
      ]);
      expect(res.usage).toEqual({ prompt_tokens: 42, total_tokens: 42 });
    });

    it("the upstream's own 400 reaches the caller with its param", async () => {
      await expectError(await api(s2.baseURL, "/embeddings", { method: "POST", json: { model: "text-embedding-3-large", input: "refuse me" } }), 400, {
        param: "input",
        code: "upstream_no",
        message: /upstream says no/,
      });
    });

    it("checks dimensions before calling out: ada-002 takes none, 3-small at most 1536", async () => {
      seen.length = 0;
      await expectError(await api(s2.baseURL, "/embeddings", { method: "POST", json: { model: "text-embedding-ada-002", input: "x", dimensions: 8 } }), 400, {
        param: "dimensions",
      });
      await expectError(await api(s2.baseURL, "/embeddings", { method: "POST", json: { model: "text-embedding-3-small", input: "x", dimensions: 1537 } }), 400, {
        param: "dimensions",
      });
      expect(seen).toHaveLength(0);
    });

    it("the local model is still local", async () => {
      seen.length = 0;
      const res = await client2.embeddings.create({ model: MODEL, input: PASSWORD });
      expect(res.data[0]!.embedding).toHaveLength(512);
      expect(seen).toHaveLength(0);
    });
  });
});

describe("embeddings over Connect", () => {
  it("CreateEmbedding answers the same vectors as REST; errors carry the same param", async () => {
    const rpc = createClient(EmbeddingsService, createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" }));
    const res = await rpc.createEmbedding({ model: MODEL, input: fromJson(ValueSchema, [PASSWORD, WEATHER]) }, as(API_KEY));
    expect(res.object).toBe("list");
    expect(res.model).toBe(MODEL);
    expect(res.usage?.promptTokens).toBe(BigInt(cl100k().countTokens(PASSWORD) + cl100k().countTokens(WEATHER)));
    const rest = (await (await post({ model: MODEL, input: [PASSWORD, WEATHER] })).json()).data.map((d: { embedding: number[] }) => d.embedding);
    expect(res.data.map((d) => toJson(ValueSchema, d.embedding!))).toEqual(rest);

    const b64 = await rpc.createEmbedding({ model: MODEL, input: fromJson(ValueSchema, "x"), encodingFormat: "base64" }, as(API_KEY));
    expect(b64.data[0]!.embedding?.kind.case).toBe("stringValue");

    await expectRpcError(() => rpc.createEmbedding({ model: MODEL, input: fromJson(ValueSchema, ["a", ""]) }, as(API_KEY)), Code.InvalidArgument, {
      param: "input[1]",
      httpStatus: 400,
    });
  });
});

// The upstream providers against a tiny OpenAI-shaped node:http server on 127.0.0.1: the path,
// body and Authorization header they send, what they parse, how failures map to UpstreamError;
// and the registry's choice of implementation.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { ProvidersConfig, UpstreamProviderConfig } from "../../src/config.js";
import { ProviderUnavailable, Providers } from "../../src/providers/registry.js";
import type { EmbeddingsProvider } from "../../src/providers/types.js";
import {
  UpstreamClient,
  UpstreamEmbeddings,
  UpstreamError,
  UpstreamModeration,
  UpstreamResponses,
  UpstreamVideo,
} from "../../src/providers/upstream.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: any;
}

type Handler = (seen: Seen, res: ServerResponse) => void;

let server: Server;
let base: string;
let handler: Handler;
const seen: Seen[] = [];
const open: ServerResponse[] = [];

function json(res: ServerResponse, status: number, body: unknown) {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const s: Seen = { method: req.method!, url: req.url!, headers: req.headers, body: text ? JSON.parse(text) : undefined };
      seen.push(s);
      open.push(res);
      res.on("finish", () => {
        const i = open.indexOf(res);
        if (i >= 0) open.splice(i, 1);
      });
      handler(s, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
});

afterEach(() => {
  seen.length = 0;
  // Requests a test left hanging on purpose (only those: the client keeps the others alive).
  for (const res of open.splice(0)) res.destroy();
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function client(over: Partial<UpstreamProviderConfig> = {}) {
  return new UpstreamClient({ baseUrl: base, apiKey: "sk-upstream-key", timeoutMs: 5_000, ...over });
}

async function failure(p: Promise<unknown>): Promise<UpstreamError> {
  const e = await p.then(
    () => {
      throw new Error("expected the call to fail");
    },
    (e: unknown) => e,
  );
  expect(e).toBeInstanceOf(UpstreamError);
  return e as UpstreamError;
}

describe("UpstreamEmbeddings", () => {
  it("POSTs {base}/embeddings with input, model, dimensions, encoding_format and the bearer key", async () => {
    handler = (s, res) =>
      // Out of order on purpose: vectors come back in input order by `index`.
      json(res, 200, {
        object: "list",
        data: [
          { object: "embedding", index: 1, embedding: [0.5, 0.25] },
          { object: "embedding", index: 0, embedding: [1, -1] },
        ],
        model: "text-embedding-3-small",
        usage: { prompt_tokens: 7, total_tokens: 7 },
      });
    const provider = new UpstreamEmbeddings(client());
    const out = await provider.embed(["hello", "world"], { model: "text-embedding-3-small", dimensions: 2 });

    expect(seen).toHaveLength(1);
    expect(seen[0].method).toBe("POST");
    expect(seen[0].url).toBe("/v1/embeddings");
    expect(seen[0].headers.authorization).toBe("Bearer sk-upstream-key");
    expect(seen[0].headers["content-type"]).toBe("application/json");
    expect(seen[0].body).toEqual({ input: ["hello", "world"], model: "text-embedding-3-small", dimensions: 2, encoding_format: "float" });

    expect(out.model).toBe("text-embedding-3-small");
    expect(out.usage).toEqual({ promptTokens: 7, totalTokens: 7 });
    expect(out.vectors.map((v) => Array.from(v))).toEqual([
      [1, -1],
      [0.5, 0.25],
    ]);
    expect(provider.local).toBe(false);
    expect(provider.id).toBe(`upstream:${base}`);
  });

  it("asks for the configured dimensions when the caller does not; sends no Authorization without a key", async () => {
    handler = (s, res) => json(res, 200, { data: [{ index: 0, embedding: [0, 0, 0] }], model: "m", usage: { prompt_tokens: 1, total_tokens: 1 } });
    const provider = new UpstreamEmbeddings(client({ apiKey: undefined }), 3);
    expect(provider.dimensions).toBe(3);
    await provider.embed(["x"], { model: "m" });
    expect(seen[0].body.dimensions).toBe(3);
    expect(seen[0].headers.authorization).toBeUndefined();
  });

  it("reads base64 vectors too, and refuses an answer with the wrong number of vectors", async () => {
    const b64 = Buffer.from(new Float32Array([0.5, 2]).buffer).toString("base64");
    handler = (s, res) => json(res, 200, { data: [{ index: 0, embedding: b64 }], model: "m", usage: { prompt_tokens: 1, total_tokens: 1 } });
    const out = await new UpstreamEmbeddings(client()).embed(["x"], { model: "m" });
    expect(Array.from(out.vectors[0])).toEqual([0.5, 2]);

    const e = await failure(new UpstreamEmbeddings(client()).embed(["x", "y"], { model: "m" }));
    expect(e.status).toBe(502);
    expect(e.code).toBe("upstream_invalid_response");
  });
});

describe("UpstreamModeration", () => {
  it("POSTs {base}/moderations and returns the 2.9 shape", async () => {
    const result = {
      flagged: true,
      categories: { harassment: false, violence: true, illicit: null },
      category_scores: { harassment: 0.01, violence: 0.93, illicit: 0.0 },
      category_applied_input_types: { harassment: ["text"], violence: ["text", "image"], illicit: ["text"] },
    };
    handler = (s, res) => json(res, 200, { id: "modr-1", model: "omni-moderation-2024-09-26", results: [result] });
    const input = [{ type: "text" as const, text: "hit" }, { type: "image_url" as const, image_url: { url: "data:image/png;base64,AAAA" } }];
    const out = await new UpstreamModeration(client()).moderate(input, { model: "omni-moderation-latest" });
    expect(seen[0].url).toBe("/v1/moderations");
    expect(seen[0].headers.authorization).toBe("Bearer sk-upstream-key");
    expect(seen[0].body).toEqual({ input, model: "omni-moderation-latest" });
    expect(out).toEqual({ id: "modr-1", model: "omni-moderation-2024-09-26", results: [result] });
  });
});

describe("UpstreamResponses", () => {
  it("POSTs {base}/responses and {base}/chat/completions and returns the upstream JSON", async () => {
    handler = (s, res) =>
      s.url === "/v1/responses"
        ? json(res, 200, { id: "resp_1", object: "response", status: "completed", output: [] })
        : json(res, 200, { id: "chatcmpl-1", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", content: "4" } }] });
    const provider = new UpstreamResponses(client());
    const body = { model: "gpt-x", input: "2+2?" };
    expect(await provider.createResponse(body)).toEqual({ id: "resp_1", object: "response", status: "completed", output: [] });
    expect(seen[0]).toMatchObject({ method: "POST", url: "/v1/responses", body });
    const chat = { model: "gpt-x", messages: [{ role: "user", content: "2+2?" }] };
    expect((await provider.createChatCompletion(chat)).object).toBe("chat.completion");
    expect(seen[1]).toMatchObject({ method: "POST", url: "/v1/chat/completions", body: chat });
    expect(seen[1].headers.authorization).toBe("Bearer sk-upstream-key");
    await expect(provider.createResponse({ ...body, stream: true })).rejects.toThrow(/does not stream/);
  });
});

describe("UpstreamVideo", () => {
  it("creates, reads and downloads a render", async () => {
    handler = (s, res) => {
      if (s.method === "POST" && s.url === "/v1/videos") return json(res, 200, { id: "video_1", object: "video", status: "queued", progress: 0, error: null });
      if (s.url === "/v1/videos/video_1") return json(res, 200, { id: "video_1", object: "video", status: "completed", progress: 100, error: null });
      if (s.url === "/v1/videos/video_1/content?variant=thumbnail") return res.writeHead(200, { "content-type": "image/webp" }).end(Buffer.from([1, 2, 3]));
      json(res, 404, { error: { message: "no", type: "invalid_request_error", param: null, code: null } });
    };
    const video = new UpstreamVideo(client());
    const req = { prompt: "a cat", model: "vid-2", seconds: "4", size: "720x1280" };
    expect(await video.createRender(req)).toEqual({ id: "video_1", status: "queued", progress: 0, error: null });
    expect(seen[0].body).toEqual(req);
    expect((await video.getRender("video_1")).status).toBe("completed");
    const stream = await video.downloadRender("video_1", "thumbnail");
    expect(Buffer.from(await new Response(stream).arrayBuffer())).toEqual(Buffer.from([1, 2, 3]));
    expect((await failure(video.getRender("video_2"))).status).toBe(404);
  });
});

describe("UpstreamClient failures", () => {
  it("maps the platform's error body to UpstreamError with the same fields", async () => {
    handler = (s, res) => json(res, 400, { error: { message: "bad", type: "invalid_request_error", param: "input", code: "x" } });
    const e = await failure(new UpstreamEmbeddings(client()).embed(["x"], { model: "m" }));
    expect(e).toMatchObject({ status: 400, message: "bad", type: "invalid_request_error", param: "input", code: "x" });
  });

  it("quotes a body that is not the platform's error briefly, with the status", async () => {
    handler = (s, res) => res.writeHead(503, { "content-type": "text/plain" }).end("overloaded " + "z".repeat(1000));
    const e = await failure(new UpstreamModeration(client()).moderate("hi", { model: "m" }));
    expect(e.status).toBe(503);
    expect(e.code).toBeNull();
    expect(e.message).toMatch(/^upstream POST http:\/\/127\.0\.0\.1:\d+\/v1\/moderations answered 503: overloaded z+\.\.\.$/);
    expect(e.message.length).toBeLessThan(300);
  });

  it("a 2xx that is not JSON is a 502", async () => {
    handler = (s, res) => res.writeHead(200, { "content-type": "text/html" }).end("<html>proxy login</html>");
    const e = await failure(new UpstreamResponses(client()).createResponse({ model: "m", input: "x" }));
    expect(e).toMatchObject({ status: 502, code: "upstream_invalid_response" });
  });

  it("times out with a 504 when the upstream does not answer in time", async () => {
    handler = () => {}; // never answers
    const started = Date.now();
    const e = await failure(new UpstreamEmbeddings(client({ timeoutMs: 200 })).embed(["x"], { model: "m" }));
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(e.status).toBe(504);
    expect(e.code).toBe("upstream_timeout");
    expect(e.message).toMatch(/did not answer within 200 ms/);
  });

  it("also times out while the body is still coming", async () => {
    handler = (s, res) => res.writeHead(200, { "content-type": "application/json" }).write('{"data": [');
    const e = await failure(new UpstreamEmbeddings(client({ timeoutMs: 200 })).embed(["x"], { model: "m" }));
    expect(e.status).toBe(504);
  });

  it("the caller's abort is the caller's error, not an UpstreamError", async () => {
    handler = () => {};
    const ac = new AbortController();
    const call = new UpstreamEmbeddings(client()).embed(["x"], { model: "m", signal: ac.signal });
    setTimeout(() => ac.abort(new Error("client went away")), 50);
    await expect(call).rejects.toThrow("client went away");
  });

  it("reports a refused connection clearly, as a 502", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const e = await failure(new UpstreamEmbeddings(client({ baseUrl: `http://127.0.0.1:${port}/v1` })).embed(["x"], { model: "m" }));
    expect(e.status).toBe(502);
    expect(e.code).toBe("upstream_unreachable");
    expect(e.message).toBe(`upstream POST http://127.0.0.1:${port}/v1/embeddings failed: cannot reach the upstream (ECONNREFUSED)`);
  });
});

describe("Providers registry", () => {
  const local = { kind: "local" as const, timeoutMs: 60_000 };
  const allLocal: ProvidersConfig = { embeddings: local, moderation: local, video: local, fineTuning: local };
  const fakeLocalEmbeddings: EmbeddingsProvider = {
    id: "atrium-embed-use-lite",
    local: true,
    dimensions: 512,
    embed: async (inputs) => ({ vectors: inputs.map(() => new Float32Array(512)), model: "atrium-embed-use-lite", usage: { promptTokens: 0, totalTokens: 0 } }),
  };

  it("local capabilities come from the engine that registered them, created once on first use", () => {
    const providers = new Providers(allLocal);
    let made = 0;
    providers.registerLocal("embeddings", (c) => {
      made++;
      expect(c).toEqual(local);
      return fakeLocalEmbeddings;
    });
    expect(made).toBe(0);
    expect(providers.has("embeddings")).toBe(true);
    expect(providers.embeddings()).toBe(fakeLocalEmbeddings);
    expect(providers.embeddings()).toBe(fakeLocalEmbeddings);
    expect(made).toBe(1);
    expect(() => providers.registerLocal("embeddings", () => fakeLocalEmbeddings)).toThrow(/already registered/);
  });

  it("local() is the in-process engine whatever the configured kind, one instance shared with get()", () => {
    const asLocal = new Providers(allLocal);
    asLocal.registerLocal("embeddings", () => fakeLocalEmbeddings);
    expect(asLocal.local("embeddings")).toBe(asLocal.embeddings());
    const asUpstream = new Providers({ ...allLocal, embeddings: { kind: "upstream", baseUrl: "http://127.0.0.1:9", timeoutMs: 1_000, dimensions: 2 } });
    let made = 0;
    asUpstream.registerLocal("embeddings", () => (made++, fakeLocalEmbeddings));
    expect(asUpstream.local("embeddings")).toBe(fakeLocalEmbeddings);
    expect(asUpstream.local("embeddings")).toBe(fakeLocalEmbeddings);
    expect(made).toBe(1);
    expect(asUpstream.embeddings()).not.toBe(fakeLocalEmbeddings);
    expect(() => new Providers(allLocal).local("moderation")).toThrow(ProviderUnavailable);
  });

  it("nothing local and no upstream: ProviderUnavailable telling what to configure", () => {
    const providers = new Providers(allLocal);
    expect(providers.has("moderation")).toBe(false);
    expect(() => providers.moderation()).toThrow(ProviderUnavailable);
    expect(() => providers.moderation()).toThrow(/^No moderation provider is configured: .*providers\.moderation\.base_url/);
    expect(() => providers.responses()).toThrow(/^No model \(responses\) provider is configured: .*providers\.responses\.base_url/);
    try {
      providers.trainer();
    } catch (e) {
      expect((e as ProviderUnavailable).capability).toBe("fineTuning");
    }
  });

  it("kind upstream gets the OpenAI-compatible client, wired to the configured endpoint", async () => {
    const upstream = { kind: "upstream" as const, baseUrl: base, apiKey: "sk-from-env", timeoutMs: 5_000 };
    const providers = new Providers({ ...allLocal, embeddings: { ...upstream, dimensions: 2 }, responses: upstream, fineTuning: upstream });
    providers.registerLocal("embeddings", () => fakeLocalEmbeddings); // ignored: the config chose upstream
    const embeddings = providers.embeddings();
    expect(embeddings).toBeInstanceOf(UpstreamEmbeddings);
    expect(embeddings.dimensions).toBe(2);
    expect(providers.responses()).toBeInstanceOf(UpstreamResponses);

    handler = (s, res) => json(res, 200, { data: [{ index: 0, embedding: [1, 2] }], model: "m", usage: { prompt_tokens: 1, total_tokens: 1 } });
    await embeddings.embed(["x"], { model: "m" });
    expect(seen[0].headers.authorization).toBe("Bearer sk-from-env");
    expect(seen[0].body.dimensions).toBe(2);

    // No built-in upstream trainer: said so, rather than pretending.
    expect(() => providers.trainer()).toThrow(/providers\.fine_tuning names an upstream/);
  });
});

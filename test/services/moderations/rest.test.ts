// POST /v1/moderations through the official SDK, raw HTTP, Connect and gRPC: every input shape,
// every model, the image rules, the exact response shape of spec 2.9, bad inputs as 400s naming
// the field, and the upstream provider (a second Atrium configured with the first as upstream).
// Test images are made here with the ffmpeg binary of @ffmpeg-installer/ffmpeg (no downloads).
import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type OpenAI from "openai";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ModerationsService } from "../../../gen/atrium/v1/moderations_pb.js";
import { CATEGORIES } from "../../../src/engines/moderation/categories.js";
import { API_KEY, startTestServer, tempDir, type TestServer } from "../../shared/server.js";
import { api, expectError, sdk, sdkError } from "../../shared/rest.js";
import { as, expectRpcError } from "../../shared/rpc.js";
import { FFMPEG } from "../../shared/media.js";

// Models load on first use (the text bank, nsfwjs): on a busy shared machine that takes a while.
vi.setConfig({ testTimeout: 180_000, hookTimeout: 600_000 });

const slowSdk = (baseURL: string) => sdk(baseURL, API_KEY, { timeout: 170_000 });

/** ffmpeg's test pattern as a small image file. */
function testImage(codec: "png" | "mjpeg" | "gif" | "libwebp", size = "96x64"): Buffer {
  const pixFmt = { png: ["-pix_fmt", "rgb24"], mjpeg: ["-pix_fmt", "yuvj420p"], gif: ["-pix_fmt", "pal8"], libwebp: [] }[codec];
  return execFileSync(FFMPEG, ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", `testsrc=size=${size}`, "-frames:v", "1", ...pixFmt, "-c:v", codec, "-f", "image2pipe", "pipe:1"]);
}

const dataUrl = (bytes: Buffer, mime: string) => `data:${mime};base64,${bytes.toString("base64")}`;
const PNG = testImage("png");
const PNG_URL = dataUrl(PNG, "image/png");

const SPLIT_TEXT_ONLY = ["harassment", "harassment/threatening", "hate", "hate/threatening", "illicit", "illicit/violent", "sexual/minors"];
const MODELS = ["omni-moderation-latest", "omni-moderation-2024-09-26", "text-moderation-latest", "text-moderation-stable"] as const;

/** The first request after a start prepares the text classifier (embeds the bank): a long wait, once. */
async function warmUp(s: TestServer): Promise<void> {
  // On a busy machine a first request may outlast its time limit (503); the preparation goes on.
  for (let attempt = 0; ; attempt++) {
    const res = await api(s.baseURL, "/moderations", { method: "POST", json: { input: "warm up" } });
    if (res.status === 200) return;
    expect(res.status).toBe(503);
    if (attempt === 4) throw new Error("the text classifier did not get ready");
  }
}

/** The exact shape of one result of spec 2.9. */
function expectResultShape(r: Record<string, unknown>) {
  expect(Object.keys(r).sort()).toEqual(["categories", "category_applied_input_types", "category_scores", "flagged"]);
  expect(typeof r.flagged).toBe("boolean");
  for (const key of ["categories", "category_scores", "category_applied_input_types"]) expect(Object.keys(r[key] as object), key).toEqual([...CATEGORIES]);
  const categories = r.categories as Record<string, boolean | null>;
  const scores = r.category_scores as Record<string, number>;
  const applied = r.category_applied_input_types as Record<string, string[]>;
  for (const c of CATEGORIES) {
    if (c === "illicit" || c === "illicit/violent") expect(categories[c] === null || typeof categories[c] === "boolean").toBe(true);
    else expect(typeof categories[c], c).toBe("boolean");
    expect(scores[c]).toBeGreaterThanOrEqual(0);
    expect(scores[c]).toBeLessThanOrEqual(1);
    expect(Array.isArray(applied[c])).toBe(true);
    for (const t of applied[c]!) expect(["text", "image"]).toContain(t);
    if (SPLIT_TEXT_ONLY.includes(c)) expect(applied[c], c).not.toContain("image");
  }
  expect(r.flagged).toBe(Object.values(categories).some((v) => v === true));
}

let s: TestServer;
let client: OpenAI;
let images: Server; // serves test images over HTTP for URL inputs
let imagesBase: string;
let lan: TestServer; // ATRIUM_FETCH_ALLOW_PRIVATE, to fetch from the local image server

beforeAll(async () => {
  images = createServer((req, res) => {
    if (req.url === "/pattern.png") return res.writeHead(200, { "content-type": "image/png" }).end(PNG);
    if (req.url === "/pattern.jpg") return res.writeHead(200, { "content-type": "image/jpeg" }).end(testImage("mjpeg"));
    if (req.url === "/huge.png") return res.writeHead(200, { "content-type": "image/png", "content-length": String(64 * 1024 * 1024) }).end();
    if (req.url === "/slow.png") return; // never answers
    res.writeHead(404).end();
  });
  await new Promise<void>((r) => images.listen(0, "127.0.0.1", r));
  imagesBase = `http://127.0.0.1:${(images.address() as { port: number }).port}`;
  s = await startTestServer();
  lan = await startTestServer({ env: { ATRIUM_FETCH_ALLOW_PRIVATE: "true", ATRIUM_FETCH_TIMEOUT_MS: "1500" } });
  client = slowSdk(s.baseURL);
  await warmUp(s);
}, 600_000);

afterAll(async () => {
  await s?.stop();
  await lan?.stop();
  images?.closeAllConnections();
  images?.close();
});

describe("moderations: input shapes through the official SDK", () => {
  it("a string: one result in the exact spec 2.9 shape; a threat is flagged", async () => {
    const raw = await api(s.baseURL, "/moderations", { method: "POST", json: { input: "I'm going to find you and break every bone in your body" } });
    expect(raw.status).toBe(200);
    const body = (await raw.json()) as { id: string; model: string; results: Array<Record<string, unknown>> };
    expect(Object.keys(body).sort()).toEqual(["id", "model", "results"]);
    expect(body.id).toMatch(/^modr-[A-Za-z0-9]{24}$/);
    expect(body.model).toBe("omni-moderation-latest");
    expect(body.results).toHaveLength(1);
    expectResultShape(body.results[0]!);
    const r = body.results[0] as { flagged: boolean; categories: Record<string, boolean>; category_applied_input_types: Record<string, string[]> };
    expect(r.flagged).toBe(true);
    expect(r.categories["harassment/threatening"]).toBe(true);
    for (const c of CATEGORIES) expect(r.category_applied_input_types[c], c).toEqual(["text"]);

    const viaSdk = await client.moderations.create({ input: "I'm going to find you and break every bone in your body" });
    expect(viaSdk.results[0]!.categories["harassment/threatening"]).toBe(true);
  });

  it("an array of strings: one result per string, in order", async () => {
    const inputs = ["How do I kill a stuck process on Linux?", "I want to end my life tonight, I have the pills ready", "Let's grab lunch at noon", "Immigrants are filthy animals and should all be thrown out of this country"];
    const res = await client.moderations.create({ input: inputs });
    expect(res.results).toHaveLength(4);
    for (const r of res.results) expectResultShape(r as never);
    expect(res.results[0]!.flagged).toBe(false);
    expect(res.results[1]!.categories["self-harm/intent"]).toBe(true);
    expect(res.results[2]!.flagged).toBe(false);
    expect(res.results[3]!.flagged).toBe(true);
  });

  it("benign look-alikes are not flagged", async () => {
    const inputs = ["We're going to shoot the photos at sunset", "That comedian killed it last night", "If you are thinking about suicide, please call a crisis line", "Police said one person was injured in the crash"];
    const res = await client.moderations.create({ input: inputs });
    expect(res.results.map((r) => r.flagged)).toEqual([false, false, false, false]);
  });

  it("a parts array (text + image data URL): one result; sexual applies to text and image, text-only categories to text", async () => {
    const res = await client.moderations.create({
      input: [
        { type: "text", text: "Here is a picture of my test pattern" },
        { type: "image_url", image_url: { url: PNG_URL } },
      ],
    });
    expect(res.results).toHaveLength(1);
    const r = res.results[0]!;
    expectResultShape(r as never);
    expect(r.flagged).toBe(false);
    expect(r.category_applied_input_types.sexual).toEqual(["text", "image"]);
    for (const c of SPLIT_TEXT_ONLY) expect(r.category_applied_input_types[c as "hate"], c).toEqual(["text"]);
    // Scored from the accompanying text only (the local image model informs `sexual` alone).
    expect(r.category_applied_input_types.violence).toEqual(["text"]);
  });

  it("an image alone: text-only categories apply to nothing and are never flagged", async () => {
    const res = await client.moderations.create({ input: [{ type: "image_url", image_url: { url: PNG_URL } }] });
    const r = res.results[0]!;
    expectResultShape(r as never);
    expect(r.category_applied_input_types.sexual).toEqual(["image"]);
    for (const c of SPLIT_TEXT_ONLY) {
      expect(r.category_applied_input_types[c as "hate"], c).toEqual([]);
      expect(r.categories[c as "hate"], c).toBe(false);
    }
    expect(r.categories["sexual/minors"]).toBe(false);
  });

  it("JPEG, GIF and WebP data URLs; http(s) URLs through the fetcher (here: a server allowed to reach 127.0.0.1)", async () => {
    for (const [codec, mime] of [["mjpeg", "image/jpeg"], ["gif", "image/gif"], ["libwebp", "image/webp"]] as const) {
      const res = await client.moderations.create({ input: [{ type: "image_url", image_url: { url: dataUrl(testImage(codec), mime) } }] });
      expect(res.results[0]!.category_applied_input_types.sexual, codec).toEqual(["image"]);
    }
    const viaUrl = await slowSdk(lan.baseURL).moderations.create({
      input: [
        { type: "image_url", image_url: { url: `${imagesBase}/pattern.png` } },
        { type: "image_url", image_url: { url: `${imagesBase}/pattern.jpg` } },
      ],
    });
    expect(viaUrl.results).toHaveLength(1);
    expect(viaUrl.results[0]!.category_applied_input_types.sexual).toEqual(["image"]);
  }, 120_000);
});

describe("moderations: models", () => {
  for (const model of MODELS) {
    it(`${model}: answers under its name`, async () => {
      const res = await client.moderations.create({ model, input: "You are a worthless idiot and everyone hates you" });
      expect(res.model).toBe(model);
      expectResultShape(res.results[0] as never);
      expect(res.results[0]!.categories.harassment).toBe(true);
      const illicit = res.results[0]!.categories.illicit as boolean | null;
      if (model.startsWith("text-")) {
        expect(illicit).toBeNull();
        expect(res.results[0]!.category_applied_input_types.illicit).toEqual([]);
      } else expect(typeof illicit).toBe("boolean");
    });
  }

  for (const model of ["text-moderation-latest", "text-moderation-stable"] as const)
    it(`${model} refuses image parts with a 400 naming the part`, async () => {
      const err = await sdkError(client.moderations.create({ model, input: [{ type: "text", text: "hi" }, { type: "image_url", image_url: { url: PNG_URL } }] }), 400);
      expect(err.param).toBe("input[1].type");
      expect(err.code).toBe("image_not_supported");
    });

  it("a model that does not moderate is a 400, an unknown one a 404", async () => {
    await expectError(await api(s.baseURL, "/moderations", { method: "POST", json: { input: "x", model: "gpt-4o" } }), 400, { param: "model", code: "model_not_supported" });
    await expectError(await api(s.baseURL, "/moderations", { method: "POST", json: { input: "x", model: "no-such-model" } }), 404, { param: "model", code: "model_not_found" });
    // A name over 256 characters is refused before any lookup.
    await expectError(await api(s.baseURL, "/moderations", { method: "POST", json: { input: "x", model: "m".repeat(257) } }), 400, { param: "model", code: "string_above_max_length", message: /maximum length 256\b/ });
    await expectError(await api(s.baseURL, "/moderations", { method: "POST", json: { input: "x", model: "m".repeat(256) } }), 404, { param: "model", code: "model_not_found" });
  });
});

describe("moderations: bad inputs are 400s naming the field", () => {
  const post = (json: unknown, server = s) => api(server.baseURL, "/moderations", { method: "POST", json });
  const image = (url: string) => ({ type: "image_url", image_url: { url } });

  it("shape errors", async () => {
    await expectError(await post({}), 400, { param: "input", code: "missing_required_parameter" });
    await expectError(await post({ input: [] }), 400, { param: "input", code: "empty_array" });
    await expectError(await post({ input: 7 }), 400, { param: "input", code: "invalid_type" });
    await expectError(await post({ input: ["ok", { type: "text", text: "x" }] }), 400, { param: "input[1]", code: "invalid_type" });
    await expectError(await post({ input: [{ type: "input_audio", input_audio: {} }] }), 400, { param: "input[0].type", code: "invalid_value", message: /input\[0\]\.type/ });
    await expectError(await post({ input: [{ type: "text" }] }), 400, { param: "input[0].text", code: "missing_required_parameter" });
    await expectError(await post({ input: [{ type: "image_url", image_url: "https://example.com/a.png" }] }), 400, { param: "input[0].image_url", code: "invalid_type" });
    await expectError(await post({ input: "x", extra: 1 }), 400, { param: "extra" });
  });

  it("image URLs: unsupported scheme or type, private address, unreachable, too slow", async () => {
    await expectError(await post({ input: [image("file:///etc/passwd")] }), 400, { param: "input[0].image_url.url", code: "invalid_image_url" });
    await expectError(await post({ input: [image("data:image/svg+xml;base64,PHN2Zz4=")] }), 400, { param: "input[0].image_url.url", code: "invalid_image_format" });
    // The default server never fetches loopback, private or link-local (cloud metadata) addresses.
    for (const url of [`${imagesBase}/pattern.png`, "http://169.254.169.254/latest/meta-data/", "http://10.0.0.1/a.png"])
      await expectError(await post({ input: [{ type: "text", text: "see" }, image(url)] }), 400, { param: "input[1].image_url.url", code: "invalid_image_url", message: /private or reserved/ });
    await expectError(await post({ input: [image("http://127.0.0.1:1/a.png")] }, lan), 400, { param: "input[0].image_url.url", code: "invalid_image_url" });
    await expectError(await post({ input: [image(`${imagesBase}/missing.png`)] }, lan), 400, { param: "input[0].image_url.url", message: /HTTP 404/ });
    await expectError(await post({ input: [image(`${imagesBase}/slow.png`)] }, lan), 400, { param: "input[0].image_url.url", message: /timed out/ });
  });

  it("oversize: text, images (bytes and pixels), too many inputs", async () => {
    await expectError(await post({ input: ["a", "x".repeat(40_000)] }), 400, { param: "input[1]", code: "string_above_max_length" });
    await expectError(await post({ input: Array.from({ length: 300 }, () => "a") }), 400, { param: "input", code: "array_above_max_length" });
    await expectError(await post({ input: [image(`${imagesBase}/huge.png`)] }, lan), 400, { param: "input[0].image_url.url", code: "image_too_large" });
    const big = `data:image/png;base64,${"A".repeat(28 * 1024 * 1024)}`;
    await expectError(await post({ input: [image(big)] }), 400, { param: "input[0].image_url.url", code: "image_too_large" });
    // A small file whose header claims 20000 × 20000 pixels.
    const header = Buffer.from(PNG);
    header.writeUInt32BE(20_000, 16);
    header.writeUInt32BE(20_000, 20);
    await expectError(await post({ input: [image(dataUrl(header, "image/png"))] }), 400, { param: "input[0].image_url.url", code: "image_too_large" });
  });

  it("images that are not what they claim, or cannot be decoded", async () => {
    await expectError(await post({ input: [image(dataUrl(Buffer.from("not an image at all"), "image/png"))] }), 400, { param: "input[0].image_url.url", code: "invalid_image_format" });
    const broken = Buffer.from(PNG);
    broken.fill(0, 45, 80);
    await expectError(await post({ input: [image(dataUrl(broken, "image/png"))] }), 400, { param: "input[0].image_url.url", code: "invalid_image" });
  });
});

describe("moderations over Connect and gRPC", () => {
  const transports: Array<[string, () => Transport]> = [
    ["Connect", () => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" })],
    ["gRPC", () => createGrpcTransport({ baseUrl: s.url })],
  ];
  for (const [name, make] of transports) {
    it(`${name}: the same classification, maps keyed by the platform's category names`, async () => {
      const c = createClient(ModerationsService, make());
      const res = await c.createModeration({ input: fromJson(ValueSchema, ["I will stab you tonight", "Nice weather today"]) }, as(API_KEY));
      expect(res.id).toMatch(/^modr-/);
      expect(res.model).toBe("omni-moderation-latest");
      expect(res.results).toHaveLength(2);
      const [threat, weather] = res.results;
      expect(Object.keys(threat!.categoryScores).sort()).toEqual([...CATEGORIES].sort());
      expect(threat!.flagged).toBe(true);
      expect(threat!.categories["harassment/threatening"]?.kind).toEqual({ case: "boolValue", value: true });
      expect(threat!.categoryAppliedInputTypes.violence?.values.map((v) => v.kind.value)).toEqual(["text"]);
      expect(weather!.flagged).toBe(false);
    });

    it(`${name}: bad input is InvalidArgument with the field in ErrorInfo`, async () => {
      const c = createClient(ModerationsService, make());
      await expectRpcError(() => c.createModeration({ input: fromJson(ValueSchema, []) }, as(API_KEY)), Code.InvalidArgument, { param: "input", code: "empty_array", httpStatus: 400 });
      await expectRpcError(() => c.createModeration({ input: fromJson(ValueSchema, [{ type: "video" }]) }, as(API_KEY)), Code.InvalidArgument, {
        param: "input[0].type",
        httpStatus: 400,
      });
    });
  }
});

describe("moderations: the event loop stays free", () => {
  it("a large request in flight does not hold up other requests", async () => {
    const big = Array.from({ length: 200 }, (_, i) => `Sentence number ${i}: the committee met again to discuss the budget and the schedule for next year.`);
    const pending = client.moderations.create({ input: big });
    await new Promise((r) => setTimeout(r, 50));
    const started = performance.now();
    const models = await api(s.baseURL, "/models");
    const took = performance.now() - started;
    expect(models.status).toBe(200);
    expect(took).toBeLessThan(500);
    expect((await pending).results).toHaveLength(200);
  }, 120_000);
});

describe("moderations: upstream provider (a second Atrium with the first as its upstream)", () => {
  let u: TestServer;
  let bad: TestServer;

  beforeAll(async () => {
    const dir = tempDir();
    const config = (key: string) => {
      const path = join(dir, `${key}.json`);
      writeFileSync(path, JSON.stringify({ providers: { moderation: { base_url: s.baseURL, api_key_env: key } } }));
      return path;
    };
    u = await startTestServer({ env: { ATRIUM_CONFIG: config("UPSTREAM_KEY"), UPSTREAM_KEY: API_KEY } });
    bad = await startTestServer({ env: { ATRIUM_CONFIG: config("WRONG_KEY"), WRONG_KEY: "sk-not-a-valid-key" } });
  }, 120_000);
  afterAll(async () => {
    await u?.stop();
    await bad?.stop();
  });

  it("forwards every shape and model; the answer is the upstream's", async () => {
    const input = ["I will hurt you badly", "Lovely garden"];
    const direct = await client.moderations.create({ input });
    const forwarded = await slowSdk(u.baseURL).moderations.create({ input });
    expect(forwarded.results.map((r) => r.category_scores)).toEqual(direct.results.map((r) => r.category_scores));
    expect(forwarded.id).toMatch(/^modr-/);
    const text = await slowSdk(u.baseURL).moderations.create({ model: "text-moderation-stable", input: "hello" });
    expect(text.model).toBe("text-moderation-stable");
    expect(text.results[0]!.categories.illicit).toBeNull();
    const parts = await slowSdk(u.baseURL).moderations.create({ input: [{ type: "text", text: "look" }, { type: "image_url", image_url: { url: PNG_URL } }] });
    expect(parts.results[0]!.category_applied_input_types.sexual).toEqual(["text", "image"]);
  }, 60_000);

  it("bad input is refused before forwarding; the upstream's own 400 comes back with its param", async () => {
    await expectError(await api(u.baseURL, "/moderations", { method: "POST", json: { input: [] } }), 400, { param: "input", code: "empty_array" });
    // The upstream refuses to fetch a private address: its 400 names the field.
    await expectError(await api(u.baseURL, "/moderations", { method: "POST", json: { input: [{ type: "image_url", image_url: { url: `${imagesBase}/pattern.png` } }] } }), 400, {
      param: "input[0].image_url.url",
      code: "invalid_image_url",
    });
  });

  it("the upstream refusing this server's key is a 502, not the caller's 401", async () => {
    await expectError(await api(bad.baseURL, "/moderations", { method: "POST", json: { input: "hello" } }), 502, { code: "upstream_auth_failed" });
  });
});

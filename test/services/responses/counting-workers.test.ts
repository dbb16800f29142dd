// Large token counts run on counting workers (src/services/responses/workers.ts). The workers must
// count exactly what this thread counts (a long text split in parts across them included), reach
// the project's Files through the host, map errors the same way, and leave the event loop free
// while they count.
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { getEncoding, InputTokensError } from "../../../src/engines/tokenizer/index.js";
import { countBody, LONG_TEXT_CHARS, type CountingLookups } from "../../../src/services/responses/counting.js";
import { CountingWorkers, countingPlace, OFF_THREAD_TEXT_BYTES } from "../../../src/services/responses/workers.js";
import type { FetchPolicy } from "../../../src/common/fetch-url.js";
import { API_KEY, startTestServer, type TestServer } from "../../shared/server.js";
import { api, sdk, toFile } from "../../shared/rest.js";
import { COOKBOOK_MESSAGES, dataUrl, pdf, png } from "../../fixtures/token-inputs.js";

const scope = { projectId: "proj_default" };
const policy: FetchPolicy = { timeoutMs: 5_000, maxBytes: 50 * 1024 * 1024, allowPrivate: false };
const doc = pdf([{ w: 612, h: 792, text: "A page of a document that a worker counts." }]);

const lookups: CountingLookups = {
  hasFineTunedModel: async () => false,
  async readFile(_scope, fileId) {
    if (fileId === "file-doc") return { bytes: doc, filename: "doc.pdf" };
    throw new InputTokensError(404, "", `No such File object: ${fileId}`, "file_not_found");
  },
};

// Prose with every kind of piece the encodings split on: words, numbers, punctuation, unicode, code.
function prose(bytes: number, seed = 1): string {
  const words = ["the", "platform", "counts", "tokens", "naïve", "café", "1234", "😀", "function(x) {", "return x;", "}", "—", "日本語", "\n\n", "   ", "don't", "HTTP/1.1"];
  let s = "";
  let r = seed;
  while (s.length < bytes) {
    r = (r * 1103515245 + 12345) & 0x7fffffff;
    s += words[r % words.length] + " ";
  }
  return s;
}

const bodies: Array<[string, Record<string, unknown>]> = [
  ["a large string input on gpt-4o", { model: "gpt-4o", input: prose(200_000) }],
  ["a large string input on gpt-4 (cl100k)", { model: "gpt-4", input: prose(150_000, 7) }],
  ["messages with instructions, a tool and an image", {
    model: "gpt-4o",
    instructions: prose(70_000, 3),
    input: [...COOKBOOK_MESSAGES, { role: "user", content: [{ type: "input_text", text: prose(10_000, 5) }, { type: "input_image", image_url: dataUrl(png(512, 512)), detail: "high" }] }],
    tools: [{ type: "function", name: "lookup", description: "Looks things up.", parameters: { type: "object", properties: { q: { type: "string" } } } }],
  }],
  ["an uploaded PDF read through the host", { model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_text", text: prose(80_000, 9) }, { type: "input_file", file_id: "file-doc" }] }] }],
];

describe("CountingWorkers: the same counts and errors as this thread", () => {
  let workers: CountingWorkers;
  beforeAll(() => {
    workers = new CountingWorkers(lookups, 1);
  });
  afterAll(() => workers.close());

  it.each(bodies)("%s", async (_name, body) => {
    expect(countingPlace(body)).toBe("worker");
    const here = await countBody(body, scope, lookups, policy);
    expect(here).toBeGreaterThan(1000);
    expect(await workers.count({ body, scope, policy })).toBe(here);
  });

  it("a counting error raised on the worker comes back as the same InputTokensError", async () => {
    const body = { model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_text", text: prose(70_000) }, { type: "input_file", file_id: "file-missing" }] }] };
    const here = await countBody(body, scope, lookups, policy).catch((e) => e);
    const there = await workers.count({ body, scope, policy }).catch((e) => e);
    expect(here).toBeInstanceOf(InputTokensError);
    expect(there).toBeInstanceOf(InputTokensError);
    expect({ status: there.status, param: there.param, message: there.message, code: there.code }).toEqual({ status: here.status, param: here.param, message: here.message, code: here.code });
    expect(there.param).toBe("input[0].content[1].file_id");
  });

  it("the event loop turns while a worker counts; counted here, it would not", async () => {
    const body = { model: "gpt-4o", input: prose(2_000_000, 13) };
    const order = async (work: () => Promise<number>) => {
      const seen: string[] = [];
      setImmediate(() => seen.push("turn"));
      await work().then(() => seen.push("counted"));
      await new Promise((r) => setImmediate(r));
      return seen;
    };
    expect(await order(() => workers.count({ body, scope, policy }))).toEqual(["turn", "counted"]);
    expect(await order(() => countBody(body, scope, lookups, policy))).toEqual(["counted", "turn"]);
  });

  it("countingPlace: under 64 KiB of strings here; long texts and little else in parts; anything else large on a worker", () => {
    const long = prose(LONG_TEXT_CHARS + 10, 5);
    expect(countingPlace({ model: "gpt-4o", input: "x".repeat(100) })).toBe("here");
    expect(countingPlace({ a: 1, b: null, c: true })).toBe("here");
    expect(countingPlace({ input: ["x".repeat(OFF_THREAD_TEXT_BYTES / 2), { b: "y".repeat(OFF_THREAD_TEXT_BYTES / 2) }] })).toBe("worker");
    expect(countingPlace({ model: "gpt-4o", input: [{ role: "user", content: long }], instructions: "short" })).toBe("long-texts");
    expect(countingPlace({ model: "gpt-4o", instructions: long, input: "hello" })).toBe("long-texts");
    // Much text besides the long one.
    expect(countingPlace({ input: [long, ...Array.from({ length: 100 }, () => "y".repeat(1000))] })).toBe("worker");
    // Payloads that are decoded, not counted, and texts with nowhere to cut.
    const image = dataUrl(png(64, 64)).replace(",", "," + "A".repeat(LONG_TEXT_CHARS));
    expect(countingPlace({ model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_image", image_url: image }] }] })).toBe("worker");
    expect(countingPlace({ model: "gpt-4o", input: "x".repeat(LONG_TEXT_CHARS) })).toBe("worker");
    // A long text outside input and instructions (a tool's description) is counted where the engine walks: with the whole body.
    expect(countingPlace({ model: "gpt-4o", input: "hi", tools: [{ type: "function", name: "f", description: long, parameters: {} }] })).toBe("worker");
  });
});

describe("CountingWorkers.countText: a long text in parts on every worker at once", () => {
  let workers: CountingWorkers;
  beforeAll(() => {
    workers = new CountingWorkers(lookups, 3);
  });
  afterAll(() => workers.close());

  it.each([["o200k_base", 1_000_000, 21], ["cl100k_base", 600_000, 22]] as const)("%s, %i characters: the parts add up to the count on this thread", async (encoding, chars, seed) => {
    const text = prose(chars, seed);
    const sent = vi.spyOn(workers, "count");
    try {
      expect(await workers.countText(encoding, text)).toBe(getEncoding(encoding).countTokens(text));
      const parts = sent.mock.calls.map(([task]) => ("text" in task ? task.text : ""));
      expect(parts.length).toBe(3);
      expect(parts.join("")).toBe(text);
    } finally {
      sent.mockRestore();
    }
  });

  it("a text with nowhere to cut is counted whole on one worker", async () => {
    const text = "x".repeat(LONG_TEXT_CHARS * 2);
    expect(await workers.countText("o200k_base", text)).toBe(getEncoding("o200k_base").countTokens(text));
  });
});

describe("POST /v1/responses/input_tokens with large bodies", () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startTestServer();
  });
  afterAll(() => s.stop());

  const count = async (body: unknown) => {
    const r = await api(s.baseURL, "/responses/input_tokens", { method: "POST", json: body });
    return { status: r.status, body: (await r.json()) as any };
  };

  it("a large body counts the same as in the engine on this thread, uploaded Files included", async () => {
    const client = sdk(s.baseURL, API_KEY);
    const f = await client.files.create({ file: await toFile(Buffer.from(doc), "doc.pdf"), purpose: "user_data" });
    const body = { model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_text", text: prose(100_000, 11) }, { type: "input_file", file_id: f.id }] }] };
    const expected = await countBody(body, scope, { readFile: async () => ({ bytes: doc, filename: "doc.pdf" }) }, policy);
    expect(await count(body)).toEqual({ status: 200, body: { object: "response.input_tokens", input_tokens: expected } });
  });

  it("a bad field in a large body is still a 400 naming it", async () => {
    const r = await count({ model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_text", text: prose(100_000) }, { type: "input_image", image_url: "data:image/png;base64,AAAA" }] }] });
    expect(r.status).toBe(400);
    expect(r.body.error.param).toBe("input[0].content[1].image_url");
  });

  it("large bodies go to the counting worker, small ones stay on this thread", async () => {
    const sent = vi.spyOn(CountingWorkers.prototype, "count");
    try {
      expect((await count({ model: "gpt-4o", input: "hello" })).status).toBe(200);
      expect(sent).not.toHaveBeenCalled();
      expect((await count({ model: "gpt-4o", input: prose(OFF_THREAD_TEXT_BYTES + 10) })).status).toBe(200);
      expect(sent).toHaveBeenCalledTimes(1);
      expect(sent.mock.calls[0]![0]).toHaveProperty("body");
    } finally {
      sent.mockRestore();
    }
  });

  it("a long input is counted in parts on the workers, the rest of the body here: the same count", async () => {
    const parts = vi.spyOn(CountingWorkers.prototype, "countText");
    const whole = vi.spyOn(CountingWorkers.prototype, "count");
    try {
      const body = { model: "gpt-4o", instructions: "Be brief.", input: [...COOKBOOK_MESSAGES, { role: "user", content: prose(LONG_TEXT_CHARS * 3, 17) }] };
      const expected = await countBody(body, scope, lookups, policy);
      expect(await count(body)).toEqual({ status: 200, body: { object: "response.input_tokens", input_tokens: expected } });
      expect(parts).toHaveBeenCalledTimes(1);
      expect(whole.mock.calls.every(([task]) => "text" in task)).toBe(true);
    } finally {
      parts.mockRestore();
      whole.mockRestore();
    }
  });
});

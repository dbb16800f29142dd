/**
 * countInputTokens (src/engines/tokenizer/input-tokens.ts) against the published worked examples,
 * plus the documented extensions and the typed errors for bad input.
 */
import { describe, expect, it } from "vitest";
import { imageSize } from "image-size";
import {
  countInputTokens,
  getEncoding,
  imageTokens,
  InputTokensError,
  patchCount,
  resolveModel,
  tileCount,
  UnknownModelError,
  type InputTokensDeps,
} from "../../../src/engines/tokenizer/index.js";
import { inspectImage, MediaFormatError } from "../../../src/engines/media/image.js";
import { inspectPdf } from "../../../src/engines/media/pdf.js";
import { bytes, dataUrl, gif, jpeg, pdf, png, webpVp8, webpVp8l, webpVp8x, COOKBOOK_MESSAGES, WEATHER_FUNCTION, WEATHER_MESSAGES } from "../../fixtures/token-inputs.js";

// ---------- fixtures (test/fixtures/token-inputs.ts) ----------

const files = new Map<string, { bytes: Uint8Array; filename: string }>();
const urls = new Map<string, Uint8Array>();
const deps: InputTokensDeps = {
  async fetchImage(url) {
    const b = urls.get(url);
    if (!b) throw new Error(`HTTP 404 for ${url}`);
    return b;
  },
  async readFile(id) {
    const f = files.get(id);
    if (!f) throw Object.assign(new Error(`No such file: ${id}`), { status: 404, code: "file_not_found" });
    return f;
  },
};

const count = async (body: unknown, d: InputTokensDeps = deps) => (await countInputTokens(body, d)).input_tokens;

async function failure(body: unknown, d: InputTokensDeps = deps): Promise<InputTokensError> {
  try {
    await countInputTokens(body, d);
  } catch (e) {
    expect(e).toBeInstanceOf(InputTokensError);
    return e as InputTokensError;
  }
  throw new Error(`expected an error for ${JSON.stringify(body).slice(0, 200)}`);
}

const o200k = getEncoding("o200k_base");
const cl100k = getEncoding("cl100k_base");

// ---------- published worked examples ----------

describe("cookbook: counting tokens for chat messages", () => {
  // OpenAI cookbook, "How to count tokens with tiktoken", section 6 (examples/How_to_count_tokens_with_tiktoken.ipynb):
  // the example conversation is 129 prompt tokens for gpt-3.5-turbo / gpt-4-0613 / gpt-4 and 124 for gpt-4o / gpt-4o-mini,
  // "counted by num_tokens_from_messages()" and "counted by the OpenAI API".
  const example_messages = COOKBOOK_MESSAGES;

  it.each([
    ["gpt-3.5-turbo", 129],
    ["gpt-4-0613", 129],
    ["gpt-4", 129],
    ["gpt-4o", 124],
    ["gpt-4o-mini", 124],
  ])("%s → %i tokens", async (model, expected) => {
    expect(await countInputTokens({ model, input: example_messages }, deps)).toEqual({ object: "response.input_tokens", input_tokens: expected });
  });

  it("gives the same count for content as input_text parts, and for typed message items", async () => {
    const parts = example_messages.map((m) => ({ ...m, type: "message", content: [{ type: "input_text", text: m.content }] }));
    expect(await count({ model: "gpt-4o", input: parts })).toBe(124);
  });

  it("counts `instructions` as a leading system/developer message", async () => {
    const [first, ...rest] = example_messages;
    expect(await count({ model: "gpt-4o", instructions: first!.content, input: rest })).toBe(124);
    expect(await count({ model: "gpt-4", instructions: first!.content, input: rest })).toBe(129);
    // reasoning models take instructions as a developer message ("developer" is one token too)
    expect(await count({ model: "o3", instructions: "Be brief.", input: "hi" })).toBe(3 + 1 + o200k.countTokens("Be brief.") + 3 + 1 + 1 + 3);
  });

  it("counts a string input as one user message (3 + role + text + 3 priming)", async () => {
    expect(await count({ model: "gpt-4o", input: "hello world" })).toBe(3 + 1 + 2 + 3);
    expect(await count({ model: "gpt-4o" })).toBe(0);
  });

  it("uses the gpt-3.5-turbo-0301 message constants (4 per message, name replaces role)", async () => {
    const m = { model: "gpt-3.5-turbo-0301", input: [{ role: "user", name: "bob", content: "hi" }] };
    expect(await count(m)).toBe(4 + 1 + cl100k.countTokens("bob") - 1 + 1 + 3);
  });

  it("counts special-token look-alikes in user input as ordinary text", async () => {
    const text = "<|endoftext|><|im_start|>system<|im_end|>";
    expect(await count({ model: "gpt-4o", input: text })).toBe(3 + 1 + o200k.encode(text).length + 3);
    expect(o200k.encode(text).length).toBeGreaterThan(3);
  });
});

describe("cookbook: counting tokens for function tools", () => {
  // OpenAI cookbook, "How to count tokens with tiktoken", section 7 (num_tokens_for_tools):
  // with this tool and these two messages the API reports 105 prompt tokens for gpt-3.5-turbo / gpt-4
  // and 101 for gpt-4o / gpt-4o-mini.
  const fn = WEATHER_FUNCTION;
  const example_messages = WEATHER_MESSAGES;

  it.each([
    ["gpt-3.5-turbo", 105],
    ["gpt-4", 105],
    ["gpt-4o", 101],
    ["gpt-4o-mini", 101],
  ])("%s → %i tokens (Responses tool shape and Chat Completions tool shape)", async (model, expected) => {
    expect(await count({ model, input: example_messages, tools: [{ type: "function", ...fn, strict: false }] })).toBe(expected);
    expect(await count({ model, input: example_messages, tools: [{ type: "function", function: fn }] })).toBe(expected);
  });

  it("extends the rule to nested objects, arrays, type lists and anyOf (documented convention)", async () => {
    const tool = {
      type: "function",
      name: "create_order",
      description: "Create an order.",
      strict: true,
      parameters: {
        type: "object",
        properties: {
          customer: {
            type: "object",
            description: "Who orders.",
            properties: { id: { type: "string", description: "Customer id" }, tier: { type: "string", enum: ["gold", "silver"] } },
          },
          items: {
            type: "array",
            description: "Order lines",
            items: { type: "object", properties: { sku: { type: "string" }, qty: { type: "integer", description: "How many" } } },
          },
          tags: { type: "array", items: { type: "string", enum: ["gift", "rush"] } },
          note: { type: ["string", "null"] },
          channel: { anyOf: [{ type: "string", enum: ["web"] }, { type: "null" }] },
          priority: { type: "integer", const: 1 },
        },
        required: ["customer", "items"],
        additionalProperties: false,
      },
    };
    const n = (s: string) => o200k.countTokens(s);
    const c = { funcInit: 7, propInit: 3, propKey: 3, enumInit: -3, enumItem: 3, funcEnd: 12 };
    const enumOf = (items: string[]) => c.enumInit + items.reduce((t, i) => t + c.enumItem + n(i), 0);
    const expected =
      c.funcInit + n("create_order:Create an order") + c.propInit +
      (c.propKey + n("customer:object:Who orders") + c.propInit + (c.propKey + n("id:string:Customer id")) + (c.propKey + n("tier:string:") + enumOf(["gold", "silver"]))) +
      (c.propKey + n("items:array:Order lines") + c.propInit + (c.propKey + n("sku:string:")) + (c.propKey + n("qty:integer:How many"))) +
      (c.propKey + n("tags:array:") + enumOf(["gift", "rush"])) +
      (c.propKey + n("note:string | null:")) +
      (c.propKey + n("channel:string | null:") + enumOf(["web"])) +
      (c.propKey + n("priority:integer:") + enumOf(["1"])) +
      c.funcEnd;
    expect(await count({ model: "gpt-4o", tools: [tool] })).toBe(expected);
  });

  it("adds func_end once for several functions and counts a function without parameters", async () => {
    const a = { type: "function", name: "a", description: "First." };
    const b = { type: "function", name: "b", parameters: { type: "object", properties: {} } };
    expect(await count({ model: "gpt-4o", tools: [a, b] })).toBe(7 + o200k.countTokens("a:First") + 7 + o200k.countTokens("b:") + 12);
    expect(await count({ model: "gpt-4o", tools: [] })).toBe(0);
  });
});

describe("vision guide: image tokens", () => {
  // OpenAI vision guide, "Calculating costs": "A 1024 x 1024 square image in detail: high mode costs 765 tokens";
  // "A 2048 x 4096 image in detail: high mode costs 1105 tokens"; "A 4096 x 8192 image in detail: low most costs 85 tokens".
  const gpt4o = resolveModel("gpt-4o").image;
  it("tile models: 765, 1105, 85", () => {
    expect(imageTokens(gpt4o, 1024, 1024, "high")).toBe(765);
    expect(imageTokens(gpt4o, 2048, 4096, "high")).toBe(1105);
    expect(imageTokens(gpt4o, 4096, 8192, "low")).toBe(85);
    expect(imageTokens(gpt4o, 1024, 1024, "auto")).toBe(765);
    expect(tileCount(500, 500)).toBe(1);
    expect(tileCount(513, 500)).toBe(2);
  });
  it("per-family base/tile constants (platform-facts.md)", () => {
    expect(imageTokens(resolveModel("gpt-4o-mini").image, 1024, 1024, "high")).toBe(2833 + 4 * 5667);
    expect(imageTokens(resolveModel("gpt-4o-mini").image, 1024, 1024, "low")).toBe(2833);
    expect(imageTokens(resolveModel("gpt-5").image, 1024, 1024, "high")).toBe(70 + 4 * 140);
    expect(imageTokens(resolveModel("o1").image, 1024, 1024, "high")).toBe(75 + 4 * 150);
    expect(imageTokens(resolveModel("gpt-4.1").image, 2048, 4096, "high")).toBe(1105);
  });
  it("patch models: 1024×1024 → 1024 patches, 1800×2400 → 1452 patches, times the multiplier", () => {
    // vision guide, patch-based models: "A 1024 x 1024 image is 1024 tokens"; "A 1800 x 2400 image ... 1452 tokens" (before the multiplier)
    expect(patchCount(1024, 1024)).toBe(1024);
    expect(patchCount(1800, 2400)).toBe(1452);
    expect(patchCount(100000, 100000)).toBeLessThanOrEqual(1536);
    expect(imageTokens(resolveModel("gpt-4.1-mini").image, 1024, 1024, "low")).toBe(Math.ceil(1024 * 1.62));
    expect(imageTokens(resolveModel("gpt-4.1-nano").image, 1800, 2400)).toBe(Math.ceil(1452 * 2.46));
    expect(imageTokens(resolveModel("o4-mini").image, 1024, 1024)).toBe(Math.ceil(1024 * 1.72));
    expect(imageTokens(resolveModel("gpt-5-mini").image, 64, 32)).toBe(Math.ceil(2 * 1.62));
  });

  it("reads PNG, JPEG, GIF and WebP headers (as image-size does)", () => {
    const cases: [Uint8Array, string, number, number][] = [
      [png(1024, 768), "png", 1024, 768],
      [jpeg(2048, 4096), "jpeg", 2048, 4096],
      [gif(320, 200), "gif", 320, 200],
      [webpVp8x(4096, 8192), "webp", 4096, 8192],
      [webpVp8l(300, 150), "webp", 300, 150],
      [webpVp8(640, 480), "webp", 640, 480],
    ];
    for (const [b, format, width, height] of cases) {
      expect(inspectImage(b)).toEqual({ format, width, height });
      const other = imageSize(b);
      expect([other.width, other.height]).toEqual([width, height]);
    }
    expect(() => inspectImage(png(1024, 768).subarray(0, 20))).toThrow(MediaFormatError);
    expect(() => inspectImage(bytes("BM", [0, 0, 0, 0]))).toThrow(/unsupported image format/);
    expect(() => inspectImage(bytes([0xff, 0xd8, 0xff, 0xda, 0, 2]))).toThrow(/SOF/);
  });

  it("counts input_image parts from data URLs, http URLs and file ids", async () => {
    urls.set("https://img.example/a.jpg", jpeg(2048, 4096));
    files.set("file-img1", { bytes: webpVp8x(4096, 8192), filename: "big.webp" });
    const frame = 3 + 1 + 3; // user message + priming
    const msg = (...content: unknown[]) => ({ model: "gpt-4o", input: [{ role: "user", content }] });
    expect(await count(msg({ type: "input_image", image_url: dataUrl(png(1024, 1024)), detail: "high" }))).toBe(frame + 765);
    expect(await count(msg({ type: "input_image", image_url: "https://img.example/a.jpg" }))).toBe(frame + 1105);
    expect(await count(msg({ type: "input_image", file_id: "file-img1", detail: "low" }))).toBe(frame + 85);
    expect(await count(msg({ type: "input_text", text: "What is this?" }, { type: "input_image", image_url: { url: dataUrl(gif(100, 100)), detail: "auto" } }))).toBe(
      frame + o200k.countTokens("What is this?") + 85 + 170,
    );
  });
});

describe("PDF files (extracted text + one image per page)", () => {
  const doc = pdf([
    { w: 612, h: 792, text: "Hello world from page one." },
    { w: 842, h: 595, text: "Second page text." },
  ]);

  it("reads page sizes from the MediaBox and the text of each page", async () => {
    const info = await inspectPdf(doc);
    expect(info.pages).toEqual([
      { width: 612, height: 792, text: "Hello world from page one." },
      { width: 842, height: 595, text: "Second page text." },
    ]);
    const rotated = await inspectPdf(pdf([{ w: 612, h: 792, text: "x", rotate: 90 }]));
    expect(rotated.pages[0]).toMatchObject({ width: 792, height: 612 });
  });

  it("counts file_data, file_id and file_url the same way (72 dpi page images at high detail)", async () => {
    files.set("file-pdf1", { bytes: doc, filename: "doc.pdf" });
    urls.set("https://files.example/doc.pdf", doc);
    // 612×792 → 2×2 tiles; 842×595 → 2×2 tiles: 765 each on gpt-4o
    const expected = 3 + 1 + 3 + o200k.countTokens("Hello world from page one.") + o200k.countTokens("Second page text.") + 765 + 765;
    const msg = (part: unknown) => ({ model: "gpt-4o", input: [{ role: "user", content: [part] }] });
    expect(await count(msg({ type: "input_file", filename: "doc.pdf", file_data: dataUrl(doc, "application/pdf") }))).toBe(expected);
    expect(await count(msg({ type: "input_file", file_data: Buffer.from(doc).toString("base64") }))).toBe(expected);
    expect(await count(msg({ type: "input_file", file_id: "file-pdf1" }))).toBe(expected);
    expect(await count(msg({ type: "input_file", file_url: "https://files.example/doc.pdf" }))).toBe(expected);
  });
});

describe("other input items (documented conventions)", () => {
  it("counts function calls and their outputs", async () => {
    const input = [
      { role: "user", content: "Weather in Paris?" },
      { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Paris"}' },
      { type: "function_call_output", call_id: "call_1", output: '{"temp":21}' },
    ];
    const n = (s: string) => o200k.countTokens(s);
    const expected = 3 + 1 + n("Weather in Paris?") + (3 + 1 + n("get_weather") + n('{"city":"Paris"}')) + (3 + 1 + n('{"temp":21}')) + 3;
    expect(await count({ model: "gpt-4o", input })).toBe(expected);
  });

  it("counts reasoning summaries, not encrypted content", async () => {
    const input = [{ type: "reasoning", id: "rs_1", summary: [{ type: "summary_text", text: "Thought about it." }], encrypted_content: "gAAAA" }];
    expect(await count({ model: "o3", input })).toBe(o200k.countTokens("Thought about it.") + 3);
  });

  it("resolves previous_response_id, conversation and item_reference through deps", async () => {
    const d: InputTokensDeps = {
      ...deps,
      resolvePreviousResponse: async () => ({ model: "gpt-4o", items: [{ role: "user", content: "hello world" }] }),
      resolveConversation: async () => [{ role: "assistant", content: [{ type: "output_text", text: "hello world" }] }],
      resolveItemReference: async () => ({ role: "user", content: "hello world" }),
    };
    const one = 3 + 1 + 2;
    expect(await count({ previous_response_id: "resp_1", input: "hello world" }, d)).toBe(one + one + 3);
    expect(await count({ model: "gpt-4o", conversation: { id: "conv_1" }, input: "hello world" }, d)).toBe(one + one + 3);
    expect(await count({ model: "gpt-4o", input: [{ type: "item_reference", id: "msg_1" }] }, d)).toBe(one + 3);
  });

  it("accepts and ignores the steering fields, counts a json_schema text format", async () => {
    const base = { model: "gpt-4o", input: "hi", tool_choice: "auto", parallel_tool_calls: true, truncation: "disabled", reasoning: { effort: "low" }, temperature: 0.2, store: false };
    const plain = await count(base);
    expect(plain).toBe(3 + 1 + 1 + 3);
    const schema = { type: "object", properties: { answer: { type: "string" } } };
    expect(await count({ ...base, text: { format: { type: "json_schema", name: "reply", schema } } })).toBe(plain + o200k.countTokens("reply") + o200k.countTokens(JSON.stringify(schema)));
    expect(await count({ ...base, text: { format: { type: "text" } } })).toBe(plain);
  });
});

describe("bad input: typed errors naming the field", () => {
  const user = (content: unknown) => ({ model: "gpt-4o", input: [{ role: "user", content }] });

  it.each<[string, unknown, number, string, string | undefined]>([
    ["non-object body", [], 400, "", "invalid_type"],
    ["missing model", { input: "hi" }, 400, "model", "missing_required_parameter"],
    ["model not a string", { model: 4, input: "hi" }, 400, "model", "invalid_type"],
    ["unknown model", { model: "gpt-17", input: "hi" }, 404, "model", "model_not_found"],
    ["unknown fine-tune base", { model: "ft:nope:org:x:y", input: "hi" }, 404, "model", "model_not_found"],
    ["input of a wrong type", { model: "gpt-4o", input: 42 }, 400, "input", "invalid_type"],
    ["item not an object", { model: "gpt-4o", input: ["hi", 3] }, 400, "input[0]", "invalid_type"],
    ["message without role", { model: "gpt-4o", input: [{ content: "x" }] }, 400, "input[0].role", "missing_required_parameter"],
    ["bad role", { model: "gpt-4o", input: [{ role: "robot", content: "x" }] }, 400, "input[0].role", "invalid_value"],
    ["message without content", { model: "gpt-4o", input: [{ role: "user" }] }, 400, "input[0].content", "missing_required_parameter"],
    ["content part without text", user([{ type: "input_text" }]), 400, "input[0].content[0].text", "missing_required_parameter"],
    ["unknown content part", user([{ type: "input_text", text: "a" }, { type: "input_audio", data: "" }]), 400, "input[0].content[1].type", "unsupported_value"],
    ["unsupported item type", { model: "gpt-4o", input: [{ role: "user", content: "a" }, { role: "user", content: "b" }, { type: "web_search_call", id: "ws_1" }] }, 400, "input[2].type", "unsupported_value"],
    ["unknown item type", { model: "gpt-4o", input: [{ type: "telepathy" }] }, 400, "input[0].type", "invalid_value"],
    ["function_call without arguments", { model: "gpt-4o", input: [{ type: "function_call", call_id: "c", name: "f" }] }, 400, "input[0].arguments", "missing_required_parameter"],
    ["item_reference without a resolver", { model: "gpt-4o", input: [{ type: "item_reference", id: "msg_1" }] }, 400, "input[0].type", "unsupported_value"],
    ["previous_response_id without a resolver", { model: "gpt-4o", previous_response_id: "resp_1" }, 400, "previous_response_id", "unsupported_parameter"],
    ["conversation without a resolver", { model: "gpt-4o", conversation: "conv_1" }, 400, "conversation", "unsupported_parameter"],
    ["instructions not a string", { model: "gpt-4o", instructions: 1 }, 400, "instructions", "invalid_type"],
    ["tools not an array", { model: "gpt-4o", tools: {} }, 400, "tools", "invalid_type"],
    ["function tool without name", { model: "gpt-4o", tools: [{ type: "function", description: "x" }] }, 400, "tools[0].name", "missing_required_parameter"],
    ["hosted tool", { model: "gpt-4o", tools: [{ type: "function", name: "f" }, { type: "web_search" }] }, 400, "tools[1].type", "unsupported_value"],
    ["property schema not an object", { model: "gpt-4o", tools: [{ type: "function", name: "f", parameters: { type: "object", properties: { a: "string" } } }] }, 400, "tools[0].parameters.properties.a", "invalid_type"],
    ["enum not an array", { model: "gpt-4o", tools: [{ type: "function", name: "f", parameters: { type: "object", properties: { a: { type: "string", enum: "x" } } } }] }, 400, "tools[0].parameters.properties.a.enum", "invalid_type"],
    ["bad tool_choice", { model: "gpt-4o", input: "x", tool_choice: "sometimes" }, 400, "tool_choice", "invalid_value"],
    ["bad text.format", { model: "gpt-4o", input: "x", text: { format: { type: "yaml" } } }, 400, "text.format.type", "invalid_value"],
  ])("%s", async (_name, body, status, param, code) => {
    const e = await failure(body);
    expect({ status: e.status, param: e.param, code: e.code }).toEqual({ status, param, code });
    expect(e.message.length).toBeGreaterThan(10);
  });

  it("unknown model is an UnknownModelError", async () => {
    expect(await failure({ model: "gpt-17" })).toBeInstanceOf(UnknownModelError);
  });

  it.each<[string, unknown, number, string, string]>([
    ["bad base64 image", user([{ type: "input_image", image_url: "data:image/png;base64,@@not base64@@" }]), 400, "input[0].content[0].image_url", "invalid_base64"],
    ["truncated PNG", user([{ type: "input_image", image_url: dataUrl(png(10, 10).subarray(0, 18)) }]), 400, "input[0].content[0].image_url", "invalid_image"],
    ["BMP image", user([{ type: "input_image", image_url: dataUrl(bytes("BM", [1, 2, 3, 4, 5, 6, 7, 8]), "image/bmp") }]), 400, "input[0].content[0].image_url", "invalid_image"],
    ["zero-sized image", user([{ type: "input_image", image_url: dataUrl(png(0, 10)) }]), 400, "input[0].content[0].image_url", "invalid_image"],
    ["ftp image URL", user([{ type: "input_image", image_url: "ftp://x/y.png" }]), 400, "input[0].content[0].image_url", "invalid_image_url"],
    ["image URL that fails to fetch", user([{ type: "input_image", image_url: "https://img.example/missing.png" }]), 400, "input[0].content[0].image_url", "invalid_value"],
    ["bad detail", user([{ type: "input_image", image_url: dataUrl(png(10, 10)), detail: "ultra" }]), 400, "input[0].content[0].detail", "invalid_value"],
    ["image without a source", user([{ type: "input_image", detail: "low" }]), 400, "input[0].content[0].image_url", "missing_required_parameter"],
    ["image on a text-only model", { model: "gpt-3.5-turbo", input: [{ role: "user", content: [{ type: "input_image", image_url: dataUrl(png(10, 10)) }] }] }, 400, "input[0].content[0]", "unsupported_value"],
    ["non-PDF file", user([{ type: "input_file", file_data: dataUrl(bytes("hello, plain text"), "text/plain") }]), 400, "input[0].content[0].file_data", "unsupported_file"],
    ["corrupt PDF", user([{ type: "input_file", file_data: dataUrl(bytes("%PDF-1.7\nthis is not a pdf at all\n%%EOF"), "application/pdf") }]), 400, "input[0].content[0].file_data", "invalid_file"],
    ["file with two sources", user([{ type: "input_file", file_id: "file-x", file_url: "https://x/y.pdf" }]), 400, "input[0].content[0]", "invalid_value"],
    ["file without a source", user([{ type: "input_file", filename: "a.pdf" }]), 400, "input[0].content[0].file_id", "missing_required_parameter"],
  ])("%s", async (_name, body, status, param, code) => {
    const e = await failure(body);
    expect({ status: e.status, param: e.param, code: e.code }).toEqual({ status, param, code });
  });

  it("413 for an image or file over the size cap", async () => {
    const big = dataUrl(new Uint8Array(2 << 20));
    const e = await countInputTokens(user([{ type: "input_image", image_url: big }]), deps, { maxImageBytes: 1 << 20 }).catch((x) => x);
    expect(e).toMatchObject({ status: 413, param: "input[0].content[0].image_url", code: "payload_too_large" });
    const f = await countInputTokens(user([{ type: "input_file", file_data: big }]), deps, { maxFileBytes: 1 << 20 }).catch((x) => x);
    expect(f).toMatchObject({ status: 413, param: "input[0].content[0].file_data" });
  });

  it("passes the caller's own 4xx errors through (unknown file id)", async () => {
    const e = await countInputTokens(user([{ type: "input_file", file_id: "file-missing" }]), deps).catch((x) => x);
    expect(e).toMatchObject({ status: 404, code: "file_not_found" });
  });
});

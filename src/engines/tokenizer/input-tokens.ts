/**
 * `countInputTokens(request, deps)`: the number of input tokens a response-creation request would
 * use — the engine behind `POST /v1/responses/input_tokens`. No HTTP here: URLs and file ids are
 * resolved through `deps`, and every bad input is an `InputTokensError` naming the JSON path.
 *
 * What is counted (model parameters in models.ts):
 *   - messages — the published per-message rule (README.md, "Counting rules"): perMessage (3) + enc(role) + enc(each text
 *     part) + image/file tokens of its parts, + perName (1) + enc(name) when a `name` is given;
 *     several text parts are counted part by part;
 *   - `instructions` — a leading message with role developer (reasoning models) or system;
 *   - reply priming (3), once, when there is at least one message or item;
 *   - tools — tools.ts;
 *   - `text.format` json_schema — enc(name) + enc(description) + enc(compact JSON of the schema)
 *     (Atrium convention: the platform renders the schema into the prompt in a form that is not
 *     published); text/json_object formats add nothing;
 *   - `reasoning`, `tool_choice`, `parallel_tool_calls`, `truncation` are validated and add
 *     nothing (they steer decoding, they are not rendered as input).
 * Other input items (not in the published rules; Atrium's documented convention):
 *   - function_call / custom_tool_call: perMessage + enc("assistant") + enc(name) +
 *     enc(arguments | input) — a tool call is an assistant turn carrying the name and arguments;
 *   - function_call_output / custom_tool_call_output: perMessage + enc("tool") + the output
 *     (a string, or parts counted like message parts);
 *   - reasoning: enc of its summary texts (and `content` reasoning texts if given), no framing;
 *     `encrypted_content` is opaque and counts 0;
 *   - item_reference: counted as the item `deps.resolveItemReference` returns; rejected when no
 *     resolver is given;
 *   - every other item type (web_search_call, computer_call, mcp_call, ...) is rejected with a
 *     400 naming `input[i].type`: its rendering is not published.
 * `previous_response_id` and `conversation` prepend the items their resolver returns
 * (`deps.resolvePreviousResponse` / `deps.resolveConversation`); without a resolver the field is
 * rejected with a 400 rather than silently ignored.
 * Images: see countImage; files (PDF only): see countFile.
 */
import { inspectImage, MediaFormatError } from "../media/image.js";
import { inspectPdf, isPdf } from "../media/pdf.js";
import { getEncoding, type BpeEncoding } from "./encoding.js";
import { InputTokensError } from "./errors.js";
import { imageTokens, type ImageDetail } from "./image-tokens.js";
import { resolveModel, type ModelInfo } from "./models.js";
import { countTools } from "./tools.js";
import { DataUrlError, decodeDataUrl, splitDataUrl } from "../../common/data-url.js";

export interface InputTokensDeps {
  /** Bytes of an http(s) image URL. */
  fetchImage(url: string): Promise<Uint8Array>;
  /** Bytes and name of an uploaded file (`file-...`). Throw your 404 error for unknown ids. */
  readFile(fileId: string): Promise<{ bytes: Uint8Array; filename: string }>;
  /** Bytes of an `input_file.file_url`; defaults to `fetchImage`. */
  fetchFile?(url: string): Promise<Uint8Array>;
  /** Model and items (input then output) of a stored response and the ones it continues. */
  resolvePreviousResponse?(id: string): Promise<{ model?: string; items: unknown[] }>;
  /** Items of a stored conversation. */
  resolveConversation?(id: string): Promise<unknown[]>;
  /** The stored item an `item_reference` points at. */
  resolveItemReference?(id: string): Promise<unknown>;
}

export interface InputTokensOptions {
  /** Largest image accepted (decoded bytes); larger → 413. Default 50 MiB. */
  maxImageBytes?: number;
  /** Largest file accepted; larger → 413. Default 50 MiB (the platform's per-file input limit). */
  maxFileBytes?: number;
  /**
   * Resolution at which PDF pages are counted as images. Default 72 dpi: one pixel per PDF point,
   * so a US Letter page (612 × 792 pt) is a 612 × 792 image. The platform does not publish its
   * rendering resolution; this is Atrium's assumption.
   */
  pdfDpi?: number;
  /** Most pages accepted in one PDF (default 1000 → 400 above). */
  maxPdfPages?: number;
}

export interface InputTokensResult {
  object: "response.input_tokens";
  input_tokens: number;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

const MiB = 1 << 20;

function invalid(param: string, message: string, code = "invalid_value"): InputTokensError {
  return new InputTokensError(400, param, message, code);
}
function wrongType(param: string, expected: string): InputTokensError {
  return new InputTokensError(400, param, `Invalid type for '${param}': expected ${expected}.`, "invalid_type");
}
function missing(param: string): InputTokensError {
  return new InputTokensError(400, param, `Missing required parameter: '${param}'.`, "missing_required_parameter");
}

/** Rethrow errors that already carry an HTTP 4xx (ours or the caller's); wrap anything else. */
function fromDependency(e: unknown, param: string, what: string): Error {
  if (e instanceof InputTokensError) {
    if (e.param === "") return new InputTokensError(e.status, param, e.message, e.code, { cause: e });
    return e;
  }
  const status = (e as { status?: unknown; statusCode?: unknown } | null)?.status ?? (e as { statusCode?: unknown } | null)?.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) return e as Error;
  return new InputTokensError(400, param, `Could not ${what}: ${(e as Error)?.message ?? String(e)}`, "invalid_value", { cause: e });
}

const ROLES = new Set(["user", "assistant", "system", "developer"]);
const REJECTED_ITEMS = new Set([
  "web_search_call",
  "file_search_call",
  "computer_call",
  "computer_call_output",
  "image_generation_call",
  "code_interpreter_call",
  "local_shell_call",
  "local_shell_call_output",
  "shell_call",
  "shell_call_output",
  "apply_patch_call",
  "apply_patch_call_output",
  "mcp_list_tools",
  "mcp_approval_request",
  "mcp_approval_response",
  "mcp_call",
]);

/** A `data:` URL's bytes (base64 or percent-encoded); 413 when it decodes to more than maxBytes. */
function dataUrlBytes(url: string, param: string, maxBytes: number): Uint8Array {
  const d = splitDataUrl(url);
  if (!d) throw invalid(param, `Invalid data URL in '${param}': no ',' separator.`);
  let bytes: Buffer;
  try {
    bytes = decodeDataUrl(d, { maxBytes });
  } catch (e) {
    if (!(e instanceof DataUrlError)) throw e;
    if (e.problem === "too_large") throw new InputTokensError(413, param, `The data in '${param}' is larger than ${maxBytes} bytes.`, "payload_too_large");
    if (e.problem === "invalid_base64") throw invalid(param, `Invalid base64 data in '${param}'.`, "invalid_base64");
    throw invalid(param, `Invalid percent-encoding in the data URL in '${param}'.`);
  }
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length);
}

class Counter {
  private readonly enc: BpeEncoding;
  private readonly pending: Promise<number>[] = [];
  private readonly maxImageBytes: number;
  private readonly maxFileBytes: number;
  private readonly pdfDpi: number;
  private readonly maxPdfPages: number;
  total = 0;
  items = 0;

  constructor(
    private readonly model: ModelInfo,
    private readonly deps: InputTokensDeps,
    options: InputTokensOptions,
  ) {
    this.enc = getEncoding(model.encoding);
    this.maxImageBytes = options.maxImageBytes ?? 50 * MiB;
    this.maxFileBytes = options.maxFileBytes ?? 50 * MiB;
    this.pdfDpi = options.pdfDpi ?? 72;
    this.maxPdfPages = options.maxPdfPages ?? 1000;
  }

  text(s: string): number {
    return this.enc.countTokens(s);
  }

  /** Async parts (images, files) are started now and summed in `finish`, in parallel. */
  later(p: Promise<number>): void {
    p.catch(() => {}); // reported in finish(); avoid an unhandled rejection meanwhile
    this.pending.push(p);
  }

  async finish(): Promise<number> {
    const settled = await Promise.allSettled(this.pending);
    for (const s of settled) if (s.status === "rejected") throw s.reason; // first in request order
    let t = this.total;
    for (const s of settled) if (s.status === "fulfilled") t += s.value;
    return t;
  }

  private get msg() {
    return this.model.messages;
  }

  instructions(text: string): void {
    this.total += this.msg.perMessage + this.text(this.model.instructionsRole) + this.text(text);
    this.items++;
  }

  /** One input item at `path` (e.g. `input[2]`). */
  item(item: unknown, path: string, depth = 0): void {
    if (!isObj(item)) throw wrongType(path, "an object");
    const type = item.type;
    if (type === undefined || type === null || type === "message") {
      if (item.role === undefined) throw missing(`${path}.role`);
      this.message(item, path);
      return;
    }
    if (typeof type !== "string") throw wrongType(`${path}.type`, "a string");
    const m = this.msg;
    switch (type) {
      case "function_call":
      case "custom_tool_call": {
        const argKey = type === "function_call" ? "arguments" : "input";
        if (typeof item.call_id !== "string") throw item.call_id === undefined ? missing(`${path}.call_id`) : wrongType(`${path}.call_id`, "a string");
        if (typeof item.name !== "string") throw item.name === undefined ? missing(`${path}.name`) : wrongType(`${path}.name`, "a string");
        const args = item[argKey];
        if (typeof args !== "string") throw args === undefined ? missing(`${path}.${argKey}`) : wrongType(`${path}.${argKey}`, "a string");
        this.total += m.perMessage + this.text("assistant") + this.text(item.name) + this.text(args);
        break;
      }
      case "function_call_output":
      case "custom_tool_call_output": {
        if (typeof item.call_id !== "string") throw item.call_id === undefined ? missing(`${path}.call_id`) : wrongType(`${path}.call_id`, "a string");
        const out = item.output;
        this.total += m.perMessage + this.text("tool");
        if (typeof out === "string") this.total += this.text(out);
        else if (Array.isArray(out)) out.forEach((p, j) => this.part(p, `${path}.output[${j}]`));
        else throw out === undefined ? missing(`${path}.output`) : wrongType(`${path}.output`, "a string or an array of content parts");
        break;
      }
      case "reasoning": {
        const summary = item.summary;
        if (summary !== undefined && !Array.isArray(summary)) throw wrongType(`${path}.summary`, "an array");
        for (const [key, partType] of [
          ["summary", "summary_text"],
          ["content", "reasoning_text"],
        ] as const) {
          const list = item[key];
          if (list === undefined || list === null) continue;
          if (!Array.isArray(list)) throw wrongType(`${path}.${key}`, "an array");
          list.forEach((p, j) => {
            const pp = `${path}.${key}[${j}]`;
            if (!isObj(p)) throw wrongType(pp, "an object");
            if (p.type !== partType) throw invalid(`${pp}.type`, `Invalid value for '${pp}.type': expected '${partType}'.`);
            if (typeof p.text !== "string") throw p.text === undefined ? missing(`${pp}.text`) : wrongType(`${pp}.text`, "a string");
            this.total += this.text(p.text);
          });
        }
        if (item.encrypted_content !== undefined && item.encrypted_content !== null && typeof item.encrypted_content !== "string") {
          throw wrongType(`${path}.encrypted_content`, "a string");
        }
        break;
      }
      case "item_reference": {
        if (typeof item.id !== "string") throw item.id === undefined ? missing(`${path}.id`) : wrongType(`${path}.id`, "a string");
        const resolve = this.deps.resolveItemReference;
        if (!resolve) throw invalid(`${path}.type`, `Item type 'item_reference' at '${path}' is not supported by this server's input token counting.`, "unsupported_value");
        if (depth > 0) throw invalid(path, `An item_reference at '${path}' resolved to another item_reference.`);
        // resolve now, count when it arrives (its images/files join the pending set)
        const id = item.id;
        this.later(
          (async () => {
            let resolved: unknown;
            try {
              resolved = await resolve(id);
            } catch (e) {
              throw fromDependency(e, `${path}.id`, `resolve item '${id}'`);
            }
            const sub = new Counter(this.model, this.deps, {
              maxImageBytes: this.maxImageBytes,
              maxFileBytes: this.maxFileBytes,
              pdfDpi: this.pdfDpi,
              maxPdfPages: this.maxPdfPages,
            });
            sub.item(resolved, path, depth + 1);
            return sub.finish();
          })(),
        );
        break;
      }
      default:
        if (REJECTED_ITEMS.has(type)) {
          throw invalid(`${path}.type`, `Item type '${type}' at '${path}' is not supported by input token counting: its rendering is not published.`, "unsupported_value");
        }
        throw invalid(`${path}.type`, `Invalid value for '${path}.type': unknown input item type '${type}'.`);
    }
    this.items++;
  }

  private message(item: Json, path: string): void {
    const role = item.role;
    if (typeof role !== "string") throw wrongType(`${path}.role`, "a string");
    if (!ROLES.has(role)) {
      throw invalid(`${path}.role`, `Invalid value for '${path}.role': expected one of 'user', 'assistant', 'system', 'developer', got '${role}'.`);
    }
    const m = this.msg;
    let t = m.perMessage + this.text(role);
    if (item.name !== undefined && item.name !== null) {
      if (typeof item.name !== "string") throw wrongType(`${path}.name`, "a string");
      t += m.perName + this.text(item.name);
    }
    const content = item.content;
    if (typeof content === "string") t += this.text(content);
    else if (Array.isArray(content)) content.forEach((p, j) => this.part(p, `${path}.content[${j}]`));
    else throw content === undefined ? missing(`${path}.content`) : wrongType(`${path}.content`, "a string or an array of content parts");
    this.total += t;
    this.items++;
  }

  /** One content part. */
  private part(p: unknown, path: string): void {
    if (!isObj(p)) throw wrongType(path, "an object");
    const type = p.type;
    if (typeof type !== "string") throw p.type === undefined ? missing(`${path}.type`) : wrongType(`${path}.type`, "a string");
    switch (type) {
      case "input_text":
      case "output_text":
      case "text": {
        if (typeof p.text !== "string") throw p.text === undefined ? missing(`${path}.text`) : wrongType(`${path}.text`, "a string");
        this.total += this.text(p.text);
        return;
      }
      case "refusal": {
        if (typeof p.refusal !== "string") throw p.refusal === undefined ? missing(`${path}.refusal`) : wrongType(`${path}.refusal`, "a string");
        this.total += this.text(p.refusal);
        return;
      }
      case "input_image":
        this.later(this.image(p, path));
        return;
      case "input_file":
        this.later(this.file(p, path));
        return;
      default:
        throw invalid(`${path}.type`, `Invalid value for '${path}.type': content part type '${type}' is not supported for input token counting.`, "unsupported_value");
    }
  }

  /**
   * Image part: `image_url` (a data URL, or an http(s) URL fetched with deps.fetchImage; the
   * Chat Completions form `{url, detail}` is accepted too) or `file_id` (deps.readFile). The size
   * comes from the PNG/JPEG/GIF/WebP header (media/image.ts), the tokens from the model's
   * formula (image-tokens.ts). `detail`: low | high | auto (default auto = high).
   */
  private async image(p: Json, path: string): Promise<number> {
    const cost = this.model.image;
    if (cost.kind === "none") {
      throw invalid(path, `The model '${this.model.id}' does not support image inputs ('${path}').`, "unsupported_value");
    }
    let url = p.image_url;
    let detail: unknown = p.detail;
    let urlPath = `${path}.image_url`;
    if (isObj(url)) {
      detail = detail ?? url.detail;
      urlPath = `${path}.image_url.url`;
      url = url.url;
    }
    if (detail === undefined || detail === null) detail = "auto";
    if (detail !== "low" && detail !== "high" && detail !== "auto") {
      throw invalid(`${path}.detail`, `Invalid value for '${path}.detail': expected 'low', 'high' or 'auto'.`);
    }
    let bytes: Uint8Array;
    let param: string;
    if (url !== undefined && url !== null) {
      if (p.file_id !== undefined && p.file_id !== null) throw invalid(path, `Give either '${path}.image_url' or '${path}.file_id', not both.`);
      if (typeof url !== "string") throw wrongType(urlPath, "a string");
      param = urlPath;
      if (/^data:/i.test(url)) {
        bytes = dataUrlBytes(url, urlPath, this.maxImageBytes);
      } else if (/^https?:\/\//i.test(url)) {
        try {
          bytes = await this.deps.fetchImage(url);
        } catch (e) {
          throw fromDependency(e, urlPath, `fetch the image at '${url}'`);
        }
      } else {
        throw invalid(urlPath, `Invalid value for '${urlPath}': expected an http(s) URL or a base64 data URL.`, "invalid_image_url");
      }
    } else if (p.file_id !== undefined && p.file_id !== null) {
      if (typeof p.file_id !== "string") throw wrongType(`${path}.file_id`, "a string");
      param = `${path}.file_id`;
      try {
        bytes = (await this.deps.readFile(p.file_id)).bytes;
      } catch (e) {
        throw fromDependency(e, param, `read file '${p.file_id}'`);
      }
    } else {
      throw missing(`${path}.image_url`);
    }
    if (bytes.length > this.maxImageBytes) {
      throw new InputTokensError(413, param, `The image in '${param}' is larger than ${this.maxImageBytes} bytes.`, "payload_too_large");
    }
    let info;
    try {
      info = inspectImage(bytes);
    } catch (e) {
      if (e instanceof MediaFormatError) throw invalid(param, `Invalid image in '${param}': ${e.message}.`, "invalid_image");
      throw e;
    }
    return imageTokens(cost, info.width, info.height, detail as ImageDetail);
  }

  /**
   * File part (PDF only): `file_id` (deps.readFile), `file_url` (deps.fetchFile, else
   * deps.fetchImage) or `file_data` (a base64 data URL, or bare base64). Tokens = the extracted
   * text of every page + every page as a high-detail image of its MediaBox size at `pdfDpi`.
   */
  private async file(p: Json, path: string): Promise<number> {
    const sources = ["file_id", "file_url", "file_data"].filter((k) => p[k] !== undefined && p[k] !== null);
    if (sources.length === 0) throw missing(`${path}.file_id`);
    if (sources.length > 1) throw invalid(path, `Give only one of '${path}.file_id', '${path}.file_url' or '${path}.file_data'.`);
    const key = sources[0]!;
    const param = `${path}.${key}`;
    const value = p[key];
    if (typeof value !== "string") throw wrongType(param, "a string");
    if (p.filename !== undefined && p.filename !== null && typeof p.filename !== "string") throw wrongType(`${path}.filename`, "a string");
    let bytes: Uint8Array;
    if (key === "file_id") {
      try {
        bytes = (await this.deps.readFile(value)).bytes;
      } catch (e) {
        throw fromDependency(e, param, `read file '${value}'`);
      }
    } else if (key === "file_url") {
      if (!/^https?:\/\//i.test(value)) throw invalid(param, `Invalid value for '${param}': expected an http(s) URL.`);
      const fetchFile = this.deps.fetchFile ?? this.deps.fetchImage;
      try {
        bytes = await fetchFile(value);
      } catch (e) {
        throw fromDependency(e, param, `fetch the file at '${value}'`);
      }
    } else {
      bytes = dataUrlBytes(/^data:/i.test(value) ? value : `data:;base64,${value}`, param, this.maxFileBytes);
    }
    if (bytes.length > this.maxFileBytes) {
      throw new InputTokensError(413, param, `The file in '${param}' is larger than ${this.maxFileBytes} bytes.`, "payload_too_large");
    }
    if (!isPdf(bytes)) {
      throw invalid(param, `Unsupported file in '${param}': only PDF files can be counted.`, "unsupported_file");
    }
    const cost = this.model.image;
    if (cost.kind === "none") {
      throw invalid(path, `The model '${this.model.id}' does not support file inputs ('${path}').`, "unsupported_value");
    }
    let pdf;
    try {
      pdf = await inspectPdf(bytes, { maxPages: this.maxPdfPages });
    } catch (e) {
      if (e instanceof MediaFormatError) throw invalid(param, `Invalid PDF in '${param}': ${e.message}.`, "invalid_file");
      throw e;
    }
    const scale = this.pdfDpi / 72;
    let t = 0;
    for (const page of pdf.pages) {
      t += this.text(page.text);
      const w = Math.max(1, Math.round(page.width * scale));
      const h = Math.max(1, Math.round(page.height * scale));
      t += imageTokens(cost, w, h, "high");
    }
    return t;
  }
}

function optionalString(body: Json, key: string): string | undefined {
  const v = body[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== "string") throw wrongType(key, "a string");
  return v;
}

function validateSteering(body: Json): void {
  const tc = body.tool_choice;
  if (tc !== undefined && tc !== null) {
    if (typeof tc === "string") {
      if (!["auto", "none", "required"].includes(tc)) throw invalid("tool_choice", `Invalid value for 'tool_choice': expected 'auto', 'none', 'required' or an object.`);
    } else if (!isObj(tc) || typeof tc.type !== "string") throw wrongType("tool_choice", "a string or an object with a 'type'");
  }
  const ptc = body.parallel_tool_calls;
  if (ptc !== undefined && ptc !== null && typeof ptc !== "boolean") throw wrongType("parallel_tool_calls", "a boolean");
  const tr = body.truncation;
  if (tr !== undefined && tr !== null && tr !== "auto" && tr !== "disabled") throw invalid("truncation", `Invalid value for 'truncation': expected 'auto' or 'disabled'.`);
  const r = body.reasoning;
  if (r !== undefined && r !== null) {
    if (!isObj(r)) throw wrongType("reasoning", "an object");
    if (r.effort !== undefined && r.effort !== null && !["none", "minimal", "low", "medium", "high", "xhigh"].includes(r.effort as string)) {
      throw invalid("reasoning.effort", `Invalid value for 'reasoning.effort'.`);
    }
  }
}

function textFormatTokens(body: Json, enc: BpeEncoding): number {
  const text = body.text;
  if (text === undefined || text === null) return 0;
  if (!isObj(text)) throw wrongType("text", "an object");
  const format = text.format;
  if (format === undefined || format === null) return 0;
  if (!isObj(format)) throw wrongType("text.format", "an object");
  switch (format.type) {
    case "text":
    case "json_object":
      return 0;
    case "json_schema": {
      if (typeof format.name !== "string") throw format.name === undefined ? missing("text.format.name") : wrongType("text.format.name", "a string");
      if (!isObj(format.schema)) throw format.schema === undefined ? missing("text.format.schema") : wrongType("text.format.schema", "a JSON schema object");
      let t = enc.countTokens(format.name) + enc.countTokens(JSON.stringify(format.schema));
      if (format.description !== undefined && format.description !== null) {
        if (typeof format.description !== "string") throw wrongType("text.format.description", "a string");
        t += enc.countTokens(format.description);
      }
      return t;
    }
    default:
      throw invalid("text.format.type", `Invalid value for 'text.format.type': expected 'text', 'json_object' or 'json_schema'.`);
  }
}

/** Count the input tokens of a response-creation request body. */
export async function countInputTokens(request: unknown, deps: InputTokensDeps, options: InputTokensOptions = {}): Promise<InputTokensResult> {
  if (!isObj(request)) throw new InputTokensError(400, "", "The request body must be a JSON object.", "invalid_type");
  const body = request;

  const previousId = optionalString(body, "previous_response_id");
  let conversationId: string | undefined;
  const conv = body.conversation;
  if (conv !== undefined && conv !== null) {
    if (typeof conv === "string") conversationId = conv;
    else if (isObj(conv) && typeof conv.id === "string") conversationId = conv.id;
    else throw wrongType("conversation", "a string or an object with an 'id'");
  }
  if (previousId !== undefined && conversationId !== undefined) {
    throw invalid("conversation", "Give either 'previous_response_id' or 'conversation', not both.");
  }

  let prior: unknown[] = [];
  let priorParam = "";
  let inheritedModel: string | undefined;
  if (previousId !== undefined) {
    const resolve = deps.resolvePreviousResponse;
    if (!resolve) throw invalid("previous_response_id", "'previous_response_id' is not supported by this server's input token counting.", "unsupported_parameter");
    try {
      const r = await resolve(previousId);
      prior = r.items;
      inheritedModel = r.model;
    } catch (e) {
      throw fromDependency(e, "previous_response_id", `resolve response '${previousId}'`);
    }
    priorParam = "previous_response_id";
  } else if (conversationId !== undefined) {
    const resolve = deps.resolveConversation;
    if (!resolve) throw invalid("conversation", "'conversation' is not supported by this server's input token counting.", "unsupported_parameter");
    try {
      prior = await resolve(conversationId);
    } catch (e) {
      throw fromDependency(e, "conversation", `resolve conversation '${conversationId}'`);
    }
    priorParam = "conversation";
  }

  const modelId = optionalString(body, "model") ?? inheritedModel;
  if (modelId === undefined) throw missing("model");
  if (modelId === "") throw invalid("model", "Invalid value for 'model': empty string.");
  const model = resolveModel(modelId);

  const c = new Counter(model, deps, options);

  const instructions = optionalString(body, "instructions");
  if (instructions !== undefined && instructions !== "") c.instructions(instructions);

  prior.forEach((item, i) => c.item(item, `${priorParam}[${i}]`));

  const input = body.input;
  if (typeof input === "string") c.item({ role: "user", content: input }, "input");
  else if (Array.isArray(input)) input.forEach((item, i) => c.item(item, `input[${i}]`));
  else if (input !== undefined && input !== null) throw wrongType("input", "a string or an array of input items");

  if (c.items > 0) c.total += model.messages.priming;

  const enc = getEncoding(model.encoding);
  c.total += countTools(body.tools, enc, model.tools);
  c.total += textFormatTokens(body, enc);
  validateSteering(body);

  return { object: "response.input_tokens", input_tokens: await c.finish() };
}

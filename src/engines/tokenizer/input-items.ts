// The input of a response-creation request, item by item: messages, tool calls and their outputs,
// reasoning, references, and the images and files of their parts. The rules it counts by are
// listed at the top of input-tokens.ts.
import { inspectImage, MediaFormatError } from "../media/image.js";
import { inspectPdf, isPdf } from "../media/pdf.js";
import { getEncoding, type BpeEncoding } from "./encoding.js";
import { fromDependency, InputTokensError, invalid, missing, wrongType } from "./errors.js";
import { imageTokens, type ImageDetail } from "./image-tokens.js";
import type { InputTokensDeps, InputTokensOptions } from "./input-tokens.js";
import type { ModelInfo } from "./models.js";
import { DataUrlError, decodeDataUrl, splitDataUrl } from "../../common/data-url.js";

export type Json = Record<string, unknown>;
export const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

const MiB = 1 << 20;

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

/** The running count of one request's input: messages and items now, images and files as they resolve. */
export class InputCounter {
  private readonly enc: BpeEncoding;
  private readonly pending: Promise<number>[] = [];
  private readonly maxImageBytes: number;
  private readonly maxFileBytes: number;
  private readonly pdfDpi: number;
  private readonly maxPdfPages: number;
  private readonly longTextChars: number;
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
    this.longTextChars = options.longTextChars ?? 256 * 1024;
  }

  /** The tokens of `s`, or 0 with its count added in finish() when it goes to deps.countLongText. */
  text(s: string): number {
    if (s.length >= this.longTextChars && this.deps.countLongText) {
      this.later(this.deps.countLongText(this.model.encoding, s));
      return 0;
    }
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
            const sub = new InputCounter(this.model, this.deps, {
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

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
 * Images: see InputCounter.image; files (PDF only): see InputCounter.file (input-items.ts).
 */
import { getEncoding, type BpeEncoding, type EncodingName } from "./encoding.js";
import { fromDependency, InputTokensError, invalid, missing, wrongType } from "./errors.js";
import { InputCounter, isObj, type Json } from "./input-items.js";
import { resolveModel } from "./models.js";
import { countTools } from "./tools.js";

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
  /**
   * Counts a text of at least `longTextChars` somewhere else (e.g. in parts on worker threads,
   * split with splitAtPieceBoundaries); without it, every text is counted on this thread.
   */
  countLongText?(encoding: EncodingName, text: string): Promise<number>;
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
  /** Texts of at least this many characters go to `deps.countLongText` when it is given. Default 256 Ki. */
  longTextChars?: number;
}

export interface InputTokensResult {
  object: "response.input_tokens";
  input_tokens: number;
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

  const c = new InputCounter(model, deps, options);

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

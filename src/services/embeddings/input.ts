// The `input` and option checks of POST /v1/embeddings, as the platform applies them: the union
// of input shapes, at most 2048 inputs, no empty input, at most 8192 tokens per input and
// 300,000 per request (cl100k_base, the encoding of the platform's embedding models). Every
// error is a 400 naming the field (`input[3]`, `input[0][7]`, `dimensions`).
import { invalidParam, missingParam } from "../../common/errors.js";
import { countEmbeddingTokens } from "../../engines/embeddings/index.js";
import { getEncoding } from "../../engines/tokenizer/index.js";
import { typeError } from "../../common/rest-json.js";
import type { Json } from "../../common/json.js";

export const MAX_INPUTS = 2048;
export const MAX_INPUT_TOKENS = 8192;
export const MAX_REQUEST_TOKENS = 300_000;

export interface EmbeddingInputs {
  /** The inputs as text (token-id inputs decoded). */
  texts: string[];
  /** Tokens of each input: the ids given, or the text counted. */
  tokens: number[];
}


/** Parses the JSON of `input` and counts its tokens; throws a 400 for anything the platform refuses. */
export async function parseInput(input: Json | undefined): Promise<EmbeddingInputs> {
  if (input === undefined || input === null) throw missingParam("input");
  if (typeof input === "string") return checked(["input"], [input], null);
  if (!Array.isArray(input)) throw typeError("input", "a string or an array", input);
  if (input.length === 0) throw invalidParam("input", "Invalid 'input': expected at least one input, but got an empty array.", "empty_array");

  // One array of token ids is one input.
  if (typeof input[0] === "number") {
    const ids = tokenIds(input, "input");
    return checked(["input"], [decode(ids)], [ids.length]);
  }
  if (input.length > MAX_INPUTS)
    throw invalidParam("input", `Invalid 'input': at most ${MAX_INPUTS} inputs are allowed per request, but got ${input.length}.`, "array_above_max_length");
  const params = input.map((_, i) => `input[${i}]`);
  if (typeof input[0] === "string") {
    const texts = input.map((x, i) => {
      if (typeof x !== "string") throw typeError(params[i]!, "a string", x);
      return x;
    });
    return checked(params, texts, null);
  }
  if (Array.isArray(input[0])) {
    const lists = input.map((x, i) => {
      if (!Array.isArray(x)) throw typeError(params[i]!, "an array of token ids", x);
      return tokenIds(x, params[i]!);
    });
    return checked(params, lists.map(decode), lists.map((ids) => ids.length));
  }
  throw typeError("input[0]", "a string, a token id or an array of token ids", input[0]);
}

/** Empty inputs, then token limits. `tokens` is null for text inputs (counted here). */
async function checked(params: string[], texts: string[], tokens: number[] | null): Promise<EmbeddingInputs> {
  texts.forEach((t, i) => {
    if (t === "") throw invalidParam(params[i]!, `Invalid '${params[i]}': an input must not be an empty string.`, "empty_string");
  });
  const counts = tokens ?? (await countEmbeddingTokens(texts));
  let total = 0;
  counts.forEach((n, i) => {
    if (n > MAX_INPUT_TOKENS)
      throw invalidParam(
        params[i]!,
        `This model's maximum context length is ${MAX_INPUT_TOKENS} tokens, however you requested ${n} tokens in '${params[i]}'. Please reduce the length of the input.`,
        "context_length_exceeded",
      );
    total += n;
  });
  if (total > MAX_REQUEST_TOKENS)
    throw invalidParam("input", `Invalid 'input': ${total} tokens in total, but at most ${MAX_REQUEST_TOKENS} are allowed per request.`, "max_tokens_per_request");
  return { texts, tokens: counts };
}

function tokenIds(list: Json[], param: string): number[] {
  if (list.length === 0) throw invalidParam(param, `Invalid '${param}': an input must not be an empty array of token ids.`, "empty_array");
  // Over the limit is reported as such, before the ids are even looked at.
  if (list.length > MAX_INPUT_TOKENS)
    throw invalidParam(
      param,
      `This model's maximum context length is ${MAX_INPUT_TOKENS} tokens, however you requested ${list.length} tokens in '${param}'. Please reduce the length of the input.`,
      "context_length_exceeded",
    );
  const size = getEncoding("cl100k_base").table.size;
  for (let j = 0; j < list.length; j++) {
    const id = list[j];
    if (typeof id !== "number" || !Number.isInteger(id)) throw typeError(`${param}[${j}]`, "an integer token id", id);
    if (id < 0 || id >= size) throw invalidParam(`${param}[${j}]`, `Invalid '${param}[${j}]': ${id} is not a cl100k_base token id (0 to ${size - 1}).`);
  }
  return list as number[];
}

const decode = (ids: number[]) => getEncoding("cl100k_base").decode(ids);

export type EncodingFormat = "float" | "base64";

export function parseEncodingFormat(value: string | undefined): EncodingFormat {
  if (value === undefined || value === "float") return "float";
  if (value === "base64") return "base64";
  throw invalidParam("encoding_format", `Invalid value for 'encoding_format': '${value}'. Supported values are: 'float' and 'base64'.`);
}

// The `input` and `model` rules of POST /v1/moderations, shared by the service (which checks every
// request, whichever provider answers it) and the local engine (which needs the items). Every
// problem is a ModerationInputError naming the JSON path at fault (`input[2].image_url.url`).
import { splitDataUrl } from "../../common/data-url.js";
import type { Json } from "../../common/json.js";

export const MODERATION_MODELS = ["omni-moderation-latest", "omni-moderation-2024-09-26", "text-moderation-latest", "text-moderation-stable"] as const;
export type ModerationModel = (typeof MODERATION_MODELS)[number];
export const DEFAULT_MODERATION_MODEL: ModerationModel = "omni-moderation-latest";

export const isModerationModel = (m: string): m is ModerationModel => (MODERATION_MODELS as readonly string[]).includes(m);
/** The text-moderation models read text only (and have no illicit categories). */
export const isTextOnlyModel = (m: ModerationModel) => m.startsWith("text-moderation-");

/** Limits of one request (this server's choice; the platform publishes none for moderation). */
export const LIMITS = {
  /** Strings in an array, or parts in a parts array. */
  maxInputs: 256,
  /** Characters of one string or text part. */
  maxTextChars: 32_768,
  /** Characters of all the text of a request. */
  maxTotalTextChars: 262_144,
  /** Image parts in a request. */
  maxImages: 8,
  /** Bytes of one image (a data URL's decoded bytes, or a fetched file). */
  maxImageBytes: 20 * 1024 * 1024,
  /** Pixels of one image (width × height), whatever its file size. */
  maxImagePixels: 25_000_000,
} as const;

export class ModerationInputError extends Error {
  override readonly name = "ModerationInputError";
  constructor(
    readonly param: string,
    message: string,
    readonly code: string = "invalid_value",
  ) {
    super(message);
  }
}

/** One thing to classify: one result of the response. */
export interface ModerationItem {
  texts: Array<{ text: string; param: string }>;
  images: Array<{ url: string; param: string }>;
}


const kindOf = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`);
const typeError = (param: string, expected: string, got: unknown) =>
  new ModerationInputError(param, `Invalid type for '${param}': expected ${expected}, but got ${kindOf(got)} instead.`, "invalid_type");

export function parseModel(model: string | undefined): ModerationModel {
  if (model === undefined || model === "") return DEFAULT_MODERATION_MODEL;
  if (!isModerationModel(model))
    throw new ModerationInputError("model", `Invalid value for 'model': '${model}' is not a moderation model; use one of ${MODERATION_MODELS.join(", ")}.`, "model_not_found");
  return model;
}

/** The items of `input` (one per string; one for a parts array), checked against the model and the limits. */
export function parseModerationInput(input: Json | undefined, model: ModerationModel): ModerationItem[] {
  if (input === undefined || input === null) throw new ModerationInputError("input", "Missing required parameter: 'input'.", "missing_required_parameter");
  let items: ModerationItem[];
  if (typeof input === "string") items = [{ texts: [{ text: input, param: "input" }], images: [] }];
  else if (!Array.isArray(input)) throw typeError("input", "a string, an array of strings or an array of content parts", input);
  else {
    if (input.length === 0) throw new ModerationInputError("input", "Invalid 'input': expected at least one input, but got an empty array.", "empty_array");
    if (input.length > LIMITS.maxInputs)
      throw new ModerationInputError("input", `Invalid 'input': at most ${LIMITS.maxInputs} inputs are allowed per request, but got ${input.length}.`, "array_above_max_length");
    if (typeof input[0] === "string") {
      items = input.map((s, i) => {
        if (typeof s !== "string") throw typeError(`input[${i}]`, "a string (the array's first element is a string)", s);
        return { texts: [{ text: s, param: `input[${i}]` }], images: [] };
      });
    } else items = [parseParts(input, model)];
  }

  let total = 0;
  for (const item of items)
    for (const t of item.texts) {
      if (t.text.length > LIMITS.maxTextChars)
        throw new ModerationInputError(t.param, `Invalid '${t.param}': at most ${LIMITS.maxTextChars} characters are allowed, but got ${t.text.length}.`, "string_above_max_length");
      total += t.text.length;
    }
  if (total > LIMITS.maxTotalTextChars)
    throw new ModerationInputError("input", `Invalid 'input': at most ${LIMITS.maxTotalTextChars} characters of text are allowed per request, but got ${total}.`, "input_too_large");
  return items;
}

function parseParts(parts: Json[], model: ModerationModel): ModerationItem {
  const item: ModerationItem = { texts: [], images: [] };
  parts.forEach((part, i) => {
    const at = `input[${i}]`;
    if (typeof part !== "object" || part === null || Array.isArray(part)) throw typeError(at, "a content part object ({type: text} or {type: image_url})", part);
    const type = part.type;
    if (type === "text") {
      onlyKeys(part, at, ["type", "text"]);
      if (typeof part.text !== "string") throw part.text === undefined ? missing(`${at}.text`) : typeError(`${at}.text`, "a string", part.text);
      item.texts.push({ text: part.text, param: `${at}.text` });
    } else if (type === "image_url") {
      onlyKeys(part, at, ["type", "image_url"]);
      if (isTextOnlyModel(model))
        throw new ModerationInputError(`${at}.type`, `Invalid '${at}': the model '${model}' moderates text only; use omni-moderation-latest for image inputs.`, "image_not_supported");
      const image = part.image_url;
      if (image === undefined) throw missing(`${at}.image_url`);
      if (typeof image !== "object" || image === null || Array.isArray(image)) throw typeError(`${at}.image_url`, "an object with a url", image);
      onlyKeys(image, `${at}.image_url`, ["url", "detail"]);
      if (typeof image.url !== "string") throw image.url === undefined ? missing(`${at}.image_url.url`) : typeError(`${at}.image_url.url`, "a string", image.url);
      checkImageUrl(image.url, `${at}.image_url.url`);
      item.images.push({ url: image.url, param: `${at}.image_url.url` });
    } else if (type === undefined) throw missing(`${at}.type`);
    else
      throw new ModerationInputError(`${at}.type`, `Invalid value for '${at}.type': ${JSON.stringify(type)}; supported values are 'text' and 'image_url'.`, "invalid_value");
  });
  if (item.images.length > LIMITS.maxImages)
    throw new ModerationInputError("input", `Invalid 'input': at most ${LIMITS.maxImages} images are allowed per request, but got ${item.images.length}.`, "too_many_images");
  return item;
}

const missing = (param: string) => new ModerationInputError(param, `Missing required parameter: '${param}'.`, "missing_required_parameter");

function onlyKeys(obj: { [k: string]: Json }, at: string, allowed: string[]): void {
  for (const k of Object.keys(obj))
    if (!allowed.includes(k)) throw new ModerationInputError(`${at}.${k}`, `Unrecognized request argument supplied: ${at}.${k}`, "unknown_parameter");
}

/** A URL's form (its reachability and content are the fetcher's and the decoder's business). */
function checkImageUrl(url: string, param: string): void {
  if (url.startsWith("data:")) {
    const d = splitDataUrl(url);
    if (!d?.base64) throw new ModerationInputError(param, `Invalid '${param}': a data URL must be base64 (data:image/png;base64,...).`, "invalid_image_url");
    if (!/^image\/(png|jpeg|jpg|gif|webp)$/i.test(d.mediaType))
      throw new ModerationInputError(param, `Invalid '${param}': unsupported image type '${d.mediaType}'; use PNG, JPEG, GIF or WebP.`, "invalid_image_format");
    const approxBytes = Math.floor((d.payload.length * 3) / 4);
    if (approxBytes > LIMITS.maxImageBytes + 3)
      throw new ModerationInputError(param, `Invalid '${param}': the image is larger than ${LIMITS.maxImageBytes} bytes.`, "image_too_large");
    return;
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new ModerationInputError(param, `Invalid '${param}': not a valid URL; use an http(s) URL or a base64 data URL.`, "invalid_image_url");
  }
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw new ModerationInputError(param, `Invalid '${param}': the scheme '${u.protocol}' is not supported; use an http(s) URL or a base64 data URL.`, "invalid_image_url");
}

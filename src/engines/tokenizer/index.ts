/**
 * Token-counting engine (no HTTP). See README.md beside this file.
 */
export { BpeEncoding, getEncoding, PATTERNS, type EncodingName, type EncodingOptions } from "./encoding.js";
export { InputTokensError, UnknownModelError, type InputTokensErrorStatus } from "./errors.js";
export {
  countInputTokens,
  type InputTokensDeps,
  type InputTokensOptions,
  type InputTokensResult,
} from "./input-tokens.js";
export { imageTokens, patchCount, tileCount, type ImageDetail } from "./image-tokens.js";
export {
  encodingForModel,
  KNOWN_MODELS,
  MODEL_FAMILIES,
  resolveModel,
  type ImageCost,
  type MessageCost,
  type ModelInfo,
  type ToolCost,
} from "./models.js";
export { countTools } from "./tools.js";
export { splitAtPieceBoundaries } from "./split.js";

import { getEncoding, type EncodingName } from "./encoding.js";
import { resolveModel } from "./models.js";

/** Tokens of plain text for a model (special-token look-alikes count as text). */
export function countTextTokens(model: string, text: string): number {
  return getEncoding(resolveModel(model).encoding).countTokens(text);
}

/** Build the rank tables now (≈0.5 s each) instead of on the first request. */
export function warmUpTokenizer(encodings: EncodingName[] = ["o200k_base", "cl100k_base"]): void {
  for (const e of encodings) getEncoding(e);
}

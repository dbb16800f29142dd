/**
 * Model → encoding and counting parameters.
 *
 * Where each constant comes from: README.md beside this file, "Which tokenizer, and why" (the
 * encodings) and "Counting rules" (message, tool and image constants).
 *
 * A model id resolves when it is a known base name, or a known base name followed by a snapshot
 * suffix (`-2024-08-06`, `-0613`, `-latest`), or a fine-tuned id `ft:<base>:<org>:<suffix>:<id>`
 * (optionally `:ckpt-step-N`) whose base resolves. Anything else is an `UnknownModelError`.
 * The longest matching base wins (`gpt-4o-mini-2024-07-18` is gpt-4o-mini, not gpt-4o).
 */
import type { EncodingName } from "./ranks.js";
import { UnknownModelError } from "./errors.js";

/** Image token parameters of a model family (vision guide). */
export type ImageCost =
  /** 512-px tiles: low = base; high/auto = base + tile × tiles after the two resizes. */
  | { kind: "tile"; base: number; tile: number }
  /** 32-px patches, capped at 1536, times a multiplier (detail is ignored). */
  | { kind: "patch"; multiplier: number }
  /** The model takes no image input. */
  | { kind: "none" };

/** Cookbook `num_tokens_from_messages`. */
export interface MessageCost {
  perMessage: number;
  perName: number;
  /** reply priming `<|start|>assistant<|message|>`, once per request */
  priming: number;
}

/** Cookbook `num_tokens_for_tools`. */
export interface ToolCost {
  funcInit: number;
  propInit: number;
  propKey: number;
  enumInit: number;
  enumItem: number;
  funcEnd: number;
}

export interface ModelInfo {
  /** The id as given. */
  id: string;
  /** The known base name it resolved to (for `ft:` ids, the base model's base name). */
  base: string;
  encoding: EncodingName;
  messages: MessageCost;
  tools: ToolCost;
  image: ImageCost;
  /** Role used for `instructions` (developer for the reasoning models, system otherwise). */
  instructionsRole: "system" | "developer";
}

const MSG: MessageCost = { perMessage: 3, perName: 1, priming: 3 };
/** gpt-3.5-turbo-0301 only: `<|im_start|>{role/name}\n{content}<|im_end|>\n`, name replaces role. */
const MSG_0301: MessageCost = { perMessage: 4, perName: -1, priming: 3 };
/** Cookbook constants for gpt-4o / gpt-4o-mini; used for every o200k_base model (assumption). */
const TOOLS_O200K: ToolCost = { funcInit: 7, propInit: 3, propKey: 3, enumInit: -3, enumItem: 3, funcEnd: 12 };
/** Cookbook constants for gpt-3.5-turbo / gpt-4. */
const TOOLS_CL100K: ToolCost = { funcInit: 10, propInit: 3, propKey: 3, enumInit: -3, enumItem: 3, funcEnd: 12 };

const tile = (base: number, t: number): ImageCost => ({ kind: "tile", base, tile: t });
const patch = (multiplier: number): ImageCost => ({ kind: "patch", multiplier });
const NO_IMAGES: ImageCost = { kind: "none" };

interface Family {
  encoding: EncodingName;
  image: ImageCost;
  reasoning?: boolean;
  messages?: MessageCost;
}

/** Known base model names. Snapshots and fine-tunes of these resolve too (see above). */
export const MODEL_FAMILIES: Readonly<Record<string, Family>> = {
  // GPT-5 family
  "gpt-5": { encoding: "o200k_base", image: tile(70, 140), reasoning: true },
  "gpt-5-chat": { encoding: "o200k_base", image: tile(70, 140) },
  "gpt-5-codex": { encoding: "o200k_base", image: tile(70, 140), reasoning: true },
  "gpt-5-pro": { encoding: "o200k_base", image: tile(70, 140), reasoning: true },
  "gpt-5-mini": { encoding: "o200k_base", image: patch(1.62), reasoning: true },
  "gpt-5-nano": { encoding: "o200k_base", image: patch(2.46), reasoning: true },
  "gpt-5.1": { encoding: "o200k_base", image: tile(70, 140), reasoning: true },
  "gpt-5.1-chat": { encoding: "o200k_base", image: tile(70, 140) },
  "gpt-5.1-codex": { encoding: "o200k_base", image: tile(70, 140), reasoning: true },
  "gpt-5.1-codex-mini": { encoding: "o200k_base", image: patch(1.62), reasoning: true },
  // GPT-4.5 / GPT-4.1
  "gpt-4.5-preview": { encoding: "o200k_base", image: tile(85, 170) },
  "gpt-4.1": { encoding: "o200k_base", image: tile(85, 170) },
  "gpt-4.1-mini": { encoding: "o200k_base", image: patch(1.62) },
  "gpt-4.1-nano": { encoding: "o200k_base", image: patch(2.46) },
  // GPT-4o
  "gpt-4o": { encoding: "o200k_base", image: tile(85, 170) },
  "chatgpt-4o": { encoding: "o200k_base", image: tile(85, 170) },
  "gpt-4o-mini": { encoding: "o200k_base", image: tile(2833, 5667) },
  "gpt-4o-search-preview": { encoding: "o200k_base", image: tile(85, 170) },
  "gpt-4o-mini-search-preview": { encoding: "o200k_base", image: tile(2833, 5667) },
  "gpt-4o-audio-preview": { encoding: "o200k_base", image: NO_IMAGES },
  "gpt-4o-mini-audio-preview": { encoding: "o200k_base", image: NO_IMAGES },
  "gpt-4o-realtime-preview": { encoding: "o200k_base", image: NO_IMAGES },
  "gpt-4o-mini-realtime-preview": { encoding: "o200k_base", image: NO_IMAGES },
  // o-series
  o1: { encoding: "o200k_base", image: tile(75, 150), reasoning: true },
  "o1-pro": { encoding: "o200k_base", image: tile(75, 150), reasoning: true },
  "o1-preview": { encoding: "o200k_base", image: NO_IMAGES, reasoning: true },
  "o1-mini": { encoding: "o200k_base", image: NO_IMAGES, reasoning: true },
  o3: { encoding: "o200k_base", image: tile(75, 150), reasoning: true },
  "o3-pro": { encoding: "o200k_base", image: tile(75, 150), reasoning: true },
  "o3-deep-research": { encoding: "o200k_base", image: tile(75, 150), reasoning: true },
  "o3-mini": { encoding: "o200k_base", image: NO_IMAGES, reasoning: true },
  "o4-mini": { encoding: "o200k_base", image: patch(1.72), reasoning: true },
  "o4-mini-deep-research": { encoding: "o200k_base", image: patch(1.72), reasoning: true },
  // GPT-4 / GPT-3.5 (cl100k_base)
  "gpt-4": { encoding: "cl100k_base", image: NO_IMAGES },
  "gpt-4-32k": { encoding: "cl100k_base", image: NO_IMAGES },
  "gpt-4-turbo": { encoding: "cl100k_base", image: tile(85, 170) },
  "gpt-4-turbo-preview": { encoding: "cl100k_base", image: NO_IMAGES },
  "gpt-4-1106-preview": { encoding: "cl100k_base", image: NO_IMAGES },
  "gpt-4-0125-preview": { encoding: "cl100k_base", image: NO_IMAGES },
  "gpt-4-vision-preview": { encoding: "cl100k_base", image: tile(85, 170) },
  "gpt-4-1106-vision-preview": { encoding: "cl100k_base", image: tile(85, 170) },
  "gpt-3.5-turbo": { encoding: "cl100k_base", image: NO_IMAGES },
  "gpt-3.5-turbo-16k": { encoding: "cl100k_base", image: NO_IMAGES },
  "gpt-3.5-turbo-instruct": { encoding: "cl100k_base", image: NO_IMAGES },
  "gpt-3.5-turbo-0301": { encoding: "cl100k_base", image: NO_IMAGES, messages: MSG_0301 },
  "gpt-35-turbo": { encoding: "cl100k_base", image: NO_IMAGES },
  // embeddings and base completion models (cl100k_base per tiktoken)
  "text-embedding-3-small": { encoding: "cl100k_base", image: NO_IMAGES },
  "text-embedding-3-large": { encoding: "cl100k_base", image: NO_IMAGES },
  "text-embedding-ada-002": { encoding: "cl100k_base", image: NO_IMAGES },
  "davinci-002": { encoding: "cl100k_base", image: NO_IMAGES },
  "babbage-002": { encoding: "cl100k_base", image: NO_IMAGES },
};

/** Every known base name (for the models catalog and tests). */
export const KNOWN_MODELS: readonly string[] = Object.keys(MODEL_FAMILIES);

/** Snapshot suffixes: `-2024-08-06`, `-0613`, `-latest`, and those after `-16k`/`-32k`. */
const SNAPSHOT = /^(?:-\d{4}-\d{2}-\d{2}|-\d{4}|-latest)$/;

const BY_LENGTH = [...KNOWN_MODELS].sort((a, b) => b.length - a.length);

function resolveBase(id: string): string | undefined {
  if (Object.hasOwn(MODEL_FAMILIES, id)) return id;
  for (const base of BY_LENGTH) {
    if (id.startsWith(base) && SNAPSHOT.test(id.slice(base.length))) {
      // gpt-3.5-turbo-0301 is its own entry (different message constants) and is found first
      // by the exact match above; other snapshots share their base's constants.
      return base;
    }
  }
  return undefined;
}

/**
 * Resolve a model id, or throw `UnknownModelError` (404 `model_not_found` on `param`).
 * Fine-tuned ids `ft:<base>:<org>:<suffix>:<id>` resolve to their base's parameters.
 */
export function resolveModel(id: string, param = "model"): ModelInfo {
  let lookup = id;
  if (id.startsWith("ft:")) {
    const parts = id.split(":");
    // ft:<base>:<org>:<suffix>:<id>[:ckpt-step-N]; the legacy form has an empty suffix.
    if (parts.length < 3 || !parts[1]) throw new UnknownModelError(id, param);
    lookup = parts[1];
  }
  const base = resolveBase(lookup);
  if (base === undefined) throw new UnknownModelError(id, param);
  const f = MODEL_FAMILIES[base]!;
  return {
    id,
    base,
    encoding: f.encoding,
    messages: f.messages ?? MSG,
    tools: f.encoding === "o200k_base" ? TOOLS_O200K : TOOLS_CL100K,
    image: f.image,
    instructionsRole: f.reasoning ? "developer" : "system",
  };
}

/** The encoding of a model id, or throw `UnknownModelError`. */
export function encodingForModel(id: string): EncodingName {
  return resolveModel(id).encoding;
}

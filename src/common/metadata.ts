// Metadata and attributes (spec 2, "Metadata", "Attributes"; limits in spec 8): at most 16 pairs,
// keys up to 64 characters, string values up to 512; attributes may also hold numbers and
// booleans. The messages follow the platform's wording for the same violations.
import { capChars } from "./caps.js";
import { invalidParam } from "./errors.js";
import { typeError } from "./rest-json.js";

export const MAX_PAIRS = 16;
export const MAX_KEY_CHARS = 64;
export const MAX_VALUE_CHARS = 512;

function checkPairs(map: unknown, param: string, value: (v: unknown, at: string) => void): asserts map is Record<string, unknown> {
  // A scalar has no keys and an array has index keys: neither is a map.
  if (typeof map !== "object" || map === null || Array.isArray(map)) throw typeError(param, "an object", map);
  const keys = Object.keys(map);
  if (keys.length > MAX_PAIRS)
    throw invalidParam(
      param,
      `Invalid '${param}': too many properties. Expected an object with at most ${MAX_PAIRS} properties, but got an object with ${keys.length} properties instead.`,
      "object_above_max_properties",
    );
  for (const k of keys) {
    if (k.length > MAX_KEY_CHARS)
      throw invalidParam(
        param,
        `Invalid '${param}': key too long. Expected keys with maximum length ${MAX_KEY_CHARS}, but got a key with length ${k.length} instead.`,
        "key_too_long",
      );
    value((map as Record<string, unknown>)[k], `${param}.${k}`);
  }
}

function checkString(v: string, at: string) {
  capChars(v, at, MAX_VALUE_CHARS);
}

/** Metadata: string values only. */
export function checkMetadata(map: unknown, param = "metadata"): Record<string, string> | null {
  if (map === undefined || map === null) return null;
  checkPairs(map, param, (v, at) => {
    if (typeof v !== "string") throw invalidParam(at, `Invalid type for '${at}': expected a string, but got ${describe(v)} instead.`, "invalid_type");
    checkString(v, at);
  });
  return map as Record<string, string>;
}

export type AttributeValue = string | number | boolean;

/** Attributes: strings (≤ 512), finite numbers or booleans. */
export function checkAttributes(map: unknown, param = "attributes"): Record<string, AttributeValue> | null {
  if (map === undefined || map === null) return null;
  checkPairs(map, param, (v, at) => {
    if (typeof v === "string") checkString(v, at);
    else if (typeof v === "boolean") return;
    else if (typeof v !== "number" || !Number.isFinite(v))
      throw invalidParam(at, `Invalid type for '${at}': expected a string, number or boolean, but got ${describe(v)} instead.`, "invalid_type");
  });
  return map as Record<string, AttributeValue>;
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "number") return Number.isInteger(v) ? "an integer" : Number.isFinite(v) ? "a decimal" : "a non-finite number";
  return typeof v === "object" ? "an object" : `a ${typeof v}`;
}

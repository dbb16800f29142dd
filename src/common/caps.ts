// Length caps on client-supplied strings and arrays: every one is bounded before anything is
// stored or worked on, and a value over its cap is a 400 naming the field and the limit, in the
// platform's wording for the same violation (docs/spec-choices.md lists each cap and its source).
import { invalidParam } from "./errors.js";

/** Longest id this server accepts anywhere (its own ids are under 64 characters). */
export const MAX_ID_CHARS = 256;

/** A string of at most `max` UTF-16 code units (the platform counts string lengths that way). */
export function capChars<T extends string | null | undefined>(value: T, param: string, max: number): T {
  if (typeof value === "string" && value.length > max)
    throw invalidParam(
      param,
      `Invalid '${param}': string too long. Expected a string with maximum length ${max}, but got a string with length ${value.length} instead.`,
      "string_above_max_length",
    );
  return value;
}

/** An array of at most `max` items. */
export function capItems<T extends readonly unknown[] | null | undefined>(items: T, param: string, max: number): T {
  if (Array.isArray(items) && items.length > max)
    throw invalidParam(
      param,
      `Invalid '${param}': array too long. Expected an array with maximum length ${max}, but got an array with length ${items.length} instead.`,
      "array_above_max_length",
    );
  return items;
}

/** An array of ids: at most `max` of them, each at most MAX_ID_CHARS (`param[i]` names one over it). */
export function capIds<T extends readonly string[]>(ids: T, param: string, max: number): T {
  capItems(ids, param, max);
  ids.forEach((id, i) => capChars(id, `${param}[${i}]`, MAX_ID_CHARS));
  return ids;
}

// string_check (spec 2.12): eq, ne, like and ilike. like/ilike are SQL LIKE over the whole
// string: `%` any run of characters, `_` exactly one, `\` escapes the next character (so `\%`
// is a literal percent); ilike compares case-insensitively. The reward is 1 or 0.
import type { StringCheckOperation } from "./types.js";

const patternCache = new Map<string, RegExp>();

export function likeToRegExp(pattern: string, caseInsensitive: boolean): RegExp {
  const key = `${caseInsensitive ? "i" : "s"}:${pattern}`;
  let re = patternCache.get(key);
  if (re) return re;
  let src = "";
  const chars = Array.from(pattern);
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i]!;
    if (c === "\\" && i + 1 < chars.length) src += escapeRegExp(chars[++i]!);
    else if (c === "%") src += "[\\s\\S]*";
    else if (c === "_") src += "[\\s\\S]";
    else src += escapeRegExp(c);
  }
  re = new RegExp(`^${src}$`, caseInsensitive ? "iu" : "u");
  if (patternCache.size > 1000) patternCache.clear();
  patternCache.set(key, re);
  return re;
}

const escapeRegExp = (c: string) => c.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");

export function stringCheck(operation: StringCheckOperation, input: string, reference: string): number {
  switch (operation) {
    case "eq":
      return input === reference ? 1 : 0;
    case "ne":
      return input !== reference ? 1 : 0;
    case "like":
      return likeToRegExp(reference, false).test(input) ? 1 : 0;
    case "ilike":
      return likeToRegExp(reference, true).test(input) ? 1 : 0;
  }
}

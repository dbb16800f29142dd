/**
 * Attribute filters: validation of the request JSON (`validateFilter`) and the reference semantics
 * (`matchesFilter`). Every index implementation must agree with `matchesFilter`; the SQLite one
 * compiles the same rules to SQL, and the tests check the two against each other.
 *
 * Semantics (README.md, "Filters"):
 * - `eq`: the key is present, its value has the filter value's type, and they are equal
 *   (strings exactly, case-sensitive; numbers numerically; booleans).
 * - `ne`: exactly `not eq`, so a file WITHOUT the key matches `ne`, and so does a value of another
 *   type (`{"ne": 1}` matches "1").
 * - `gt`/`gte`/`lt`/`lte`: the value must be a number; only numeric attributes can match (a string
 *   attribute never compares with a number, a missing key never matches).
 * - `in`: the key is present and its value (string or number) equals one element of the array,
 *   type included; `nin` is exactly `not in`. `in []` matches nothing, `nin []` everything.
 * - `and`/`or`: all / any of `filters`; `and []` matches everything, `or []` nothing.
 */
import type { AttributeValue, Attributes, ComparisonType, Filter } from "./types.js";

/** Compound filters nested deeper than this are rejected. */
export const MAX_FILTER_DEPTH = 10;
/** At most this many comparisons in one filter (bounds the SQL a filter compiles to). */
export const MAX_FILTER_COMPARISONS = 256;
/** At most this many values in one `in`/`nin` array. */
export const MAX_FILTER_VALUES = 1000;

const COMPARISONS: readonly ComparisonType[] = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"];
const TYPES = [...COMPARISONS, "and", "or"];

/** A bad filter; `path` is the JSON path of the offending part (`filters.filters[1].type`). */
export class FilterError extends Error {
  override name = "FilterError";
  readonly path: string;

  constructor(path: string, message: string) {
    super(message);
    this.path = path;
  }
}

function describe(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  return typeof v === "object" ? "an object" : `${typeof v} ${JSON.stringify(v)}`;
}

const isFiniteNumber = (v: unknown): v is number => typeof v === "number" && Number.isFinite(v);

/**
 * Checks request JSON against the filter grammar and returns it typed (a fresh object holding only
 * the known fields). Throws `FilterError` naming the JSON path of the first bad part.
 */
export function validateFilter(json: unknown, path = "filters"): Filter {
  const budget = { comparisons: 0 };
  return validateNode(json, path, 0, budget);
}

function validateNode(json: unknown, path: string, depth: number, budget: { comparisons: number }): Filter {
  if (json === null || typeof json !== "object" || Array.isArray(json)) {
    throw new FilterError(path, `Invalid type for '${path}': expected a filter object, got ${describe(json)}.`);
  }
  const obj = json as Record<string, unknown>;
  const type = obj.type;
  if (type === undefined) throw new FilterError(`${path}.type`, `Missing required parameter: '${path}.type'.`);
  if (typeof type !== "string" || !TYPES.includes(type)) {
    throw new FilterError(
      `${path}.type`,
      `Invalid value for '${path}.type': expected one of ${TYPES.join(", ")}, got ${describe(type)}.`,
    );
  }

  if (type === "and" || type === "or") {
    rejectUnknown(obj, path, ["type", "filters"]);
    if (depth >= MAX_FILTER_DEPTH) {
      throw new FilterError(path, `'${path}' nests compound filters more than ${MAX_FILTER_DEPTH} levels deep.`);
    }
    const filters = obj.filters;
    if (filters === undefined) throw new FilterError(`${path}.filters`, `Missing required parameter: '${path}.filters'.`);
    if (!Array.isArray(filters)) {
      throw new FilterError(`${path}.filters`, `Invalid type for '${path}.filters': expected an array, got ${describe(filters)}.`);
    }
    return { type, filters: filters.map((f, i) => validateNode(f, `${path}.filters[${i}]`, depth + 1, budget)) };
  }

  rejectUnknown(obj, path, ["type", "key", "value"]);
  if (++budget.comparisons > MAX_FILTER_COMPARISONS) {
    throw new FilterError(path, `Too many comparisons in the filter (at most ${MAX_FILTER_COMPARISONS}).`);
  }
  const key = obj.key;
  if (key === undefined) throw new FilterError(`${path}.key`, `Missing required parameter: '${path}.key'.`);
  if (typeof key !== "string" || key.length === 0) {
    throw new FilterError(`${path}.key`, `Invalid type for '${path}.key': expected a non-empty string, got ${describe(key)}.`);
  }
  if (!("value" in obj)) throw new FilterError(`${path}.value`, `Missing required parameter: '${path}.value'.`);
  const value = obj.value;
  const vpath = `${path}.value`;
  switch (type as ComparisonType) {
    case "eq":
    case "ne":
      if (typeof value !== "string" && typeof value !== "boolean" && !isFiniteNumber(value)) {
        throw new FilterError(vpath, `Invalid type for '${vpath}': '${type}' needs a string, number or boolean, got ${describe(value)}.`);
      }
      return { type: type as ComparisonType, key, value };
    case "gt":
    case "gte":
    case "lt":
    case "lte":
      if (!isFiniteNumber(value)) {
        throw new FilterError(vpath, `Invalid type for '${vpath}': '${type}' needs a number, got ${describe(value)}.`);
      }
      return { type: type as ComparisonType, key, value };
    default: {
      // in / nin
      if (!Array.isArray(value)) {
        throw new FilterError(vpath, `Invalid type for '${vpath}': '${type}' needs an array of strings or numbers, got ${describe(value)}.`);
      }
      if (value.length > MAX_FILTER_VALUES) {
        throw new FilterError(vpath, `'${vpath}' has ${value.length} values; at most ${MAX_FILTER_VALUES} are allowed.`);
      }
      value.forEach((v, i) => {
        if (typeof v !== "string" && !isFiniteNumber(v)) {
          throw new FilterError(`${vpath}[${i}]`, `Invalid type for '${vpath}[${i}]': expected a string or number, got ${describe(v)}.`);
        }
      });
      return { type: type as ComparisonType, key, value: [...(value as Array<string | number>)] };
    }
  }
}

function rejectUnknown(obj: Record<string, unknown>, path: string, allowed: string[]): void {
  for (const k of Object.keys(obj)) {
    if (!allowed.includes(k)) throw new FilterError(`${path}.${k}`, `Unrecognized filter parameter: '${path}.${k}'.`);
  }
}

/** Same type (number, string, boolean) and equal. */
function sameValue(attr: AttributeValue, v: AttributeValue): boolean {
  return typeof attr === typeof v && attr === v;
}

/** Does a file with these attributes match? The reference semantics (see the top of this file). */
export function matchesFilter(filter: Filter, attributes: Attributes): boolean {
  switch (filter.type) {
    case "and":
      return filter.filters.every((f) => matchesFilter(f, attributes));
    case "or":
      return filter.filters.some((f) => matchesFilter(f, attributes));
    case "ne":
    case "nin":
      return !matchesFilter({ ...filter, type: filter.type === "ne" ? "eq" : "in" }, attributes);
  }
  const has = Object.prototype.hasOwnProperty.call(attributes, filter.key);
  if (!has) return false;
  const attr = attributes[filter.key]!;
  const v = filter.value;
  switch (filter.type) {
    case "eq":
      return sameValue(attr, v as AttributeValue);
    case "in":
      return typeof attr !== "boolean" && (v as Array<string | number>).some((x) => sameValue(attr, x));
    default: {
      if (typeof attr !== "number" || typeof v !== "number") return false;
      if (filter.type === "gt") return attr > v;
      if (filter.type === "gte") return attr >= v;
      if (filter.type === "lt") return attr < v;
      return attr <= v;
    }
  }
}

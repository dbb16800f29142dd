/**
 * Filters as SQL over `search_attrs` (schema.ts): attribute values are stored with a type tag so
 * a comparison matches only values of its own type, as filter.ts defines.
 */
import type { AttributeValue, ComparisonFilter, Filter } from "./types.js";

export function typeTag(v: AttributeValue): "s" | "n" | "b" {
  return typeof v === "string" ? "s" : typeof v === "number" ? "n" : "b";
}

/** SQLite has no booleans: store and bind them as 0/1 next to the `b` type tag. */
export const sqlValue = (v: AttributeValue): string | number => (typeof v === "boolean" ? (v ? 1 : 0) : v);

/**
 * Compiles a (validated) filter to a SQL condition on `<ref>.file_id`, pushing its parameters.
 * Each comparison is `file_id IN (files of this store whose attribute matches)`: an uncorrelated
 * subquery SQLite evaluates once per statement through `search_attrs_by_value`. `ne`/`nin` are
 * `NOT` of `eq`/`in`, so they match files without the key (see filter.ts).
 */
export function compileFilter(filter: Filter, ref: string, storeId: string, params: unknown[]): string {
  switch (filter.type) {
    case "and":
    case "or": {
      if (filter.filters.length === 0) return filter.type === "and" ? "1" : "0";
      const parts = filter.filters.map((f) => compileFilter(f, ref, storeId, params));
      return `(${parts.join(filter.type === "and" ? " AND " : " OR ")})`;
    }
    case "ne":
    case "nin":
      return `NOT ${compileFilter({ ...filter, type: filter.type === "ne" ? "eq" : "in" }, ref, storeId, params)}`;
  }
  const f = filter as ComparisonFilter;
  const files = (cond: string, values: unknown[]) => {
    params.push(storeId, f.key, ...values);
    return `${ref}.file_id IN (SELECT a.file_id FROM search_attrs a WHERE a.store_id = ? AND a.key = ? AND ${cond})`;
  };
  switch (f.type) {
    case "eq": {
      const v = f.value as AttributeValue;
      return files(`a.type = '${typeTag(v)}' AND a.value = ?`, [sqlValue(v)]);
    }
    case "in": {
      const list = f.value as Array<string | number>;
      const strings = list.filter((x) => typeof x === "string");
      const numbers = list.filter((x) => typeof x === "number");
      const conds: string[] = [];
      if (strings.length) conds.push(`(a.type = 's' AND a.value IN (${strings.map(() => "?").join(", ")}))`);
      if (numbers.length) conds.push(`(a.type = 'n' AND a.value IN (${numbers.map(() => "?").join(", ")}))`);
      if (conds.length === 0) return "0";
      return files(`(${conds.join(" OR ")})`, [...strings, ...numbers]);
    }
    default: {
      const op = { gt: ">", gte: ">=", lt: "<", lte: "<=" }[f.type as "gt" | "gte" | "lt" | "lte"];
      return files(`a.type = 'n' AND a.value ${op} ?`, [f.value]);
    }
  }
}

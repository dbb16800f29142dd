/**
 * Filters as PostgreSQL conditions over `search_attrs` (schema.ts). Values keep their type: a
 * string compares only with `value_text` of a `s` row, a number with `value_num` of a `n` row, a
 * boolean with `value_num` (0/1) of a `b` row, as filter.ts defines (`matchesFilter`).
 */
import type { AttributeValue, ComparisonFilter, Filter } from "../types.js";

export function typeTag(v: AttributeValue): "s" | "n" | "b" {
  return typeof v === "string" ? "s" : typeof v === "number" ? "n" : "b";
}

/** The (value_text, value_num) pair an attribute value is stored as. */
export function attrColumns(v: AttributeValue): [string | null, number | null] {
  if (typeof v === "string") return [v, null];
  return [null, typeof v === "boolean" ? (v ? 1 : 0) : v];
}

/**
 * Compiles a (validated) filter to a condition on `<ref>.file_id`, pushing its parameters onto
 * `params` ($n placeholders continue from its length). Each comparison is `file_id IN (files of
 * this store whose attribute matches)`, an uncorrelated subquery; `ne`/`nin` are NOT of `eq`/`in`,
 * so they match files without the key.
 */
export function compilePgFilter(filter: Filter, ref: string, storeOrd: number, params: unknown[]): string {
  switch (filter.type) {
    case "and":
    case "or": {
      if (filter.filters.length === 0) return filter.type === "and" ? "TRUE" : "FALSE";
      const parts = filter.filters.map((f) => compilePgFilter(f, ref, storeOrd, params));
      return `(${parts.join(filter.type === "and" ? " AND " : " OR ")})`;
    }
    case "ne":
    case "nin":
      return `NOT ${compilePgFilter({ ...filter, type: filter.type === "ne" ? "eq" : "in" }, ref, storeOrd, params)}`;
  }
  const f = filter as ComparisonFilter;
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  // The store and key placeholders come first, then the condition's own.
  const files = (cond: () => string) => {
    const store = p(storeOrd);
    const key = p(f.key);
    return `${ref}.file_id IN (SELECT a.file_id FROM search_attrs a WHERE a.store_ord = ${store} AND a.key = ${key} AND ${cond()})`;
  };
  switch (f.type) {
    case "eq": {
      const v = f.value as AttributeValue;
      const [text, num] = attrColumns(v);
      return files(() => (text !== null ? `a.type = 's' AND a.value_text = ${p(text)}` : `a.type = '${typeTag(v)}' AND a.value_num = ${p(num)}`));
    }
    case "in": {
      const list = f.value as Array<string | number>;
      const strings = list.filter((x) => typeof x === "string");
      const numbers = list.filter((x) => typeof x === "number");
      if (strings.length === 0 && numbers.length === 0) return "FALSE";
      return files(() => {
        const conds: string[] = [];
        if (strings.length) conds.push(`(a.type = 's' AND a.value_text = ANY(${p(strings)}::text[]))`);
        if (numbers.length) conds.push(`(a.type = 'n' AND a.value_num = ANY(${p(numbers)}::float8[]))`);
        return `(${conds.join(" OR ")})`;
      });
    }
    default: {
      const op = { gt: ">", gte: ">=", lt: "<", lte: "<=" }[f.type as "gt" | "gte" | "lt" | "lte"];
      return files(() => `a.type = 'n' AND a.value_num ${op} ${p(f.value)}`);
    }
  }
}

// The standard list parameters (spec 4, "Standard list parameters") and the list envelope (2.1).
import { capChars, MAX_ID_CHARS } from "./caps.js";
import { ApiError, invalidParam } from "./errors.js";
import type { ListQuery, ListPage, StoredRecord } from "../storage/types.js";
import { CursorNotFound } from "../storage/types.js";

export interface ListParams {
  after?: string;
  before?: string;
  limit?: number;
  order?: string;
}

export function listQuery(p: ListParams, opts: { defaultLimit?: number; maxLimit?: number; defaultOrder?: "asc" | "desc" } = {}): ListQuery {
  const max = opts.maxLimit ?? 100;
  const limit = p.limit ?? opts.defaultLimit ?? 20;
  if (!Number.isInteger(limit) || limit < 1 || limit > max)
    throw invalidParam("limit", `Invalid 'limit': expected an integer from 1 to ${max}, got ${limit}.`, "integer_out_of_range");
  const order = p.order ?? opts.defaultOrder ?? "desc";
  if (order !== "asc" && order !== "desc") throw invalidParam("order", `Invalid 'order': expected 'asc' or 'desc', got '${order}'.`);
  capChars(p.after, "after", MAX_ID_CHARS);
  capChars(p.before, "before", MAX_ID_CHARS);
  if (p.after && p.before) throw invalidParam("before", "Give at most one of 'after' and 'before'.");
  return { after: p.after || undefined, before: p.before || undefined, limit, order };
}

/** Runs a list, turning an unknown cursor id into a 400 that names the parameter. */
export async function runList<T>(q: ListQuery, run: (q: ListQuery) => Promise<ListPage<T>>): Promise<ListPage<T>> {
  try {
    return await run(q);
  } catch (e) {
    if (e instanceof CursorNotFound) {
      const param = q.after ? "after" : "before";
      throw new ApiError(400, `Invalid '${param}': no object with id '${q.after ?? q.before}' in this list.`, { param, code: "invalid_cursor" });
    }
    throw e;
  }
}

export function envelope<T, M>(page: ListPage<T>, map: (r: StoredRecord<T>) => M & { id: string }) {
  const data = page.records.map(map);
  return {
    object: "list",
    data,
    firstId: data.length ? data[0].id : undefined,
    lastId: data.length ? data[data.length - 1].id : undefined,
    hasMore: page.hasMore,
  };
}

// The batch input file, line by line (spec 8; platform facts "Batches"): JSONL, at most 50,000
// requests, each `{custom_id, method: "POST", url, body}` with a unique custom_id and `url` equal
// to the batch's endpoint. Read as a stream: memory does not grow with the file.
import { createInterface } from "node:readline";
import type { BlobStore } from "../../storage/types.js";
import { TurnTaker } from "../../common/yield.js";

export const MAX_REQUESTS = 50_000;
/** Errors listed in errors.data at most (the first ones, in line order). */
export const MAX_LISTED_ERRORS = 100;

export interface InputLine {
  /** 1-based line number in the file. */
  line: number;
  customId: string;
  body: Record<string, unknown>;
}

export interface LineError {
  code: string;
  line: number | null;
  message: string;
  param: string | null;
}

type Line = { line: number; text: string };

/**
 * Non-blank lines of a blob with their 1-based numbers, in arrays of up to `n` (one await per
 * array, not per line). A small blob is read whole: readline costs more than the parsing.
 */
export async function* fileLines(blobs: BlobStore, key: string, n = 1000): AsyncGenerator<Line[]> {
  const size = await blobs.size(key);
  let out: Line[] = [];
  if (size !== undefined && size <= KEEP_PARSED_BYTES) {
    const chunks: Buffer[] = [];
    for await (const c of blobs.get(key)) chunks.push(c as Buffer);
    const all = Buffer.concat(chunks).toString("utf8").split("\n");
    for (let i = 0; i < all.length; i++) {
      const text = all[i]!.endsWith("\r") ? all[i]!.slice(0, -1) : all[i]!;
      if (!text.trim()) continue;
      out.push({ line: i + 1, text });
      if (out.length >= n) {
        yield out;
        out = [];
      }
    }
  } else {
    let i = 0;
    for await (const text of createInterface({ input: blobs.get(key), crlfDelay: Infinity })) {
      i++;
      if (!text.trim()) continue;
      out.push({ line: i, text });
      if (out.length >= n) {
        yield out;
        out = [];
      }
    }
  }
  if (out.length) yield out;
}

/** One line checked; a LineError when it is not a request of this batch. */
export function parseLine(text: string, line: number, endpoint: string): InputLine | LineError {
  let v: any;
  try {
    v = JSON.parse(text);
  } catch {
    return { code: "invalid_json_line", line, message: `Line ${line} is not valid JSON.`, param: null };
  }
  if (!v || typeof v !== "object" || Array.isArray(v)) return { code: "invalid_request", line, message: `Line ${line} must be a JSON object.`, param: null };
  if (typeof v.custom_id !== "string" || !v.custom_id)
    return { code: "missing_custom_id", line, message: `Line ${line} has no 'custom_id' (a non-empty string).`, param: "custom_id" };
  if (v.method !== "POST") return { code: "invalid_method", line, message: `Line ${line}: 'method' must be "POST", got ${JSON.stringify(v.method)}.`, param: "method" };
  if (v.url !== endpoint)
    return { code: "mismatched_endpoint", line, message: `Line ${line}: 'url' is ${JSON.stringify(v.url)}, but the batch's endpoint is '${endpoint}'; every request must use it.`, param: "url" };
  if (!v.body || typeof v.body !== "object" || Array.isArray(v.body)) return { code: "invalid_body", line, message: `Line ${line}: 'body' must be a JSON object.`, param: "body" };
  return { line, customId: v.custom_id, body: v.body };
}

/** Files up to this size keep their parsed lines in memory from validation to the run (read once). */
export const KEEP_PARSED_BYTES = 16 * 1024 * 1024;

/** Checks the whole file: the number of requests, or the errors (line order, at most MAX_LISTED_ERRORS). */
export async function checkInput(
  blobs: BlobStore,
  key: string,
  endpoint: string,
  opts: { keep?: boolean } = {},
): Promise<{ total: number; model: string | null; errors: LineError[]; lines?: InputLine[] }> {
  const kept: InputLine[] | undefined = opts.keep ? [] : undefined;
  const seen = new Set<string>();
  const errors: LineError[] = [];
  let total = 0;
  let model: string | null = null;
  const turns = new TurnTaker();
  outer: for await (const lines of fileLines(blobs, key)) {
    for (const { line, text } of lines) {
      const turn = turns.check();
      if (turn) await turn;
      total++;
      if (total > MAX_REQUESTS) {
        errors.push({ code: "too_many_requests", line, message: `The input file has more than ${MAX_REQUESTS} requests; split it into several batches.`, param: null });
        break outer;
      }
      const r = parseLine(text, line, endpoint);
      if ("code" in r) {
        if (errors.length < MAX_LISTED_ERRORS) errors.push(r);
        continue;
      }
      if (seen.has(r.customId)) {
        if (errors.length < MAX_LISTED_ERRORS) errors.push({ code: "duplicate_custom_id", line, message: `Line ${line}: custom_id '${r.customId}' is used by an earlier line; custom_ids must be unique.`, param: "custom_id" });
        continue;
      }
      seen.add(r.customId);
      kept?.push(r);
      if (model === null && typeof r.body.model === "string") model = r.body.model;
    }
  }
  if (total === 0) errors.push({ code: "empty_file", line: null, message: "The input file has no requests.", param: null });
  return { total, model, errors, lines: errors.length ? undefined : kept };
}

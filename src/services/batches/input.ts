// The batch input file (spec 8; platform facts "Batches"): JSONL, at most 50,000 requests, each
// `{custom_id, method: "POST", url, body}` with a unique custom_id and `url` equal to the batch's
// endpoint. It is read as a stream and cut into chunks of requests (RequestChunk): bytes, not
// parsed objects, so that a chunk crosses to a worker thread as one copy and memory does not grow
// with the file. Checking a chunk (checkChunk) is the same function on the main thread and in a
// worker; merging the chunks' checks in file order (InputCheck) finds duplicates and keeps the
// first errors.
import { isAscii } from "node:buffer";

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

/**
 * Requests (non-blank lines) of the input file, back to back: request i is the UTF-8 text
 * bytes[starts[i], ends[i]) (line end and a trailing CR left out), on line lines[i] (1-based).
 */
export interface RequestChunk {
  bytes: Uint8Array;
  starts: Uint32Array;
  ends: Uint32Array;
  lines: Uint32Array;
}

export const chunkSize = (c: RequestChunk) => c.lines.length;

/**
 * The requests' texts: `text(i)` is request i's. An all-ASCII chunk (common: many JSON writers
 * escape every non-ASCII character, and English prompts have none) is decoded once and cut, since
 * there a byte offset is a character offset; any other is decoded line by line.
 */
export function requestTexts(c: RequestChunk): (i: number) => string {
  const buf = Buffer.from(c.bytes.buffer, c.bytes.byteOffset, c.bytes.byteLength);
  if (isAscii(buf)) {
    const all = buf.toString("latin1");
    return (i) => all.slice(c.starts[i], c.ends[i]);
  }
  return (i) => buf.toString("utf8", c.starts[i], c.ends[i]);
}

/** Requests [from, to) as a chunk of their own (a compact copy: what is sent to a worker). */
export function subChunk(c: RequestChunk, from: number, to: number): RequestChunk {
  const base = c.starts[from]!;
  const end = to > from ? c.ends[to - 1]! : base;
  const starts = c.starts.slice(from, to);
  const ends = c.ends.slice(from, to);
  for (let i = 0; i < starts.length; i++) {
    starts[i]! -= base;
    ends[i]! -= base;
  }
  return { bytes: c.bytes.slice(base, end), starts, ends, lines: c.lines.slice(from, to) };
}

/** The buffers a chunk can be moved with (postMessage's transfer list). */
export const chunkBuffers = (c: RequestChunk) => [c.bytes.buffer, c.starts.buffer, c.ends.buffer, c.lines.buffer] as ArrayBuffer[];

/** A line of nothing but whitespace (as String.prototype.trim sees it) is blank. */
function isBlank(src: Buffer, start: number, end: number): boolean {
  for (let i = start; i < end; i++) {
    const b = src[i]!;
    if (b === 0x20 || (b >= 0x09 && b <= 0x0d)) continue;
    // Other Unicode spaces (NBSP, BOM, ...) count as blank too, as trim() says.
    return b < 0x80 ? false : src.toString("utf8", i, end).trim() === "";
  }
  return true;
}

/**
 * Gathers requests into one chunk. The lines of one piece of input are contiguous, so they are
 * kept as spans of the pieces they came in and copied once, when the chunk is taken.
 */
class ChunkBuilder {
  private parts: Uint8Array[] = [];
  private partsLength = 0;
  /** The open span: src[spanStart, spanEnd) holds the lines added since it opened. */
  private src: Buffer | null = null;
  private spanStart = 0;
  private spanEnd = 0;
  private starts: number[] = [];
  private ends: number[] = [];
  private lines: number[] = [];

  get count(): number {
    return this.lines.length;
  }

  /** The bytes the chunk would hold if taken now. */
  get byteLength(): number {
    return this.partsLength + (this.src ? this.spanEnd - this.spanStart : 0);
  }

  /** The line src[start, end) (without its LF), number `line`; blank lines are skipped. */
  add(src: Buffer, start: number, end: number, line: number): void {
    if (end > start && src[end - 1] === 0x0d) end--;
    if (isBlank(src, start, end)) return;
    if (src !== this.src || start < this.spanEnd) {
      this.closeSpan();
      this.src = src;
      this.spanStart = start;
    }
    // The span runs on over what lies between lines (line ends, blank lines): they are copied
    // with the requests, and no request's offsets include them.
    const at = this.partsLength + (start - this.spanStart);
    this.starts.push(at);
    this.ends.push(at + (end - start));
    this.lines.push(line);
    this.spanEnd = end;
  }

  private closeSpan(): void {
    if (!this.src) return;
    this.parts.push(this.src.subarray(this.spanStart, this.spanEnd));
    this.partsLength += this.spanEnd - this.spanStart;
    this.src = null;
  }

  take(): RequestChunk {
    this.closeSpan();
    // A buffer of its own (never a slice of Node's shared pool): it may be moved to a worker.
    const bytes = new Uint8Array(this.partsLength);
    let at = 0;
    for (const p of this.parts) {
      bytes.set(p, at);
      at += p.length;
    }
    const chunk: RequestChunk = { bytes, starts: Uint32Array.from(this.starts), ends: Uint32Array.from(this.ends), lines: Uint32Array.from(this.lines) };
    this.parts = [];
    this.partsLength = 0;
    this.starts = [];
    this.ends = [];
    this.lines = [];
    return chunk;
  }
}

/** A chunk also ends once its lines reach this many bytes (one longer line is a chunk of its own). */
export const CHUNK_MAX_BYTES = 4 * 1024 * 1024;

/**
 * The input's requests in chunks of `size` requests or CHUNK_MAX_BYTES, whichever comes first, in
 * file order. Lines end at LF (a CR before it is dropped; a lone CR ends nothing).
 */
export async function* requestChunks(input: AsyncIterable<Uint8Array>, size: number): AsyncGenerator<RequestChunk> {
  const chunk = new ChunkBuilder();
  const full = () => chunk.count >= size || chunk.byteLength >= CHUNK_MAX_BYTES;
  let line = 0;
  // The start of a line that a piece ended in the middle of.
  let carry: Buffer[] = [];
  for await (const data of input) {
    const piece = data as Buffer;
    let start = 0;
    let nl = piece.indexOf(0x0a);
    if (carry.length && nl !== -1) {
      carry.push(piece.subarray(0, nl));
      const whole = Buffer.concat(carry);
      carry = [];
      chunk.add(whole, 0, whole.length, ++line);
      if (full()) yield chunk.take();
      start = nl + 1;
      nl = piece.indexOf(0x0a, start);
    }
    for (; nl !== -1; nl = piece.indexOf(0x0a, start)) {
      chunk.add(piece, start, nl, ++line);
      if (full()) yield chunk.take();
      start = nl + 1;
    }
    if (start < piece.length) carry.push(piece.subarray(start));
  }
  if (carry.length) {
    const whole = Buffer.concat(carry);
    chunk.add(whole, 0, whole.length, ++line);
  }
  if (chunk.count) yield chunk.take();
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
    return { code: "missing_required_parameter", line, message: `Line ${line} has no 'custom_id' (a non-empty string).`, param: "custom_id" };
  if (v.method !== "POST") return { code: "invalid_method", line, message: `Line ${line}: 'method' must be "POST", got ${JSON.stringify(v.method)}.`, param: "method" };
  if (v.url !== endpoint)
    return { code: "invalid_url", line, message: `Line ${line}: 'url' is ${JSON.stringify(v.url)}, but the batch's endpoint is '${endpoint}'; every request must use it.`, param: "url" };
  if (!v.body || typeof v.body !== "object" || Array.isArray(v.body)) return { code: "invalid_body", line, message: `Line ${line}: 'body' must be a JSON object.`, param: "body" };
  // A batch answers each request once, as a whole: the platform refuses the file rather than the line.
  if (v.body.stream === true)
    return { code: "streaming_unsupported", line, message: `Line ${line}: batch requests cannot stream; remove 'body.stream' or set it to false.`, param: "body.stream" };
  return { line, customId: v.custom_id, body: v.body };
}

/** What one chunk's lines say on their own (duplicates across chunks are InputCheck's to find). */
export interface ChunkCheck {
  /** Each request's custom_id, or null where the line is not a valid request. */
  customIds: (string | null)[];
  /** The chunk's first MAX_LISTED_ERRORS line errors, in line order. */
  errors: LineError[];
  /** body.model of the first valid request that has one. */
  model: string | null;
}

/** Checks a chunk's lines; with `parsed`, each valid request is put there (at its index) for running. */
export function checkChunk(c: RequestChunk, endpoint: string, parsed?: InputLine[]): ChunkCheck {
  const customIds: (string | null)[] = new Array(c.lines.length);
  const errors: LineError[] = [];
  let model: string | null = null;
  const text = requestTexts(c);
  for (let i = 0; i < c.lines.length; i++) {
    const r = parseLine(text(i), c.lines[i]!, endpoint);
    if ("code" in r) {
      customIds[i] = null;
      if (errors.length < MAX_LISTED_ERRORS) errors.push(r);
      continue;
    }
    customIds[i] = r.customId;
    if (parsed) parsed[i] = r;
    if (model === null && typeof r.body.model === "string") model = r.body.model;
  }
  return { customIds, errors, model };
}

/** The whole file's verdict, built from its chunks' checks in file order. */
export class InputCheck {
  total = 0;
  model: string | null = null;
  errors: LineError[] = [];
  private readonly seen = new Set<string>();
  /** Set once the file has more than MAX_REQUESTS requests: later chunks are not looked at. */
  private over = false;

  add(c: RequestChunk, check: ChunkCheck): void {
    if (this.over) return;
    const found: LineError[] = [];
    let n = c.lines.length;
    if (this.total + n > MAX_REQUESTS) {
      // As a line-by-line reading would: everything before the first request too many, then that error.
      n = MAX_REQUESTS - this.total;
      this.over = true;
    }
    for (let i = 0; i < n; i++) {
      const id = check.customIds[i];
      if (id === null || id === undefined) continue;
      if (this.seen.has(id)) {
        found.push({ code: "duplicate_custom_id", line: c.lines[i]!, message: `Line ${c.lines[i]}: custom_id '${id}' is used by an earlier line; custom_ids must be unique.`, param: "custom_id" });
        continue;
      }
      this.seen.add(id);
    }
    const limit = this.over ? c.lines[n]! : Infinity;
    for (const e of check.errors) if (e.line! < limit) found.push(e);
    if (found.length) {
      found.sort((a, b) => a.line! - b.line!);
      for (const e of found) if (this.errors.length < MAX_LISTED_ERRORS) this.errors.push(e);
    }
    if (this.model === null && check.model !== null) this.model = check.model;
    this.total += n;
    if (this.over) {
      this.total++;
      this.errors.push({ code: "too_many_requests", line: c.lines[n]!, message: `The input file has more than ${MAX_REQUESTS} requests; split it into several batches.`, param: null });
    }
  }

  /** The check is settled: nothing after this chunk can change it. */
  get finished(): boolean {
    return this.over;
  }

  end(): { total: number; model: string | null; errors: LineError[] } {
    if (this.total === 0) this.errors.push({ code: "empty_file", line: null, message: "The input file has no requests.", param: null });
    return { total: this.total, model: this.model, errors: this.errors };
  }
}

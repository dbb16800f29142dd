// REST request bodies as JSON. A large body is decoded and parsed on a worker thread: a 1 MB
// body costs the event loop ~5 ms of UTF-8 decoding and JSON.parse, and ~2 MB of short-lived
// strings whose collection pauses every other request again; off the thread, what the loop does
// is take the parsed value back (a structured clone: a copy, no parsing). Small bodies, most of
// them, are parsed here, where a hand-off would cost more than the parse.
import { WorkerPool, workerScript } from "../../engines/pool/index.js";
import { ApiError } from "../../common/errors.js";

/** Bodies of at least this many bytes are parsed on the worker. */
export const OFF_THREAD_JSON_BYTES = 256 * 1024;

/** The worker's answer: the value, or where the text stopped being JSON (null: the end). */
export type ParseReply = { value: unknown } | { invalidAt: number | null };

/** Whether the body's first byte after ASCII whitespace is "{" or "[" (a JSON body under another label). */
export function opensAsJson(body: Buffer): boolean {
  let i = 0;
  while (i < body.length && (body[i] === 0x20 || (body[i]! >= 0x09 && body[i]! <= 0x0d))) i++;
  return body[i] === 0x7b || body[i] === 0x5b;
}

/** The body as JSON, in this thread; throws the platform's 400 `invalid_json`. */
export function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  const r = parseJsonBytes(body);
  if ("invalidAt" in r) throw invalidJson(r.invalidAt);
  return r.value;
}

/** The parse itself, shared with the worker: one UTF-8 decode of the whole body, then JSON.parse. */
export function parseJsonBytes(body: Uint8Array): ParseReply {
  try {
    // Fastify's parseAs "string" decodes chunk by chunk and concatenates, ~8 ms per MB more.
    return { value: JSON.parse(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString("utf8")) };
  } catch (e) {
    // Only where the parser stopped, never its excerpt of the body: the body may hold secrets.
    const at = /at position (\d+)/.exec((e as Error).message);
    return { invalidAt: at ? Number(at[1]) : null };
  }
}

function invalidJson(at: number | null): ApiError {
  return new ApiError(
    400,
    `We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The platform expects a JSON payload, but what was sent was not valid JSON.) ${at !== null ? `The JSON is invalid at position ${at}.` : "The JSON is incomplete or invalid."}`,
    { code: "invalid_json" },
  );
}

/** Parses bodies, the large ones on a worker thread started on first use. */
export class JsonBodies {
  private pool: WorkerPool<Uint8Array, ParseReply> | undefined;
  private closed = false;

  constructor(private readonly offThreadBytes = OFF_THREAD_JSON_BYTES) {}

  parse(body: Buffer): unknown | Promise<unknown> {
    if (body.length < this.offThreadBytes || this.closed) return parseJsonBody(body);
    this.pool ??= new WorkerPool<Uint8Array, ParseReply>({ script: workerScript(import.meta.url, "json-body-worker"), size: 1, name: "atrium-json-body" });
    // A buffer that owns its memory moves to the worker; a view into a larger one is copied.
    const own = body.byteOffset === 0 && body.byteLength === body.buffer.byteLength;
    return this.pool.run(body, own ? { transfer: [body.buffer as ArrayBuffer] } : {}).then(
      (r) => {
        if ("invalidAt" in r) throw invalidJson(r.invalidAt);
        return r.value;
      },
      (e) => {
        // The worker is gone (closing, crashed): the body is still here when it was copied.
        if (!own) return parseJsonBody(body);
        throw e;
      },
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.pool?.close();
  }
}

// The one REST shape no google.api.http annotation expresses: multipart/form-data uploads.
// Each area declares the shapes of its uploads (its ApiArea's `multipart`), and they are mapped here,
// once, onto the same client-streaming RPCs Connect and gRPC callers use: the form's text fields (with `a[b]` naming nested field a.b) and the path parameters fill
// request messages, and the file part is streamed as a sequence of messages carrying one chunk
// each, so a 512 MB upload never sits in memory.
import busboy from "busboy";
import type { IncomingHttpHeaders } from "node:http";
import type { Readable } from "node:stream";
import { create, type DescField, type DescMessage } from "@bufbuild/protobuf";
import { ApiError } from "../../common/errors.js";
import { decodeStringValue } from "../../common/rest-json.js";

export interface MultipartShape {
  /** Name of the form part that carries the bytes. */
  file: string;
  /** Request field that receives each chunk of those bytes. */
  chunk: string;
  /** Request field that receives the part's filename, if any. */
  filename?: string;
  /** The route also takes an application/json body, decoded as ONE request message (`body: "*"`). */
  json?: boolean;
  /** The file part may be absent (a form of text fields only: the SDK sends every video call as multipart). */
  fileOptional?: boolean;
  /** Largest text field in bytes (default 64 KiB); a base64 data URL in a field needs more. */
  maxFieldBytes?: number;
}

const MAX_FORM_FIELDS = 64;
const MAX_FORM_PARTS = 80;

type Event =
  | { kind: "field"; name: string; value: string; truncated: boolean }
  | { kind: "file"; name: string; stream: Readable; filename: string }
  | { kind: "end" }
  | { kind: "error"; error: unknown };

/** A minimal push→pull queue between busboy's events and the RPC's request stream. */
class EventQueue {
  private items: Event[] = [];
  private waiter: ((e: Event) => void) | undefined;
  push(e: Event) {
    const w = this.waiter;
    if (w) {
      this.waiter = undefined;
      w(e);
    } else this.items.push(e);
  }
  next(): Promise<Event> {
    const e = this.items.shift();
    if (e) return Promise.resolve(e);
    return new Promise((resolve) => (this.waiter = resolve));
  }
}

export function setPath(desc: DescMessage, init: Record<string, unknown>, formName: string | undefined, raw: string) {
  // busboy reports a part with `name=""` (or none) as an undefined name.
  if (!formName) throw new ApiError(400, "A form part has no name: every field needs a non-empty `name` in its Content-Disposition.", { code: "invalid_multipart" });
  // "expires_after[seconds]" → ["expires_after", "seconds"]
  const parts = formName.replace(/\]/g, "").split("[");
  let d: DescMessage = desc;
  let target = init;
  for (let i = 0; i < parts.length; i++) {
    const f: DescField | undefined = d.fields.find((x) => x.name === parts[i]);
    const path = parts.slice(0, i + 1).join(".");
    if (!f) throw new ApiError(400, `Unrecognized request argument supplied: ${formName}`, { param: formName, code: "unknown_parameter" });
    if (i === parts.length - 1) {
      if (f.fieldKind === "list") {
        const arr = (target[f.localName] as unknown[]) ?? [];
        arr.push(decodeStringValue(f, raw, path));
        target[f.localName] = arr;
      } else target[f.localName] = decodeStringValue(f, raw, path);
      return;
    }
    if (f.fieldKind !== "message")
      throw new ApiError(400, `Unrecognized request argument supplied: ${formName}`, { param: formName, code: "unknown_parameter" });
    target = (target[f.localName] as Record<string, unknown>) ?? (target[f.localName] = {});
    d = f.message;
  }
}

/** Shapes name fields as the proto does (`video_chunk`); messages are built from local names (`videoChunk`). */
const localName = (desc: DescMessage, name: string) => desc.fields.find((f) => f.name === name)?.localName ?? name;

function malformed(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  return new ApiError(400, `Malformed multipart/form-data request: ${(e as Error)?.message ?? e}`, { code: "invalid_multipart" });
}

/**
 * The chunks of a byte stream, each as busboy pushed it. `for await` over the stream itself calls
 * read(), which joins everything buffered into one new Buffer: a copy of the whole upload, and as
 * much garbage. Here chunks pass through as they are; the stream is paused while a few wait.
 * Same contract as the stream's own iterator: its error (or a close before its end) is thrown,
 * and a consumer that stops early destroys it.
 */
async function* chunksOf(stream: Readable): AsyncGenerator<Buffer> {
  if (stream.errored) throw stream.errored;
  if (stream.readableEnded) return;
  const queue: Buffer[] = [];
  let ended = false;
  let failure: { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onData = (chunk: Buffer) => {
    queue.push(chunk);
    if (queue.length >= 8) stream.pause();
    notify();
  };
  const onEnd = () => {
    ended = true;
    notify();
  };
  const onError = (error: unknown) => {
    failure ??= { error };
    notify();
  };
  const onClose = () => {
    if (!ended) failure ??= { error: stream.errored ?? new Error("the file stream closed before its end") };
    notify();
  };
  stream.on("data", onData);
  stream.on("end", onEnd);
  stream.on("error", onError);
  stream.on("close", onClose);
  if (stream.destroyed) onClose();
  let finished = false;
  try {
    for (;;) {
      const chunk = queue.shift();
      if (chunk !== undefined) {
        if (queue.length < 2 && !ended && stream.isPaused()) stream.resume();
        yield chunk;
        continue;
      }
      if (failure) throw failure.error;
      if (ended) {
        finished = true;
        return;
      }
      await new Promise<void>((resolve) => (wake = resolve));
    }
  } finally {
    stream.off("data", onData);
    stream.off("end", onEnd);
    stream.off("error", onError);
    stream.off("close", onClose);
    if (!finished) stream.destroy();
  }
}

export function isMultipart(contentType: string | undefined): boolean {
  return !!contentType && contentType.toLowerCase().startsWith("multipart/form-data");
}

/**
 * The request stream of a multipart upload: one message with everything known before the file
 * part, one per file chunk, then one with fields that came after the file (the official SDK
 * sends `file` before `purpose`).
 */
export async function* multipartMessages(
  body: Readable,
  headers: IncomingHttpHeaders,
  desc: DescMessage,
  shape: MultipartShape,
  pathParams: Record<string, unknown>,
): AsyncGenerator<any> {
  let bb: busboy.Busboy;
  try {
    // defParamCharset: browsers, undici's FormData and the official SDKs send the filename as raw
    // UTF-8 in Content-Disposition; busboy's default (latin1) would turn "résumé" into mojibake.
    bb = busboy({
      headers,
      highWaterMark: 1 << 20,
      fileHwm: 1 << 20,
      defParamCharset: "utf8",
      limits: { fieldSize: shape.maxFieldBytes ?? 64 * 1024, fields: MAX_FORM_FIELDS, files: 1, parts: MAX_FORM_PARTS },
    });
  } catch (e) {
    throw new ApiError(400, `Malformed multipart/form-data request: ${(e as Error).message}`, { code: "invalid_multipart" });
  }
  const q = new EventQueue();
  let sawFile = false;
  let current: Readable | undefined;
  let formClosed = false;
  bb.on("field", (name, value, info) => q.push({ kind: "field", name, value, truncated: info.valueTruncated }));
  bb.on("file", (name, stream, info) => {
    current = stream;
    // busboy can fail the file stream in the same tick it hands it over (a body that ends inside
    // the file part); without a listener that error would be an uncaught exception. The consumer
    // still sees it: the stream is destroyed, so iterating it throws.
    stream.on("error", () => {});
    q.push({ kind: "file", name, stream, filename: info.filename ?? "" });
  });
  bb.on("filesLimit", () => q.push({ kind: "error", error: new ApiError(400, "Only one file part is accepted.", { param: shape.file }) }));
  // Past these limits busboy drops parts silently; a form is refused rather than half-read.
  bb.on("fieldsLimit", () => q.push({ kind: "error", error: new ApiError(400, `The form has more than ${MAX_FORM_FIELDS} fields.`, { code: "invalid_multipart" }) }));
  bb.on("partsLimit", () => q.push({ kind: "error", error: new ApiError(400, `The form has more than ${MAX_FORM_PARTS} parts.`, { code: "invalid_multipart" }) }));
  bb.on("close", () => {
    formClosed = true;
    q.push({ kind: "end" });
  });
  bb.on("error", (e) => q.push({ kind: "error", error: malformed(e) }));
  // A client that goes away mid-body never ends the form: fail the stream being read and the
  // queue, so the handler stops and removes its temp file instead of waiting forever.
  const cutOff = () => {
    const error = new ApiError(400, "The request body was cut off before the multipart form was complete.", { code: "invalid_multipart" });
    current?.destroy(error);
    q.push({ kind: "error", error });
  };
  const onClose = () => {
    if (!formClosed && !(body as Readable & { complete?: boolean }).complete) cutOff();
  };
  body.once("close", onClose);
  // The client may have sent its bytes and gone (FIN) while the request was authenticated: the
  // body then closed before this listener existed, and what it held is gone with it (even when
  // it was complete), so the form would never end.
  if (body.destroyed) cutOff();
  body.pipe(bb);
  let pending: Record<string, unknown> = { ...pathParams };
  let hasPending = true;
  let done = false;
  try {
    for (;;) {
      const ev = await q.next();
      if (ev.kind === "error") throw ev.error;
      if (ev.kind === "end") break;
      if (ev.kind === "field") {
        if (ev.truncated) throw new ApiError(400, `Form field '${ev.name}' is too long.`, { param: ev.name });
        setPath(desc, pending, ev.name, ev.value);
        hasPending = true;
        continue;
      }
      if (ev.name !== shape.file) {
        ev.stream.resume();
        throw new ApiError(400, `Unrecognized file part '${ev.name ?? ""}'; send the content as '${shape.file}'.`, { param: ev.name || null, code: "unknown_parameter" });
      }
      sawFile = true;
      if (shape.filename) pending[localName(desc, shape.filename)] = ev.filename;
      yield create(desc, pending as any);
      pending = {};
      hasPending = false;
      try {
        const chunkKey = localName(desc, shape.chunk);
        for await (const chunk of chunksOf(ev.stream)) yield create(desc, { [chunkKey]: chunk } as any);
      } catch (e) {
        // Errors of the form itself ("Unexpected end of form") are the caller's: a 400.
        throw malformed(e);
      }
    }
    if (!sawFile && !shape.fileOptional) throw new ApiError(400, `Missing required parameter: '${shape.file}'.`, { param: shape.file, code: "missing_required_parameter" });
    if (hasPending) yield create(desc, pending as any);
    done = true;
  } finally {
    body.removeListener("close", onClose);
    if (!done) {
      // The handler stopped early (an error): drop the rest of the body without parsing it.
      body.unpipe(bb);
      bb.removeAllListeners();
      bb.on("error", () => {});
      body.resume();
    }
  }
}

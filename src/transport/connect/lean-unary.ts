// The lean Connect unary path. The stock connect-fastify handler turns every request into a
// universal request (full URL string, WHATWG Headers copy, an async-iterable body, a linked
// AbortController), runs it through the protocol negotiation and async-iterator plumbing, and
// aborts a controller per call (a DOMException each time). For the common case — a unary RPC
// over the Connect protocol, POST, `application/json` or `application/proto`, no request
// compression — this handler does the same protocol work directly: read the body, decode it with
// the serialization options Connect uses, call the same (auth-wrapped) implementation with a
// lazy HandlerContext, encode, and write a Connect-conformant response through Fastify's reply
// (so the app's hooks and headers apply as for REST).
//
// Everything else — streaming RPCs, gRPC, gRPC-Web, Connect GET, compressed requests, malformed
// timeouts or protocol versions — goes to the stock handler, which produces its own responses
// and errors. Behaviour kept from the stock handler (@connectrpc/connect 2.x protocol-connect):
//   - JSON input: fromJsonString with ignoreUnknownFields defaulting to true; a parse error is
//     invalid_argument. Binary input: fromBinary; a parse error is invalid_argument ("parse
//     binary: …"), which parse-errors.ts makes the stock handler answer too, and is logged.
//   - readMaxBytes / writeMaxBytes are resource_exhausted; a body shorter or longer than its
//     Content-Length is invalid_argument.
//   - Success: 200, Content-Type application/json or application/proto, response headers from
//     the context, trailers as `trailer-<name>` headers. Response compression is negotiated from
//     Accept-Encoding with the same compressions and compressMinBytes.
//   - Error: the HTTP status Connect maps the code to, Content-Type application/json, body
//     {code, message?, details?: [{type, value (base64, no padding), debug?}]}, the error's
//     metadata as headers; a thrown non-ConnectError becomes internal "internal error".
//   - Connect-Timeout-Ms: ctx.timeoutMs() counts down from it and ctx.signal aborts with
//     deadline_exceeded when it passes. Unlike the stock handler, the call also answers
//     deadline_exceeded at that moment even if the implementation ignores the signal.
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from "fastify";
import {
  create,
  fromBinary,
  fromJsonString,
  toBinary,
  toJsonString,
  type BinaryReadOptions,
  type BinaryWriteOptions,
  type DescMethod,
  type DescService,
  type JsonReadOptions,
  type JsonWriteOptions,
} from "@bufbuild/protobuf";
import { Code, ConnectError, type ContextValues } from "@connectrpc/connect";
import { compressionNegotiate, getJsonOptions, type Compression } from "@connectrpc/connect/protocol";
import { codeToHttpStatus, contentTypeUnaryJson, contentTypeUnaryProto, errorToJsonBytes, parseTimeout } from "@connectrpc/connect/protocol-connect";
import type { IncomingHttpHeaders } from "node:http";
import { LeanHandlerContext } from "./context.js";

export interface LeanUnaryOptions {
  acceptCompression: Compression[];
  compressMinBytes: number;
  readMaxBytes: number;
  writeMaxBytes: number;
  maxTimeoutMs: number;
  jsonOptions?: Partial<JsonReadOptions & JsonWriteOptions>;
  binaryOptions?: Partial<BinaryReadOptions & BinaryWriteOptions>;
  shutdownSignal?: AbortSignal;
}

export const enum LeanFormat {
  None = 0,
  Json = 1,
  Proto = 2,
}

const UNARY_CONTENT_TYPE = /^application\/(?:(json)(?:; ?charset=utf-?8)?|(proto))$/i;
const TIMEOUT = /^\d{1,10}$/;
/** The largest size any Connect implementation accepts (and the default of both limits). */
const MAX_BYTES = 0xffffffff;
/** The longest delay a Node timer takes (about 24.8 days); a longer one fires after 1 ms. */
const MAX_TIMER_MS = 0x7fffffff;

function one(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? undefined : v;
}

/**
 * Whether a POST with these headers can take the lean path, and in which format. Anything
 * unusual says None, and the stock handler answers it (including with its own errors).
 */
export function leanFormat(h: IncomingHttpHeaders): LeanFormat {
  const ct = h["content-type"];
  let format: LeanFormat;
  if (ct === "application/json") format = LeanFormat.Json;
  else if (ct === "application/proto") format = LeanFormat.Proto;
  else {
    const m = ct === undefined ? null : UNARY_CONTENT_TYPE.exec(ct);
    if (!m) return LeanFormat.None;
    format = m[1] ? LeanFormat.Json : LeanFormat.Proto;
  }
  const ce = h["content-encoding"];
  if (ce !== undefined && ce !== "identity") return LeanFormat.None;
  const cce = h["connect-content-encoding"];
  if (cce !== undefined && cce !== "identity") return LeanFormat.None;
  const v = h["connect-protocol-version"];
  if (v !== undefined && v !== "1") return LeanFormat.None;
  const t = h["connect-timeout-ms"];
  if (t !== undefined && (typeof t !== "string" || !TIMEOUT.test(t))) return LeanFormat.None;
  return format;
}

type RawRequest = FastifyRequest["raw"];

/** The request body as one buffer; Connect's limits and Content-Length checks. */
async function readBody(raw: RawRequest, readMaxBytes: number): Promise<Uint8Array> {
  const lengthHeader = one(raw.headers["content-length"]);
  const hint = lengthHeader !== undefined && /^\d+$/.test(lengthHeader) ? Number(lengthHeader) : undefined;
  if (hint !== undefined && hint > readMaxBytes) throw new ConnectError(`message size ${hint} is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted);
  if (hint === 0) return new Uint8Array(0);
  if (hint !== undefined) {
    // A small call's body comes in the same packet as its headers: by the next microtask the
    // parser has buffered all of it, and one read takes it without switching the stream to
    // flowing mode (whose resume, 'data' and 'end' events cost more than the rest of reading).
    await undefined;
    if (raw.readableLength === hint && !raw.readableFlowing) {
      const b = raw.read(hint) as Buffer | null;
      // A plain Uint8Array view (no copy): bytes fields decoded from it are not Buffers.
      if (b !== null && b.byteLength === hint) return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
    }
  }
  return streamBody(raw, readMaxBytes, hint);
}

/** The body as it streams in: Connect's limits and the Content-Length checks on the way. */
function streamBody(raw: RawRequest, readMaxBytes: number, hint: number | undefined): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    // The listeners stay until the request object goes (a settled read ignores them): removing
    // four listeners per call costs more than it saves.
    const done = (err: unknown, value?: Uint8Array) => {
      if (settled) return;
      settled = true;
      if (err) {
        // Drop the rest of the body unread; the response can still be written.
        raw.resume();
        reject(err);
      } else resolve(value!);
    };
    const onData = (c: Buffer) => {
      if (settled) return;
      size += c.length;
      if (size > readMaxBytes) return done(new ConnectError(`message size is larger than configured readMaxBytes ${readMaxBytes}`, Code.ResourceExhausted));
      if (hint !== undefined && size > hint) return done(new ConnectError(`protocol error: promised ${hint} bytes, received ${size}`, Code.InvalidArgument));
      chunks.push(c);
    };
    const onEnd = () => {
      if (hint !== undefined && size < hint) return done(new ConnectError(`protocol error: promised ${hint} bytes, received ${size}`, Code.InvalidArgument));
      const b = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size);
      // A plain Uint8Array view (no copy): bytes fields decoded from it are not Buffers.
      done(undefined, new Uint8Array(b.buffer, b.byteOffset, b.byteLength));
    };
    // 'close' comes after every request, read or not: make the error only when it is one.
    const onError = (e: Error) => {
      if (!settled) done(new ConnectError(`failed to read the request body: ${e.message}`, Code.Canceled, undefined, undefined, e));
    };
    const onClose = () => {
      if (!settled) done(new ConnectError("the client closed the request", Code.Canceled));
    };
    raw.on("data", onData);
    raw.on("end", onEnd);
    raw.on("error", onError);
    raw.on("close", onClose);
  });
}

function deadlineExceeded(): ConnectError {
  return new ConnectError("the operation timed out", Code.DeadlineExceeded);
}

/** Runs `fn` against the context's deadline: the first of the result or deadline_exceeded wins. */
function withDeadline<T>(ctx: LeanHandlerContext, fn: () => T | Promise<T>): Promise<T> {
  const left = ctx.deadline! - Date.now();
  if (left <= 0) {
    const e = deadlineExceeded();
    ctx.abort(e);
    return Promise.reject(e);
  }
  // Connect-Timeout-Ms allows 10 digits (~115 days): a deadline no timer can measure does not
  // pass during a call, so none is armed (one would fire at once).
  if (left > MAX_TIMER_MS) return new Promise<T>((resolve) => resolve(fn()));
  let result: Promise<T>;
  try {
    result = Promise.resolve(fn());
  } catch (e) {
    return Promise.reject(e);
  }
  result.catch(() => {}); // the deadline may win; the late outcome is dropped
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const e = deadlineExceeded();
      ctx.abort(e);
      reject(e);
    }, left);
  });
  return Promise.race([result, expired]).finally(() => clearTimeout(timer));
}

/** A lean call's answer; the caller writes it (through Fastify's reply, or directly). */
export interface LeanAnswer {
  status: number;
  /** Lower-case names; written in this order. */
  headers: Record<string, string>;
  /** A string is JSON (UTF-8). */
  body: Buffer | string;
}

export const byteLength = (body: Buffer | string) => (typeof body === "string" ? Buffer.byteLength(body) : body.byteLength);

/** Answers one call. Never rejects: an error is answered in the Connect error shape. */
export type LeanCall = (raw: RawRequest, res: FastifyReply["raw"], format: LeanFormat, values: ContextValues | undefined, log: FastifyBaseLogger) => Promise<LeanAnswer>;

export type LeanHandler = (req: FastifyRequest, reply: FastifyReply, format: LeanFormat) => Promise<FastifyReply>;

/** The lean call as a Fastify route handler: the app's hooks and headers apply as for REST. */
export function leanFastifyHandler(call: LeanCall, contextValues?: (req: FastifyRequest) => ContextValues): LeanHandler {
  return async (req, reply, format) => {
    const { status, headers, body } = await call(req.raw, reply.raw, format, contextValues?.(req), req.log);
    // A Buffer, not a string: Fastify would add "; charset=utf-8" to a string's content type.
    return reply.code(status).headers(headers).send(typeof body === "string" ? Buffer.from(body) : body);
  };
}

/** The lean call of one unary method; `impl` is the (auth-wrapped) service implementation. */
export function createLeanUnaryCall(
  service: DescService,
  method: DescMethod & { methodKind: "unary" },
  impl: (req: any, ctx: LeanHandlerContext) => any,
  opt: LeanUnaryOptions,
): LeanCall {
  const input = method.input;
  const output = method.output;
  const jsonOpts = getJsonOptions(opt.jsonOptions);
  const binOpts = opt.binaryOptions;
  const checkWrite = opt.writeMaxBytes < MAX_BYTES;

  function parse(bytes: Uint8Array, binary: boolean) {
    if (bytes.byteLength > opt.readMaxBytes)
      throw new ConnectError(`message size ${bytes.byteLength} is larger than configured readMaxBytes ${opt.readMaxBytes}`, Code.ResourceExhausted);
    if (binary) {
      try {
        return fromBinary(input, bytes, binOpts);
      } catch (e) {
        // invalid_argument, as the stock path answers it through parse-errors.ts.
        throw new ConnectError(`parse binary: ${e instanceof Error ? e.message : String(e)}`, Code.InvalidArgument);
      }
    }
    try {
      // TextDecoder semantics: a UTF-8 byte order mark is dropped, bad sequences become U+FFFD.
      const start = bytes.length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
      const text = Buffer.from(bytes.buffer, bytes.byteOffset + start, bytes.byteLength - start).toString("utf8");
      return fromJsonString(input, text, jsonOpts);
    } catch (e) {
      throw ConnectError.from(e, Code.InvalidArgument);
    }
  }

  function serialize(msg: any, binary: boolean): Buffer | string {
    let body: Buffer | string;
    if (binary) {
      try {
        const u8 = toBinary(output, msg, binOpts);
        body = Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
      } catch (e) {
        throw new ConnectError(`serialize binary: ${e instanceof Error ? e.message : String(e)}`, Code.Internal);
      }
    } else {
      try {
        // A string: written after the response head in one piece (leanFastifyHandler makes it a Buffer).
        body = toJsonString(output, msg, jsonOpts);
      } catch (e) {
        throw ConnectError.from(e, Code.Internal);
      }
    }
    if (checkWrite) {
      const n = byteLength(body);
      if (n > opt.writeMaxBytes) throw new ConnectError(`message size ${n} is larger than configured writeMaxBytes ${opt.writeMaxBytes}`, Code.ResourceExhausted);
    }
    return body;
  }

  return async function leanUnary(raw, res, format, values, log) {
    const h = raw.headers;
    const binary = format === LeanFormat.Proto;
    let timeoutMs: number | undefined;
    let timeoutError: ConnectError | undefined;
    const t = one(h["connect-timeout-ms"]);
    if (t !== undefined) ({ timeoutMs, error: timeoutError } = parseTimeout(t, opt.maxTimeoutMs));
    const ctx = new LeanHandlerContext(service, method, raw, res, timeoutMs, values, opt.shutdownSignal);
    let status = 200;
    let body: Buffer | string;
    try {
      if (timeoutError) throw timeoutError;
      const message = parse(await readBody(raw, opt.readMaxBytes), binary);
      const res = ctx.deadline === undefined ? await impl(message, ctx) : await withDeadline(ctx, () => impl(message, ctx));
      body = serialize(create(output, res), binary);
    } catch (e) {
      ctx.abort(e);
      const error = e instanceof ConnectError ? e : new ConnectError("internal error", Code.Internal, undefined, undefined, e);
      if (!(e instanceof ConnectError)) log.error({ err: e, rpc: `${service.typeName}/${method.name}` }, "rpc failed");
      else if (error.code === Code.InvalidArgument && error.rawMessage.startsWith("parse binary: "))
        log.info({ rpc: `${service.typeName}/${method.name}`, reason: error.rawMessage }, "rpc request is not a valid protobuf message");
      status = codeToHttpStatus(error.code);
      error.metadata.forEach((value, key) => ctx.responseHeader.set(key, value));
      const b = errorToJsonBytes(error, opt.jsonOptions);
      body = Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    } finally {
      ctx.finish();
    }

    const headers: Record<string, string> = { "content-type": binary ? contentTypeUnaryProto : contentTypeUnaryJson };
    ctx.responseHeader.forEach((value, key) => void (headers[key] = value));
    if (status !== 200) headers["content-type"] = contentTypeUnaryJson;
    ctx.trailersSet?.forEach((value, key) => void (headers[`trailer-${key}`] = value));

    const accept = h["accept-encoding"];
    if (accept !== undefined && accept !== "" && opt.acceptCompression.length) {
      const { response } = compressionNegotiate(opt.acceptCompression, null, one(accept) ?? null, "Accept-Encoding");
      if (response && byteLength(body) >= opt.compressMinBytes) {
        const z = await response.compress(typeof body === "string" ? Buffer.from(body) : body);
        body = Buffer.from(z.buffer, z.byteOffset, z.byteLength);
        headers["content-encoding"] = response.name;
      }
    }
    return { status, headers, body };
  };
}

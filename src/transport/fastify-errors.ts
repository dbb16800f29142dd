// Every error a caller can get, in the one error model (common/errors.ts), whoever raised it:
// handlers (ApiError), the onRequest header checks, and Fastify itself (a path that is not valid
// percent-encoding, an unparseable content type, a body over the limit or shorter than its
// Content-Length, a client that went away mid-body). REST callers get
// {"error": {message, type, param, code}} with a public code (never Fastify's FST_ERR_* names);
// callers of an RPC path (/package.Service/Method) get the same error in their protocol's shape:
//   - gRPC and gRPC-Web: HTTP 200, trailers-only (grpc-status, grpc-message,
//     grpc-status-details-bin carrying the atrium.v1.ErrorInfo);
//   - Connect unary (POST application/json|proto, or GET): the Connect JSON error body with the
//     HTTP status Connect maps the code to;
//   - Connect streaming: HTTP 200 and an end-of-stream message carrying the error;
//   - any other content type: what the Connect router answers a media type it does not serve (a
//     bare 415), so every unsupported content type gets the same answer.
// Fastify reports three of its errors (bad URL, over-long path parameter, async constraint)
// outside setErrorHandler, through its `frameworkErrors` option: `frameworkErrorHandler` is that.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";
import { Code, ConnectError } from "@connectrpc/connect";
import { encodeEnvelope } from "@connectrpc/connect/protocol";
import * as connectProtocol from "@connectrpc/connect/protocol-connect";
import * as grpcProtocol from "@connectrpc/connect/protocol-grpc";
import * as grpcWebProtocol from "@connectrpc/connect/protocol-grpc-web";
import { ApiError, toRestError } from "../common/errors.js";
import { API_VERSION } from "./headers.js";

interface FastifyErrorRule {
  status: number;
  /** The public `code` of the REST error body. */
  code: string | null;
  message(req: FastifyRequest): string;
}

const pathOf = (req: FastifyRequest) => req.url.split("?")[0]!;

/** Fastify's own error codes (FST_ERR_*, internal names) as public errors. */
export const FASTIFY_ERRORS: Record<string, FastifyErrorRule> = {
  FST_ERR_BAD_URL: {
    status: 400,
    code: "invalid_url",
    message: (req) => `Invalid URL (${req.method} ${pathOf(req)}): the path is not valid percent-encoding.`,
  },
  FST_ERR_MAX_PARAM_LENGTH: {
    status: 414,
    code: "path_parameter_too_long",
    message: (req) => `Invalid URL (${req.method} ${pathOf(req)}): a path parameter is too long.`,
  },
  FST_ERR_CTP_BODY_TOO_LARGE: {
    status: 413,
    code: "request_too_large",
    message: (req) => {
      const limit = req.routeOptions?.bodyLimit;
      return limit ? `The request body is too large: the limit is ${limit} bytes.` : "The request body is too large.";
    },
  },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: {
    status: 415,
    code: "unsupported_content_type",
    message: (req) => `Unsupported Content-Type: '${req.headers["content-type"] ?? ""}'.`,
  },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: {
    status: 400,
    code: "invalid_content_length",
    message: () => "The request body did not match its Content-Length header.",
  },
  FST_ERR_CTP_EMPTY_JSON_BODY: {
    status: 400,
    code: "invalid_json",
    message: () => "The request body is empty, but this endpoint expects a JSON payload.",
  },
  FST_ERR_CTP_INVALID_JSON_BODY: {
    status: 400,
    code: "invalid_json",
    message: () => "We could not parse the JSON body of your request: it is not valid JSON.",
  },
  // A method Fastify's router does not know at all (only HTTP/2 lets one through): the unknown-route answer.
  FST_ERR_NOT_FOUND: { status: 404, code: null, message: (req) => `Invalid URL (${req.method} ${pathOf(req)})` },
  FST_ERR_VALIDATION: { status: 400, code: "invalid_request", message: () => "The request is invalid." },
  FST_ERR_HANDLER_TIMEOUT: { status: 503, code: "timeout", message: () => "The request timed out." },
  // 5xx: never the framework's wording; logged as failures.
  FST_ERR_ASYNC_CONSTRAINT: { status: 500, code: "internal_error", message: () => "The server had an error while processing your request." },
};

/** Public codes for other errors that carry only an HTTP status (stream errors, plugins). */
function codeForStatus(status: number): string {
  if (status === 413) return "request_too_large";
  if (status === 415) return "unsupported_content_type";
  return "invalid_request";
}

/** A client that closed its connection before the body arrived: nobody reads the answer. */
function isClientAbort(err: unknown, req: FastifyRequest): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return code === "ECONNRESET" || code === "ERR_STREAM_PREMATURE_CLOSE" || (req.raw.destroyed && !req.raw.complete);
}

/** Any thrown value as an ApiError, or the value itself when it is already a ConnectError or a 5xx. */
export function toPublicError(err: unknown, req: FastifyRequest): unknown {
  if (err instanceof ConnectError) return err;
  const e = err as Partial<FastifyError> | null;
  const rule = typeof e?.code === "string" ? FASTIFY_ERRORS[e.code] : undefined;
  if (rule) return new ApiError(rule.status, rule.message(req), { code: rule.code, cause: err });
  if (isClientAbort(err, req)) return new ApiError(400, "The request was aborted before its body was received.", { code: "request_aborted", cause: err });
  const status = e?.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500)
    return new ApiError(status, e?.message ?? "Invalid request.", { code: codeForStatus(status), cause: err });
  return err; // rendered as a 500 with no detail
}

/** The RPC protocols, as the Connect router tells them apart (by Content-Type, and GET for Connect). */
export type RpcProtocol = "grpc" | "grpc-web" | "connect" | "connect-stream" | "unsupported";

/** Under /package.Service/: a dotted first segment, which no REST path has. */
const RPC_PATH = /^\/[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+\//;

/** The protocol of a request to an RPC path; null for any other path. */
export function rpcProtocolOf(req: { method: string; url: string; headers: Record<string, unknown> }): RpcProtocol | null {
  if (!RPC_PATH.test(req.url)) return null;
  const ct = req.headers["content-type"];
  if (ct === undefined) return req.method === "GET" ? "connect" : "unsupported";
  if (typeof ct !== "string") return "unsupported";
  if (grpcProtocol.contentTypeRegExp.test(ct)) return "grpc";
  if (grpcWebProtocol.contentTypeRegExp.test(ct)) return "grpc-web";
  if (connectProtocol.contentTypeUnaryRegExp.test(ct)) return "connect";
  if (connectProtocol.contentTypeStreamRegExp.test(ct)) return "connect-stream";
  return "unsupported";
}

function asConnectError(err: unknown): ConnectError {
  // Unknown errors are internal, with no detail leaked (as the Connect handlers do).
  return err instanceof ConnectError ? err : new ConnectError("internal error", Code.Internal, undefined, undefined, err);
}

/**
 * Writes `err` as `protocol` answers errors. `connectStatus` overrides the HTTP status of a
 * Connect unary error (default: the one Connect maps the code to).
 */
function sendRpcError(req: FastifyRequest, reply: FastifyReply, protocol: RpcProtocol, err: unknown, connectStatus?: number): void {
  const error = asConnectError(err);
  if (protocol === "grpc" || protocol === "grpc-web") {
    // Trailers-only: the status in the headers, no body. Written to the raw response with
    // setHeader + end() so that HTTP/2 sends one HEADERS frame with END_STREAM, which is how gRPC
    // clients recognise trailers-only (reply.send writes the headers first, then an empty DATA
    // frame, and grpc-js sees a call that ended without a status). Hijacking keeps the
    // onResponse hooks (the request log) but skips onSend, so its header is set here.
    reply.hijack();
    const res = reply.raw;
    res.statusCode = 200;
    for (const [k, v] of Object.entries(reply.getHeaders())) if (v !== undefined) res.setHeader(k, v as string | string[]);
    res.setHeader("vendor-processing-ms", String(Math.round(reply.elapsedTime)));
    res.setHeader("content-type", req.headers["content-type"]!);
    grpcProtocol.setTrailerStatus(new Headers(), error).forEach((v, k) => res.setHeader(k, v));
    res.end();
    return;
  }
  if (protocol === "connect-stream") {
    // Streaming Connect reports errors in the end-of-stream message of a 200 response.
    const end = connectProtocol.createEndStreamSerialization(undefined).serialize({ metadata: error.metadata, error });
    reply
      .code(200)
      .header("content-type", req.headers["content-type"]!)
      .send(Buffer.from(encodeEnvelope(connectProtocol.endStreamFlag, end)));
    return;
  }
  error.metadata.forEach((v, k) => void reply.header(k, v));
  reply
    .code(connectStatus ?? connectProtocol.codeToHttpStatus(error.code))
    .header("content-type", connectProtocol.contentTypeUnaryJson)
    .send(Buffer.from(connectProtocol.errorToJsonBytes(error, undefined)));
}

/** Renders any error for the request's protocol. */
export function sendError(req: FastifyRequest, reply: FastifyReply, err: unknown, log: Logger): void {
  const error = toPublicError(err, req);
  const { status, body, headers } = toRestError(error);
  if (status >= 500) log.error({ err, reqId: req.id }, "request failed");
  const protocol = rpcProtocolOf(req);
  if (protocol === "unsupported" && status === 415) {
    // What the Connect router answers every content type it does not serve.
    reply.code(415).send();
  } else if (protocol) {
    // A caller whose protocol is unknown gets the Connect shape, the one readable without a client.
    sendRpcError(req, reply, protocol === "unsupported" ? "connect" : protocol, error);
  } else {
    reply.code(status).headers(headers).type("application/json").send(body);
  }
}

/** The app's error handler: handler errors, hook errors and Fastify's body and content-type errors. */
export function installErrorHandler(app: FastifyInstance, log: Logger): void {
  app.setErrorHandler((err, req, reply) => sendError(req, reply, err, log));
}

/**
 * Fastify's `frameworkErrors` option. These errors come before routing, so no onRequest hook
 * has set the response headers every answer carries: they are set here.
 */
export function frameworkErrorHandler(log: Logger) {
  return (err: FastifyError, req: FastifyRequest, reply: FastifyReply) => {
    reply.header("x-request-id", req.id).header("vendor-version", API_VERSION).header("vendor-processing-ms", Math.round(reply.elapsedTime));
    sendError(req, reply, err, log);
  };
}

/**
 * Unknown routes. REST: 405 with Allow when the path exists with other methods, else 404.
 * RPC paths: an unknown method is `unimplemented` (HTTP 404 for Connect, as Connect servers answer
 * an unknown procedure); a known one called with an HTTP method Fastify does not route is a bare
 * 405, as the Connect router answers a method it does not serve.
 */
export function installNotFoundHandler(app: FastifyInstance, opts: { allowedMethods: (path: string) => string[] }): void {
  app.setNotFoundHandler((req, reply) => {
    const path = pathOf(req);
    const protocol = rpcProtocolOf(req);
    if (protocol) {
      if (app.hasRoute({ method: "POST", url: path })) reply.code(405).send();
      else sendRpcError(req, reply, protocol === "unsupported" ? "connect" : protocol, new ConnectError(`unknown RPC ${path}`, Code.Unimplemented), 404);
      return;
    }
    const allow = opts.allowedMethods(path);
    if (allow.length) {
      reply
        .code(405)
        .header("allow", allow.join(", "))
        .send({ error: { message: `Method ${req.method} is not allowed for ${path}; allowed: ${allow.join(", ")}.`, type: "invalid_request_error", param: null, code: "method_not_allowed" } });
      return;
    }
    reply.code(404).send({ error: { message: `Invalid URL (${req.method} ${path})`, type: "invalid_request_error", param: null, code: null } });
  });
}

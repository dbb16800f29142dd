// The generic REST transcoder (docs/architecture.md, principle 1): every RPC's google.api.http rule becomes a
// Fastify route, read from the generated descriptors at start-up. Path variables, query
// parameters (every request field not bound by the path or the body) and `body: "*"` fill the
// request message; the service implementation is called directly (no in-process RPC round trip);
// the response is the spec's REST JSON (json.ts). A server-streaming RPC of google.api.HttpBody is
// a streamed download; a client-streaming RPC takes the multipart shape declared in multipart.ts.
// An invalid rule throws here, so a bad annotation fails start-up rather than a request.
import { Readable } from "node:stream";
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from "node:http";
import type { Http2ServerResponse } from "node:http2";
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ScalarType, create, getOption, hasOption, type DescField, type DescMessage, type DescMethod, type DescService } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { anyUnpack } from "@bufbuild/protobuf/wkt";
import { createContextValues, type ContextValues } from "@connectrpc/connect";
import { http } from "../../../gen/google/api/annotations_pb.js";
import type { HttpRule } from "../../../gen/google/api/http_pb.js";
import { http_header, ContentRangeSchema } from "../../../gen/atrium/v1/options_pb.js";
import { ApiError, toRestError } from "../../common/errors.js";
import type { ServiceBinding } from "../../common/service.js";
import { decodeStringValue, fromRestJson, restJsonAcceptsInit, toRestJson } from "../../common/rest-json.js";
import { isMultipart, multipartMessages, type MultipartShape } from "./multipart.js";
import { FormBody, readMultipartForm } from "./form.js";
import { NodeHeaders } from "../node-headers.js";
import { ResponseHeaders } from "../response-headers.js";


export interface RouteBinding {
  service: DescService;
  method: DescMethod;
  verb: "GET" | "POST" | "PUT" | "DELETE" | "PATCH";
  template: string;
  fastifyPath: string;
  pattern: RegExp;
  pathFields: DescField[];
  body: "" | "*" | DescField;
  queryFields: Map<string, DescField>;
  headerFields: Array<{ header: string; field: DescField }>;
  multipart?: MultipartShape;
}

export class InvalidHttpRule extends Error {}

function ruleVerb(rule: HttpRule): { verb: RouteBinding["verb"]; path: string } {
  switch (rule.pattern.case) {
    case "get":
      return { verb: "GET", path: rule.pattern.value };
    case "post":
      return { verb: "POST", path: rule.pattern.value };
    case "put":
      return { verb: "PUT", path: rule.pattern.value };
    case "delete":
      return { verb: "DELETE", path: rule.pattern.value };
    case "patch":
      return { verb: "PATCH", path: rule.pattern.value };
    default:
      throw new InvalidHttpRule(`unsupported http rule pattern ${String(rule.pattern.case)}`);
  }
}

/** Reads and validates one method's rule. */
export function bindRoute(service: DescService, method: DescMethod, multipartShapes: Record<string, MultipartShape> = {}): RouteBinding | undefined {
  if (!hasOption(method, http)) return undefined;
  const where = `${service.typeName}.${method.name}`;
  const rule = getOption(method, http);
  if (rule.additionalBindings.length) throw new InvalidHttpRule(`${where}: additional_bindings are not supported`);
  if (rule.responseBody) throw new InvalidHttpRule(`${where}: response_body is not supported`);
  const { verb, path } = ruleVerb(rule);
  if (!path.startsWith("/")) throw new InvalidHttpRule(`${where}: path template must start with '/': ${path}`);
  const input = method.input;
  const pathFields: DescField[] = [];
  const fastifySegs: string[] = [];
  const reSegs: string[] = [];
  for (const seg of path.slice(1).split("/")) {
    const v = /^\{([a-z_][a-z0-9_]*)(?:=\*)?\}$/.exec(seg);
    if (v) {
      const f = input.fields.find((x) => x.name === v[1]);
      if (!f || f.fieldKind !== "scalar") throw new InvalidHttpRule(`${where}: path variable {${v[1]}} is not a scalar field of ${input.typeName}`);
      if (pathFields.includes(f)) throw new InvalidHttpRule(`${where}: path variable {${v[1]}} bound twice`);
      pathFields.push(f);
      fastifySegs.push(`:${f.name}`);
      reSegs.push("[^/]+");
    } else if (/^[A-Za-z0-9_.~-]+$/.test(seg)) {
      fastifySegs.push(seg);
      reSegs.push(seg.replace(/\./g, "\\."));
    } else throw new InvalidHttpRule(`${where}: unsupported path segment '${seg}' in ${path}`);
  }
  let body: RouteBinding["body"] = "";
  if (rule.body === "*") body = "*";
  else if (rule.body) {
    const f = input.fields.find((x) => x.name === rule.body);
    if (!f) throw new InvalidHttpRule(`${where}: body field '${rule.body}' not in ${input.typeName}`);
    body = f;
  }
  if ((verb === "GET" || verb === "DELETE") && body) throw new InvalidHttpRule(`${where}: ${verb} cannot carry a body`);
  const headerFields: RouteBinding["headerFields"] = [];
  const queryFields = new Map<string, DescField>();
  for (const f of input.fields) {
    if (hasOption(f, http_header)) {
      headerFields.push({ header: getOption(f, http_header).toLowerCase(), field: f });
      continue;
    }
    if (pathFields.includes(f) || body === "*" || body === f) continue;
    // A map<string, string> is read from `name[key]=value` pairs (how the official SDKs encode an
    // object in a query string, e.g. a metadata filter); other maps and messages have no query form.
    const stringMap = f.fieldKind === "map" && f.mapKey === ScalarType.STRING && f.mapKind === "scalar" && f.scalar === ScalarType.STRING;
    if (f.fieldKind === "message" || (f.fieldKind === "map" && !stringMap))
      throw new InvalidHttpRule(`${where}: field ${f.name} cannot be a query parameter; bind it to the body`);
    queryFields.set(f.name, f);
  }
  const multipart = multipartShapes[`${service.typeName}.${method.name}`];
  if (method.methodKind === "client_streaming" && !multipart)
    throw new InvalidHttpRule(`${where}: a client-streaming RPC needs a declared multipart shape`);
  if (multipart) {
    if (multipart.json && body !== "*") throw new InvalidHttpRule(`${where}: a multipart shape that takes JSON needs body: "*"`);
    for (const name of [multipart.chunk, multipart.filename].filter(Boolean) as string[])
      if (!input.fields.some((f) => f.name === name)) throw new InvalidHttpRule(`${where}: multipart field '${name}' not in ${input.typeName}`);
  }
  if (method.methodKind === "server_streaming" && method.output.typeName !== "google.api.HttpBody")
    throw new InvalidHttpRule(`${where}: server streaming over REST needs google.api.HttpBody`);
  if (method.methodKind === "bidi_streaming") throw new InvalidHttpRule(`${where}: bidi streaming has no REST form`);
  return {
    service,
    method,
    verb,
    template: path,
    fastifyPath: "/" + fastifySegs.join("/"),
    pattern: new RegExp("^/" + reSegs.join("/") + "$"),
    pathFields,
    body,
    queryFields,
    headerFields,
    multipart,
  };
}

/** HandlerContext for a REST call. Cheap: the abort signal is only built if a handler asks. */
class RestContext implements HandlerContext {
  readonly responseHeader: Headers = new ResponseHeaders();
  readonly protocolName = "rest";
  private controller: AbortController | undefined;
  private trailer: Headers | undefined;
  constructor(
    readonly service: DescService,
    readonly method: DescMethod,
    readonly requestMethod: string,
    readonly url: string,
    readonly requestHeader: Headers,
    private readonly res: ServerResponse | Http2ServerResponse,
    readonly values: ContextValues,
  ) {}
  get signal(): AbortSignal {
    if (!this.controller) {
      const c = (this.controller = new AbortController());
      // The request's 'close' fires once its body is read (HTTP/1.1); the client is gone only
      // when the response closes before it was finished.
      const res = this.res;
      if (res.destroyed && !res.writableFinished) c.abort();
      else res.once("close", () => res.writableFinished || c.abort());
    }
    return this.controller.signal;
  }
  /** REST has no trailers; made only if a handler writes some (they are dropped). */
  get responseTrailer(): Headers {
    return (this.trailer ??= new ResponseHeaders());
  }
  timeoutMs(): number | undefined {
    return undefined;
  }
}

/** What a REST call's request message is built from, besides its body. */
export interface RestRequestParts {
  /** Path variables, percent-decoded, by field name. */
  params: Record<string, string>;
  query: Record<string, string | string[]>;
  headers: IncomingHttpHeaders;
}

function buildInit(b: RouteBinding, { params, query, headers }: RestRequestParts): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  for (const f of b.pathFields) init[f.localName] = decodeStringValue(f, params[f.name], f.name);
  for (const key of Object.keys(query)) {
    const entry = /^([a-z_][a-z0-9_]*)\[([^\]]*)\]$/.exec(key);
    const f = b.queryFields.get(entry ? entry[1] : key);
    if (!f || (entry !== null) !== (f.fieldKind === "map"))
      throw new ApiError(400, `Unrecognized query parameter: ${key}`, { param: key, code: "unknown_parameter" });
    const raw = query[key];
    if (entry) {
      if (Array.isArray(raw)) throw new ApiError(400, `Query parameter '${key}' was given more than once.`, { param: key, code: "invalid_value" });
      ((init[f.localName] ??= {}) as Record<string, string>)[entry[2]] = raw;
    } else if (f.fieldKind === "list") init[f.localName] = (Array.isArray(raw) ? raw : [raw]).map((r) => decodeStringValue(f, r, key));
    else {
      if (Array.isArray(raw)) throw new ApiError(400, `Query parameter '${key}' was given more than once.`, { param: key, code: "invalid_value" });
      init[f.localName] = decodeStringValue(f, raw, key);
    }
  }
  for (const { header, field } of b.headerFields) {
    const v = headers[header];
    if (typeof v === "string") init[field.localName] = v;
  }
  return init;
}

function mergeBody(b: RouteBinding, init: Record<string, unknown>, body: unknown) {
  if (b.body === "" || body === undefined) return;
  if (body instanceof FormBody && b.body !== "*")
    throw new ApiError(415, "This endpoint takes a JSON body (Content-Type: application/json).", { code: "unsupported_content_type" });
  if (b.body === "*") {
    const fromBody = body instanceof FormBody ? body.toInit(b.method.input) : fromRestJson(b.method.input, body);
    for (const f of b.pathFields)
      if (f.localName in fromBody && fromBody[f.localName] !== init[f.localName])
        throw new ApiError(400, `'${f.name}' is given by the path; do not repeat it in the body.`, { param: f.name });
    Object.assign(init, fromBody, pickPath(b, init));
  } else {
    const f = b.body;
    if (f.fieldKind !== "message") throw new ApiError(400, "Unsupported body binding.");
    init[f.localName] = create(f.message, fromRestJson(f.message, body, f.name) as any);
  }
}

function pickPath(b: RouteBinding, init: Record<string, unknown>) {
  const out: Record<string, unknown> = {};
  for (const f of b.pathFields) out[f.localName] = init[f.localName];
  return out;
}

/** A failed REST call's answer: the one error model (common/errors.ts). */
export function restErrorAnswer(err: unknown, res: ServerResponse | Http2ServerResponse, log: FastifyBaseLogger, reqId: string): { status: number; body: unknown; headers: Record<string, string> } {
  // The client went away and the handler stopped on its signal: the client's doing, not a server
  // fault, so no 500 in the metrics and no error in the log; 499 as nginx records it.
  if (res.destroyed && !res.writableFinished && (err as Error | null)?.name === "AbortError") {
    log.info({ reqId }, "client closed the request before the answer");
    return { status: 499, body: { error: { message: "The client closed the request.", type: "invalid_request_error", param: null, code: "client_closed_request" } }, headers: {} };
  }
  const answer = toRestError(err);
  if (answer.status >= 500) log.error({ err, reqId }, "request failed");
  return answer;
}

function sendError(reply: FastifyReply, err: unknown) {
  const { status, body, headers } = restErrorAnswer(err, reply.raw, reply.log, reply.request.id);
  reply.code(status).headers(headers).type("application/json").send(body);
}

function copyResponseHeaders(ctx: RestContext, reply: FastifyReply) {
  ctx.responseHeader.forEach((v, k) => reply.header(k, v));
}

/** A unary call: the request message from the parts and body, the implementation, the REST JSON answer. */
async function callUnary(b: RouteBinding, impl: Function, parts: RestRequestParts, body: unknown, ctx: HandlerContext): Promise<unknown> {
  const init = buildInit(b, parts);
  mergeBody(b, init, body);
  const res = await impl(create(b.method.input, init as any), ctx);
  const msg = res.$typeName || restJsonAcceptsInit(b.method.output) ? res : create(b.method.output, res);
  return toRestJson(b.method.output, msg);
}

const partsOf = (req: FastifyRequest): RestRequestParts => ({ params: req.params as RestRequestParts["params"], query: req.query as RestRequestParts["query"], headers: req.headers });

async function handleUnary(b: RouteBinding, impl: Function, req: FastifyRequest, reply: FastifyReply, ctx: RestContext) {
  // A multipart body is left unread by the body parsers (uploads stream it); here it is a form.
  const body = b.body !== "" && isMultipart(req.headers["content-type"]) ? await readMultipartForm(req.raw as unknown as Readable, req.headers) : req.body;
  const json = await callUnary(b, impl, partsOf(req), body, ctx);
  copyResponseHeaders(ctx, reply);
  reply.type("application/json").send(json);
}

async function handleClientStream(b: RouteBinding, impl: Function, req: FastifyRequest, reply: FastifyReply, ctx: RestContext) {
  const init = buildInit(b, partsOf(req));
  let messages: AsyncIterable<unknown>;
  if (isMultipart(req.headers["content-type"])) {
    messages = multipartMessages(req.raw as unknown as Readable, req.headers, b.method.input, b.multipart!, init);
  } else if (b.multipart!.json && /^application\/(?:[\w.+-]*\+)?json\b/i.test(req.headers["content-type"] ?? "")) {
    // The JSON form of the same call (container files: `{"file_id"}` instead of a `file` part).
    mergeBody(b, init, req.body);
    const one = create(b.method.input, init as any);
    messages = (async function* () {
      yield one;
    })();
  } else {
    throw new ApiError(415, `This endpoint takes multipart/form-data with the content in '${b.multipart!.file}'${b.multipart!.json ? " or a JSON body" : ""}.`, {
      code: "unsupported_content_type",
    });
  }
  const res = await impl(messages, ctx);
  copyResponseHeaders(ctx, reply);
  const msg = res.$typeName || restJsonAcceptsInit(b.method.output) ? res : create(b.method.output, res);
  reply.type("application/json").send(toRestJson(b.method.output, msg));
}

async function handleDownload(b: RouteBinding, impl: Function, req: FastifyRequest, reply: FastifyReply, ctx: RestContext) {
  const init = buildInit(b, partsOf(req));
  mergeBody(b, init, req.body);
  const it: AsyncIterator<any> = impl(create(b.method.input, init as any), ctx)[Symbol.asyncIterator]();
  // The first chunk decides the status and headers; errors before it are ordinary error responses.
  const first = await it.next();
  copyResponseHeaders(ctx, reply);
  let status = 200;
  if (!first.done) {
    const head = first.value;
    reply.header("content-type", head.contentType || "application/octet-stream");
    for (const ext of head.extensions ?? []) {
      const range = anyUnpack(ext, ContentRangeSchema);
      if (!range) continue;
      reply.header("accept-ranges", "bytes");
      if (range.partial) {
        status = 206;
        reply.header("content-range", `bytes ${range.start}-${range.end}/${range.size}`);
        reply.header("content-length", String(Number(range.end - range.start) + 1));
      } else reply.header("content-length", String(Number(range.size)));
    }
  }
  async function* body() {
    if (first.done) return;
    if (first.value.data?.length) yield first.value.data;
    for (;;) {
      const n = await it.next();
      if (n.done) return;
      if (n.value.data?.length) yield n.value.data;
    }
  }
  const stream = Readable.from(body(), { objectMode: false, highWaterMark: 1 << 20 });
  stream.on("close", () => void it.return?.());
  reply.code(status).send(stream);
}

export interface TranscoderOptions {
  services: ServiceBinding[];
  /** Multipart shapes of client-streaming RPCs, keyed by "package.Service.Method". */
  multipart?: Record<string, MultipartShape>;
  /** As the Connect plugin's option: context values for each request (connection facts). */
  contextValues?: (req: FastifyRequest) => ContextValues;
}

/**
 * A unary call whose request has no body (GET, DELETE), callable without Fastify: what the direct
 * path (transport/direct-unary.ts) serves. Never throws: an error is answered in the error model.
 */
export interface BodylessRestCall {
  binding: RouteBinding;
  run(parts: RestRequestParts, req: IncomingMessage, res: ServerResponse, values: ContextValues, log: FastifyBaseLogger, reqId: string): Promise<RestOutcome>;
}

export interface RestOutcome {
  status: number;
  /** The JSON value to send. */
  body: unknown;
  /** The call's response headers (x-ratelimit-*, vendor-organization, ...), an error's included. */
  headers: Headers;
}

export interface RestRoutes {
  bindings: RouteBinding[];
  bodyless: BodylessRestCall[];
}

/** Registers every annotated RPC as a REST route inside `scope` (a Fastify plugin context). */
export function registerRestRoutes(scope: FastifyInstance, opts: TranscoderOptions): RestRoutes {
  const bindings: RouteBinding[] = [];
  const bodyless: BodylessRestCall[] = [];
  const seen = new Map<string, string>();
  for (const { desc, impl } of opts.services) {
    for (const method of desc.methods) {
      const b = bindRoute(desc, method, opts.multipart);
      if (!b) continue;
      const key = `${b.verb} ${b.fastifyPath.replace(/:[a-z_0-9]+/g, ":")}`;
      if (seen.has(key)) throw new InvalidHttpRule(`${desc.typeName}.${method.name}: ${b.verb} ${b.template} clashes with ${seen.get(key)}`);
      seen.set(key, `${desc.typeName}.${method.name}`);
      const fn = impl[method.localName];
      if (typeof fn !== "function") throw new InvalidHttpRule(`${desc.typeName}.${method.name}: no implementation`);
      const handler =
        method.methodKind === "client_streaming" ? handleClientStream : method.methodKind === "server_streaming" ? handleDownload : handleUnary;
      const bound = fn.bind(impl);
      bindings.push(b);
      if (method.methodKind === "unary" && b.body === "")
        bodyless.push({
          binding: b,
          async run(parts, req, res, values, log, reqId) {
            const ctx = new RestContext(desc, method, req.method!, req.url!, new NodeHeaders(req.headers) as unknown as Headers, res, values);
            try {
              return { status: 200, body: await callUnary(b, bound, parts, undefined, ctx), headers: ctx.responseHeader };
            } catch (err) {
              const { status, body, headers } = restErrorAnswer(err, res, log, reqId);
              for (const k in headers) ctx.responseHeader.set(k, headers[k]!);
              return { status, body, headers: ctx.responseHeader };
            }
          },
        });
      scope.route({
        method: b.verb,
        url: b.fastifyPath,
        handler: async (req, reply) => {
          const ctx = new RestContext(desc, method, req.method, req.url, new NodeHeaders(req.headers) as unknown as Headers, reply.raw, opts.contextValues?.(req) ?? createContextValues());
          try {
            await handler(b, bound, req, reply, ctx);
          } catch (err) {
            // Headers set before the error (x-ratelimit-*, vendor-organization) go out with it.
            copyResponseHeaders(ctx, reply);
            sendError(reply, err);
          }
          return reply;
        },
      });
    }
  }
  return { bindings, bodyless };
}

/** For a path no route matched: the methods whose templates do match it (for 405 + Allow). */
export function allowedMethods(bindings: RouteBinding[], path: string): string[] {
  const out = new Set<string>();
  for (const b of bindings) if (b.pattern.test(path)) out.add(b.verb);
  return [...out];
}

export { sendError as sendRestError };

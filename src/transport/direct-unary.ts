// Unary calls answered beside Fastify's request lifecycle. The calls most clients make most often —
// a REST GET or DELETE (no body) and a unary Connect call on the lean path (lean-unary.ts) — are
// small, and Fastify's per-request machinery (request and reply objects, six hooks, each header
// validated as it is set, the onSend and onResponse chains) cost more than the call itself: the
// request-rate bench measured Atrium at 0.4-0.6x of a bare Fastify route with the same work.
//
// This path does what those hooks do, once each, for the requests it takes: the request id and
// the API version header, the request header checks, the same (auth-wrapped) call, its headers,
// the default rate-limit headers, the processing time, `Connection: close` while draining, one
// metrics count and one request-log line, and it writes the whole response with one writeHead.
// It takes a request only when nothing about it is unusual; everything else — HTTP/2, bodies on a
// GET, HEAD, headers the checks refuse, paths Fastify's router would refuse, streaming RPCs, gRPC,
// gRPC-Web, Connect GET and compressed Connect requests — goes to Fastify, which answers it (and
// its errors) as before. Paths are matched by the router Fastify itself uses (find-my-way) with
// Fastify's options over the same routes, so a path resolves here exactly as there; the
// differential test (test/transport/direct-unary.test.ts) sends every shape both ways.
import type { IncomingMessage, ServerResponse } from "node:http";
import { performance } from "node:perf_hooks";
import FindMyWay from "find-my-way";
import type { ContextValues } from "@connectrpc/connect";
import type { Logger } from "pino";
import { toRestError } from "../common/errors.js";
import { API_VERSION, checkRequestHeaders, newRequestId } from "./headers.js";
import type { RequestLog } from "./request-log.js";
import type { BodylessRestCall, RouteBinding } from "./rest/transcoder.js";
import { byteLength, leanFormat, LeanFormat, type LeanCall } from "./connect/lean-unary.js";
import type { CallOutcome } from "../operability/outcome.js";
import type { Metrics } from "../operability/metrics.js";

/** Fastify's router options (its initialConfig), so paths resolve here as they do there. */
export interface RouterOptions {
  caseSensitive?: boolean;
  ignoreTrailingSlash?: boolean;
  ignoreDuplicateSlashes?: boolean;
  maxParamLength?: number;
  useSemicolonDelimiter?: boolean;
  allowUnsafeRegex?: boolean;
}

/** What a request's context values are made from: the raw request, and where the RPC status is recorded. */
export interface DirectRequest extends CallOutcome {
  raw: IncomingMessage;
}

export interface DirectUnaryOptions {
  router: RouterOptions;
  /** Every REST route's binding (the router must know them all to resolve a path as Fastify does). */
  restBindings: RouteBinding[];
  /** The calls taken here. */
  rest: BodylessRestCall[];
  connect?: Map<string, LeanCall>;
  contextValues: (req: DirectRequest) => ContextValues;
  log: Logger;
  requestLog: RequestLog;
  metrics?: Metrics;
  draining: () => boolean;
  /** Sent on a /v1/ answer that carries no x-ratelimit-* headers of its own; undefined with rate limits off. */
  defaultRateLimitHeaders?: Readonly<Record<string, string>>;
}

type Count = ReturnType<Metrics["answerCounter"]>;

interface RestEntry {
  call: BodylessRestCall | undefined;
  count: Count;
}

interface ConnectEntry {
  call: LeanCall;
  count: Count;
}

const JSON_UTF8 = "application/json; charset=utf-8";

export class DirectUnary {
  /** Requests answered here so far (the differential test checks which ones are). */
  taken = 0;
  private readonly router: FindMyWay.Instance<FindMyWay.HTTPVersion.V1>;
  private readonly connect = new Map<string, ConnectEntry>();

  constructor(private readonly o: DirectUnaryOptions) {
    this.router = FindMyWay(o.router);
    const direct = new Map(o.rest.map((c) => [c.binding, c]));
    const noop = () => {};
    // Every route, taken here or not: a path that resolves to one this path does not take goes to Fastify.
    for (const b of o.restBindings) {
      const call = direct.get(b);
      const entry: RestEntry = { call, count: call && o.metrics?.answerCounter(b.fastifyPath, "rest") };
      this.router.on(b.verb, b.fastifyPath, noop, entry);
    }
    for (const [path, call] of o.connect ?? []) this.connect.set(path, { call, count: o.metrics?.answerCounter(path, "rpc") });
  }

  /** Answers `req` if it is a call this path takes (true); false leaves it to Fastify, untouched. */
  take(req: IncomingMessage, res: ServerResponse): boolean {
    if (req.httpVersionMajor !== 1 || this.o.draining()) return false;
    const method = req.method;
    const url = req.url!;
    const h = req.headers;
    if (method === "GET" || method === "DELETE") {
      if (h["content-length"] !== undefined || h["transfer-encoding"] !== undefined || !url.startsWith("/v1/")) return false;
      const found = this.router.find(method, url);
      const entry = found?.store as RestEntry | undefined;
      if (entry?.call === undefined) return false;
      const clientRequestId = this.checkHeaders(req);
      if (clientRequestId === false) return false;
      this.taken++;
      void this.serveRest(req, res, entry, { params: found!.params as Record<string, string>, query: found!.searchParams as Record<string, string | string[]>, headers: h }, clientRequestId);
      return true;
    }
    if (method === "POST") {
      const entry = this.connect.get(url);
      if (entry === undefined) return false;
      const format = leanFormat(h);
      if (format === LeanFormat.None) return false;
      const clientRequestId = this.checkHeaders(req);
      if (clientRequestId === false) return false;
      this.taken++;
      void this.serveConnect(req, res, entry, format, clientRequestId);
      return true;
    }
    return false;
  }

  /** The request header checks (spec 5.8); false when they refuse it (Fastify then answers the error). */
  private checkHeaders(req: IncomingMessage): string | undefined | false {
    try {
      return checkRequestHeaders(req.headers);
    } catch {
      return false;
    }
  }

  private async serveRest(req: IncomingMessage, res: ServerResponse, entry: RestEntry, parts: Parameters<BodylessRestCall["run"]>[0], clientRequestId: string | undefined) {
    const start = performance.now();
    const reqId = newRequestId();
    const holder: DirectRequest = { raw: req, rpcCode: undefined };
    try {
      const { status, body, headers: callHeaders } = await entry.call!.run(parts, req, res, this.o.contextValues(holder), this.o.log, reqId);
      const json = JSON.stringify(body);
      const headers: Record<string, string | number> = { "x-request-id": reqId, "vendor-version": API_VERSION };
      callHeaders.forEach((v, k) => void (headers[k] = v));
      const defaults = this.o.defaultRateLimitHeaders;
      if (defaults !== undefined && headers["x-ratelimit-limit-requests"] === undefined) Object.assign(headers, defaults);
      headers["content-type"] = JSON_UTF8;
      const length = Buffer.byteLength(json);
      this.finish(req, res, start, status, headers, json, length, reqId, clientRequestId, entry.count, holder);
    } catch (err) {
      this.failed(res, err, reqId);
    }
  }

  private async serveConnect(req: IncomingMessage, res: ServerResponse, entry: ConnectEntry, format: LeanFormat, clientRequestId: string | undefined) {
    const start = performance.now();
    const reqId = newRequestId();
    const holder: DirectRequest = { raw: req, rpcCode: undefined };
    try {
      const answer = await entry.call(req, res, format, this.o.contextValues(holder), this.o.log);
      const headers: Record<string, string | number> = { "x-request-id": reqId, "vendor-version": API_VERSION, ...answer.headers };
      this.finish(req, res, start, answer.status, headers, answer.body, byteLength(answer.body), reqId, clientRequestId, entry.count, holder);
    } catch (err) {
      this.failed(res, err, reqId);
    }
  }

  private finish(
    req: IncomingMessage,
    res: ServerResponse,
    start: number,
    status: number,
    headers: Record<string, string | number>,
    body: string | Buffer,
    length: number,
    reqId: string,
    clientRequestId: string | undefined,
    count: Count,
    outcome: CallOutcome,
  ) {
    // The client is gone: nothing to write, and (as on Fastify's path, which logs on 'finish')
    // nothing to log or count.
    if (res.destroyed) return;
    headers["vendor-processing-ms"] = Math.round(performance.now() - start);
    headers["content-length"] = length;
    if (this.o.draining()) headers.connection = "close";
    res.writeHead(status, headers);
    res.end(body);
    const ms = performance.now() - start;
    count?.(status, outcome, ms / 1000, req.headers["content-length"], length);
    if (this.o.requestLog.enabled) this.o.requestLog.write(reqId, clientRequestId, req.method!, req.url!, status, ms);
  }

  /** A fault in this path itself (the calls answer their own errors): logged, answered in the error model (a 500). */
  private failed(res: ServerResponse, err: unknown, reqId: string) {
    this.o.log.error({ err, reqId }, "request failed");
    if (res.headersSent) return void res.destroy();
    const { status, body: error } = toRestError(err);
    const body = JSON.stringify(error);
    res.writeHead(status, { "x-request-id": reqId, "vendor-version": API_VERSION, "content-type": JSON_UTF8, "content-length": Buffer.byteLength(body) });
    res.end(body);
  }
}

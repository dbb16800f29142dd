// GET /metrics (Prometheus text format, prom-client's registry): per route and protocol, request
// counts, latency histograms and bytes in and out; rate-limit refusals; the job queue's depth and
// job durations per kind; and prom-client's process and Node.js metrics.
//
// Labels are bounded: `route` is the route's template (`/v1/files/{file_id}`,
// `/atrium.v1.FilesService/GetFile`), never a raw path — requests no route matched are
// `unmatched`; `protocol` is rest, connect, grpc-web, grpc or http (the operator endpoints);
// `code` is the HTTP status for rest/http, and the RPC status name (ok, not_found,
// resource_exhausted, ...) for the RPC protocols, since gRPC answers HTTP 200 whatever happened.
//
// The request path costs a few field increments: each route gets its own onResponse hook (added
// by an onRoute hook, so no per-request route lookup), series live in plain objects, and
// prom-client reads them only when /metrics is scraped (custom collectors), rather than hashing
// label sets on every request.
import { timingSafeEqual } from "node:crypto";
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from "fastify";
import { Code } from "@connectrpc/connect";
import { Counter, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import { livePools } from "../engines/pool/index.js";
import { JobAborted, type JobHandler } from "../jobs/handler.js";
import type { Rejection } from "../limits/rate-limits.js";
import { callOutcomeKey, codeName, type CallOutcome } from "./outcome.js";
import type { ContextValues } from "@connectrpc/connect";

/** Request latency buckets (seconds). */
export const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

type Protocol = "rest" | "connect" | "grpc-web" | "grpc" | "http";

class Series {
  count = 0;
  sum = 0;
  readonly buckets = new Float64Array(LATENCY_BUCKETS.length);
  bytesIn = 0;
  bytesOut = 0;
  constructor(readonly labels: { route: string; protocol: Protocol; code: string }) {}
}

/** One route's series, by protocol and code. */
class RouteSeries {
  private readonly byProtocol = new Map<Protocol, Map<number | string, Series>>();
  constructor(
    readonly route: string,
    private readonly all: Series[],
  ) {}
  get(protocol: Protocol, code: number | string): Series {
    let m = this.byProtocol.get(protocol);
    if (m === undefined) this.byProtocol.set(protocol, (m = new Map()));
    let s = m.get(code);
    if (s === undefined) {
      s = new Series({ route: this.route, protocol, code: typeof code === "number" ? (protocol === "rest" || protocol === "http" ? String(code) : codeName(code)) : code });
      m.set(code, s);
      this.all.push(s);
    }
    return s;
  }
}

/** `/v1/files/:file_id` → `/v1/files/{file_id}`. */
const template = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");

/** Server-side meaning of an HTTP status for an RPC that never reached a handler. */
const RPC_CODE_OF_STATUS: Record<number, string> = {
  400: "invalid_argument",
  401: "unauthenticated",
  403: "permission_denied",
  404: "unimplemented",
  408: "deadline_exceeded",
  413: "resource_exhausted",
  415: "unknown",
  429: "resource_exhausted",
  431: "invalid_argument",
  499: "canceled",
  500: "internal",
  501: "unimplemented",
  503: "unavailable",
};

function rpcProtocol(req: FastifyRequest): Protocol {
  const ct = req.headers["content-type"];
  if (ct === undefined || ct.charCodeAt(12) !== 103 /* g */ || !ct.startsWith("application/grpc")) return "connect";
  return ct.startsWith("application/grpc-web") ? "grpc-web" : "grpc";
}

function contentLength(v: unknown): number {
  const n = typeof v === "number" ? v : typeof v === "string" ? Number(v) : NaN;
  return n > 0 ? n : 0;
}

export interface MetricsOptions {
  /** ATRIUM_METRICS_TOKEN: /metrics then needs `Authorization: Bearer <token>`. */
  token?: string;
  /** Job counts by kind and state (queued, running), read at scrape time. */
  jobDepth?: () => Promise<Array<{ kind: string; state: string; n: number }>>;
  /** prom-client's process and Node.js metrics. Default on. */
  processMetrics?: boolean;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly series: Series[] = [];
  private readonly routes = new Map<string, RouteSeries>();
  /** Every route registered after install(), as Fastify saw it (for the OpenAPI coverage test). */
  readonly registered: Array<{ method: string; url: string }> = [];
  private readonly unmatched: RouteSeries;
  private readonly rejections: Counter<"limit" | "scope">;
  private readonly jobDuration: Histogram<"kind" | "outcome">;

  constructor(private readonly opts: MetricsOptions = {}) {
    this.unmatched = new RouteSeries("unmatched", this.series);
    if (opts.processMetrics !== false) collectDefaultMetrics({ register: this.registry });
    const series = this.series;
    const values = <T>(f: (s: Series) => T) => series.map((s) => ({ labels: s.labels, value: f(s) }));
    // Custom collectors: prom-client formats what these return when /metrics is scraped.
    const counter = (name: string, help: string, f: (s: Series) => number) =>
      this.registry.registerMetric({ name, help, type: "counter", aggregator: "sum", get: () => ({ name, help, type: "counter", aggregator: "sum", values: values(f) }) } as any);
    counter("atrium_requests_total", "Requests answered, by route template, protocol and status (HTTP status for rest/http, RPC status for connect/grpc/grpc-web).", (s) => s.count);
    counter("atrium_request_bytes_total", "Request body bytes received (Content-Length), by route, protocol and status.", (s) => s.bytesIn);
    counter("atrium_response_bytes_total", "Response body bytes sent (Content-Length), by route, protocol and status.", (s) => s.bytesOut);
    const hname = "atrium_request_duration_seconds";
    const hhelp = "Time from receiving a request to the end of its response, by route, protocol and status.";
    this.registry.registerMetric({
      name: hname,
      help: hhelp,
      type: "histogram",
      aggregator: "sum",
      get: () => {
        const out: Array<{ metricName: string; labels: Record<string, string | number>; value: number }> = [];
        for (const s of series) {
          let acc = 0;
          for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
            acc += s.buckets[i]!;
            out.push({ metricName: `${hname}_bucket`, labels: { ...s.labels, le: LATENCY_BUCKETS[i]! }, value: acc });
          }
          out.push({ metricName: `${hname}_bucket`, labels: { ...s.labels, le: "+Inf" }, value: s.count });
          out.push({ metricName: `${hname}_sum`, labels: s.labels, value: s.sum });
          out.push({ metricName: `${hname}_count`, labels: s.labels, value: s.count });
        }
        return { name: hname, help: hhelp, type: "histogram", aggregator: "sum", values: out };
      },
    } as any);
    this.rejections = new Counter({
      name: "atrium_rate_limit_rejections_total",
      help: "Calls refused with 429, by limit (requests, tokens, spend, upload, or an area's rule) and scope (organization, project, user, area).",
      labelNames: ["limit", "scope"],
      registers: [this.registry],
    });
    const depth = opts.jobDepth;
    this.registry.registerMetric({
      name: "atrium_jobs",
      help: "Durable jobs by kind and state (queued: waiting, including retries; running: leased).",
      type: "gauge",
      aggregator: "sum",
      get: async () => ({
        name: "atrium_jobs",
        help: "Durable jobs by kind and state (queued: waiting, including retries; running: leased).",
        type: "gauge",
        aggregator: "sum",
        values: ((await depth?.()) ?? []).map((r) => ({ labels: { kind: r.kind, state: r.state }, value: r.n })),
      }),
    } as any);
    this.registerWorkerGauges();
    this.jobDuration = new Histogram({
      name: "atrium_job_duration_seconds",
      help: "Job runs in this process, by kind and outcome (succeeded, failed, aborted: cancelled, shut down or lease lost).",
      labelNames: ["kind", "outcome"],
      buckets: [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800, 3600],
      registers: [this.registry],
    });
  }

  /** Worker pools' threads, recycling and memory (docs/operations.md, "Memory"). */
  private registerWorkerGauges(): void {
    const gauge = (name: string, help: string, type: "gauge" | "counter", f: (p: ReturnType<typeof livePools>[number]) => number) =>
      this.registry.registerMetric({ name, help, type, aggregator: "sum", get: () => ({ name, help, type, aggregator: "sum", values: livePools().map((p) => ({ labels: { pool: p.name }, value: f(p) })) }) } as any);
    gauge("atrium_worker_threads", "Worker threads alive, by pool.", "gauge", (p) => p.workers);
    gauge("atrium_worker_memory_bytes", "The largest memory (V8 heap plus external, WebAssembly included) a worker of the pool reported after its last task.", "gauge", (p) => Math.round(p.workerMemoryMb * 2 ** 20));
    gauge("atrium_worker_recycled_total", "Idle workers replaced because they passed ATRIUM_WORKER_RECYCLE_MB or ATRIUM_WORKER_RECYCLE_TASKS.", "counter", (p) => p.recycled);
  }

  /** For RateLimits' onReject. */
  readonly onReject = (r: Rejection) => this.rejections.inc({ limit: r.limit, scope: r.scope });

  /** The handler, timed per run into atrium_job_duration_seconds. */
  timeJob<P, R, C>(kind: string, handler: JobHandler<P, R, C>): JobHandler<P, R, C> {
    return async (ctx) => {
      const end = this.jobDuration.startTimer({ kind });
      try {
        const r = await handler(ctx);
        end({ outcome: "succeeded" });
        return r;
      } catch (e) {
        end({ outcome: e instanceof JobAborted || ctx.signal.aborted ? "aborted" : "failed" });
        throw e;
      }
    };
  }

  /**
   * Context values for the Connect plugin: puts the request (decorated with rpcCode) where the
   * auth wrapper records the call's RPC status (outcome.ts).
   */
  contextValues<R extends object>(base: (req: R) => ContextValues): (req: R) => ContextValues {
    return (req) => {
      const v = base(req);
      v.set(callOutcomeKey, req as unknown as CallOutcome);
      return v;
    };
  }

  /** Hooks and the /metrics route. Call before any route is registered (onRoute sees later ones only). */
  install(app: FastifyInstance) {
    app.decorateRequest("rpcCode", undefined);
    app.addHook("onRoute", (route: RouteOptions) => {
      const url = route.url;
      if (typeof url !== "string") return;
      for (const method of [route.method].flat()) this.registered.push({ method, url });
      let rs = this.routes.get(url);
      if (rs === undefined) this.routes.set(url, (rs = new RouteSeries(template(url), this.series)));
      const kind: "rest" | "rpc" | "http" = url.startsWith("/v1/") ? "rest" : /^\/[A-Za-z_][\w.]*\.[A-Za-z_]\w*\/\w+$/.test(url) ? "rpc" : "http";
      const hook = this.routeHook(rs, kind);
      const existing = route.onResponse;
      route.onResponse = existing === undefined ? [hook] : Array.isArray(existing) ? [...existing, hook] : [existing, hook];
    });
    // Requests no route matched (the 404/405 handler): one `unmatched` route, whatever the path.
    app.addHook("onResponse", (req, reply, done) => {
      if (req.is404) this.observe(this.unmatched.get("http", reply.statusCode), req, reply);
      done();
    });
    const token = this.opts.token;
    const expected = token ? Buffer.from(`Bearer ${token}`) : undefined;
    app.get("/metrics", async (req, reply) => {
      if (expected) {
        const given = Buffer.from(req.headers.authorization ?? "");
        if (given.length !== expected.length || !timingSafeEqual(given, expected))
          return reply
            .code(401)
            .type("application/json")
            .send({ error: { message: "This endpoint needs the metrics token: Authorization: Bearer <ATRIUM_METRICS_TOKEN>.", type: "invalid_request_error", param: null, code: "invalid_metrics_token" } });
      }
      const text = await this.registry.metrics();
      return reply.type(this.registry.contentType).send(text);
    });
  }

  /**
   * For calls answered outside Fastify's hooks (transport/direct-unary.ts): counts one answer of the
   * route registered as `url`, as its onResponse hook would (`requestLength`: the request's
   * Content-Length header). Undefined for a route Fastify does not have.
   */
  answerCounter(
    url: string,
    kind: "rest" | "rpc",
  ): ((status: number, outcome: CallOutcome | undefined, seconds: number, requestLength: string | undefined, bytesOut: number) => void) | undefined {
    const rs = this.routes.get(url);
    if (rs === undefined) return undefined;
    return kind === "rest"
      ? (status, _outcome, seconds, requestLength, bytesOut) => record(rs.get("rest", status), seconds, contentLength(requestLength), bytesOut)
      : (status, outcome, seconds, requestLength, bytesOut) => record(rs.get("connect", rpcCodeOf(outcome?.rpcCode, status)), seconds, contentLength(requestLength), bytesOut);
  }

  private routeHook(rs: RouteSeries, kind: "rest" | "rpc" | "http") {
    const observe = this.observe.bind(this);
    if (kind === "rpc")
      return function onRpcResponse(req: FastifyRequest, reply: FastifyReply, done: () => void) {
        observe(rs.get(rpcProtocol(req), rpcCodeOf((req as unknown as CallOutcome).rpcCode, reply.statusCode)), req, reply);
        done();
      };
    return function onResponse(req: FastifyRequest, reply: FastifyReply, done: () => void) {
      observe(rs.get(kind, reply.statusCode), req, reply);
      done();
    };
  }

  private observe(s: Series, req: FastifyRequest, reply: FastifyReply) {
    record(s, reply.elapsedTime / 1000, contentLength(req.headers["content-length"]), contentLength(reply.getHeader("content-length") ?? reply.raw.getHeader("content-length")));
  }
}

function record(s: Series, seconds: number, bytesIn: number, bytesOut: number) {
  s.count++;
  s.sum += seconds;
  for (let i = 0; i < LATENCY_BUCKETS.length; i++)
    if (seconds <= LATENCY_BUCKETS[i]!) {
      s.buckets[i]!++;
      break;
    }
  s.bytesIn += bytesIn;
  s.bytesOut += bytesOut;
}

/** An RPC's status for the metrics: what the auth wrapper recorded, else read off the HTTP status. */
function rpcCodeOf(rpcCode: number | undefined, status: number): number | string {
  return rpcCode !== undefined ? rpcCode : status === 200 ? Code.Unknown : (RPC_CODE_OF_STATUS[status] ?? "unknown");
}

// The operator's view and the per-call limits, assembled for server.ts in a few calls:
//   - rate limits (src/limits): charged by the auth wrapper; headers on every /v1 response;
//   - GET /metrics (metrics.ts), GET /readyz (health.ts), GET /openapi.json (openapi.ts);
//   - gRPC server reflection v1 and v1alpha (reflection.ts);
//   - graceful shutdown (shutdown.ts).
// Environment: ATRIUM_METRICS (on|off, default on), ATRIUM_METRICS_TOKEN, ATRIUM_RATE_LIMITS
// (on|off, default on), ATRIUM_CONSOLE (on|off, default on), ATRIUM_REDIS_URL, ATRIUM_STORAGE_LIMIT_BYTES, ATRIUM_SHUTDOWN_GRACE_MS.
import type { FastifyInstance } from "fastify";
import type { ContextValues } from "@connectrpc/connect";
import type { Logger } from "pino";
import { ConfigError } from "../config.js";
import type { ServiceBinding } from "../common/service.js";
import type { JobHandler } from "../jobs/handler.js";
import { limitsEnv, type LimitsEnv, type LimitsFileConfig } from "../limits/config.js";
import { CallLimits, ProjectStorage, openRateLimits } from "../limits/index.js";
import { DEFAULT_RATE_LIMIT_HEADERS, type RateLimits } from "../limits/rate-limits.js";
import type { MultipartShape } from "../transport/rest/multipart.js";
import type { BlobStore, RecordStore } from "../storage/types.js";
import { installConsole } from "./console.js";
import { installReadiness } from "./health.js";
import { Metrics } from "./metrics.js";
import { generateOpenApi } from "./openapi.js";
import { reflectionServices } from "./reflection.js";
import { DEFAULT_SHUTDOWN_GRACE_MS, Drain } from "./shutdown.js";

type Env = Record<string, string | undefined>;

export interface OperabilityEnv {
  /** ATRIUM_METRICS: "on" (default) or "off" (no /metrics and no per-request metrics: benchmarks). */
  metrics: boolean;
  /** ATRIUM_METRICS_TOKEN: /metrics needs `Authorization: Bearer <token>`. */
  metricsToken?: string;
  /** ATRIUM_SHUTDOWN_GRACE_MS: how long shutdown waits for requests in flight (default 10000). */
  shutdownGraceMs: number;
  limits: LimitsEnv;
  /** ATRIUM_CONSOLE: "on" (default) serves the web console at /console/; "off" serves none. */
  console: boolean;
}

function onOff(env: Env, name: string): boolean {
  const v = (env[name] ?? "on").toLowerCase();
  if (v === "on" || v === "true" || v === "1") return true;
  if (v === "off" || v === "false" || v === "0") return false;
  throw new ConfigError(`${name} must be on or off, got '${env[name]}'`);
}

export function operabilityEnv(env: Env): OperabilityEnv {
  const grace = env.ATRIUM_SHUTDOWN_GRACE_MS;
  const shutdownGraceMs = grace === undefined || grace === "" ? DEFAULT_SHUTDOWN_GRACE_MS : Number(grace);
  if (!Number.isInteger(shutdownGraceMs) || shutdownGraceMs < 0) throw new ConfigError(`ATRIUM_SHUTDOWN_GRACE_MS must be a whole number of milliseconds, got '${grace}'`);
  return {
    metrics: onOff(env, "ATRIUM_METRICS"),
    metricsToken: env.ATRIUM_METRICS_TOKEN || undefined,
    shutdownGraceMs,
    limits: limitsEnv(env),
    console: onOff(env, "ATRIUM_CONSOLE"),
  };
}

export interface OperabilityDeps {
  env: Env;
  log: Logger;
  /** Queued and running jobs by kind, for the jobs gauge (JobStore.unfinishedCounts). */
  jobDepth?: () => Promise<Array<{ kind: string; state: string; n: number }>>;
  records: RecordStore;
  blobs: BlobStore;
  /** ATRIUM_CONFIG as read: organizations' and projects' rate_limits and spend caps. */
  file: LimitsFileConfig;
  /** The data directory and ATRIUM_MIN_FREE_DISK_BYTES: /readyz fails below that much free space. */
  disk?: { dir: string; minFreeBytes: number };
}

export class Operability {
  private constructor(
    readonly env: OperabilityEnv,
    private readonly deps: OperabilityDeps,
    /** What the auth wrapper applies per call: rate limits (undefined when off) and the storage cap. */
    readonly callLimits: CallLimits,
    /** Undefined when ATRIUM_METRICS=off. */
    readonly metrics: Metrics | undefined,
    readonly drain: Drain,
  ) {}

  static async open(deps: OperabilityDeps): Promise<Operability> {
    const env = operabilityEnv(deps.env);
    const metrics = env.metrics ? new Metrics({ token: env.metricsToken, jobDepth: deps.jobDepth }) : undefined;
    const limits = await openRateLimits(env.limits, deps.file, { log: deps.log, onReject: metrics?.onReject });
    const callLimits = new CallLimits(limits, new ProjectStorage(deps.records, env.limits.projectStorageBytes));
    return new Operability(env, deps, callLimits, metrics, new Drain(env.shutdownGraceMs));
  }

  /** Undefined when ATRIUM_RATE_LIMITS=off. */
  get limits(): RateLimits | undefined {
    return this.callLimits.rate;
  }

  /**
   * What a /v1/ answer carries when the call set no x-ratelimit-* headers of its own (refused before
   * a caller was known: 401, unknown path, an unparseable body); undefined with rate limits off.
   */
  get defaultRateLimitHeaders(): Readonly<Record<string, string>> | undefined {
    return this.limits === undefined ? undefined : DEFAULT_RATE_LIMIT_HEADERS;
  }

  /**
   * Hooks and the operator routes. Call once, before any other route is registered (the metrics
   * see routes through onRoute).
   */
  install(app: FastifyInstance, o: { services: ServiceBinding[]; multipart: Record<string, MultipartShape>; jobsRunning: () => boolean }) {
    this.metrics?.install(app);
    this.drain.install(app);
    const drain = this.drain;
    const defaults = this.defaultRateLimitHeaders;
    app.addHook("onSend", (req, reply, payload, done) => {
      if (drain.draining && req.raw.httpVersionMajor === 1) reply.header("connection", "close");
      // Every /v1 response carries the headers: the call's own, or the default limits, untouched.
      if (defaults !== undefined && req.url.startsWith("/v1/") && !reply.hasHeader("x-ratelimit-limit-requests")) reply.headers(defaults);
      done(null, payload);
    });
    installReadiness(app, { records: this.deps.records, blobs: this.deps.blobs, disk: this.deps.disk, jobsRunning: o.jobsRunning, draining: () => drain.draining });
    // Generated on the first request for it: few servers are asked, and the document costs
    // start-up time and memory.
    let doc: string | undefined;
    app.get("/openapi.json", (_req, reply) => {
      doc ??= JSON.stringify(generateOpenApi({ services: o.services, multipart: o.multipart }));
      reply.type("application/json").send(doc);
    });
    if (this.env.console) installConsole(app);
  }

  /** Services served over Connect/gRPC only, outside the auth wrapper: server reflection. */
  rpcServices(served: ServiceBinding[]): ServiceBinding[] {
    return reflectionServices(served.map((s) => s.desc));
  }

  /** The Connect plugin's contextValues, with the slot the RPC status is recorded in. */
  connectContextValues<R extends object>(base: (req: R) => ContextValues): (req: R) => ContextValues {
    return this.metrics ? this.metrics.contextValues(base) : base;
  }

  timeJob<P, R, C>(kind: string, handler: JobHandler<P, R, C>): JobHandler<P, R, C> {
    return this.metrics ? this.metrics.timeJob(kind, handler) : handler;
  }

  async close() {
    await this.callLimits.close();
  }
}

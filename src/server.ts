// Assembles Atrium: storage, keys, the API areas (services/index.ts, each wrapped by auth), and one
// Fastify app that serves REST (the transcoder), Connect, gRPC-Web and gRPC. Building the app and
// listening are apart: `buildServer` makes the app, `listen` binds the main one-port listener, and
// `addListener` serves the same app on another port with its own connection facts (the mTLS port).
import { mkdirSync, readFileSync } from "node:fs";
import type { AddressInfo, Server } from "node:net";
import Fastify, { LogController, type FastifyInstance } from "fastify";
import pino, { type Logger } from "pino";
import { createRegistry } from "@bufbuild/protobuf";
import { file_atrium_v1_options } from "../gen/atrium/v1/options_pb.js";
import { DEFAULT_STORAGE_UPKEEP, type AtriumConfig } from "./config.js";
import { openStorage, type ServerStorage } from "./storage/index.js";
import { KeyStore } from "./auth/keys.js";
import { Providers } from "./providers/registry.js";
import { Authenticator } from "./auth/authenticate.js";
import { bootstrap } from "./auth/bootstrap.js";
import { requireAccessRules } from "./auth/access.js";
import { secureService } from "./auth/secure.js";
import { installWorkloadIdentity } from "./auth/identity/index.js";
import { createOnePortServer, type TlsFiles } from "./transport/listener.js";
import { connectPlugin, leanByDefault, leanUnaryCalls } from "./transport/connect/plugin.js";
import { DirectUnary } from "./transport/direct-unary.js";
import { requestContextValues, tagSocket } from "./transport/connection.js";
import { API_VERSION, checkRequestHeaders, newRequestId } from "./transport/headers.js";
import { RequestLog } from "./transport/request-log.js";
import { ApiError, keepPathsPrivate } from "./common/errors.js";
import { frameworkErrorHandler, installErrorHandler, installNotFoundHandler } from "./transport/fastify-errors.js";
import type { ServiceBinding } from "./common/service.js";
import { allowedMethods, registerRestRoutes, type RestRoutes } from "./transport/rest/transcoder.js";
import type { MultipartShape } from "./transport/rest/multipart.js";
import { FormBody } from "./transport/rest/form.js";
import { JsonBodies, opensAsJson } from "./transport/rest/json-body.js";
import { systemClock, type AreaEvents, type Clock, type ServiceDeps } from "./services/deps.js";
import { ExpirySweeper } from "./jobs/expiry.js";
import { JobRunner } from "./jobs/runner.js";
import { OrphanBlobSweeper } from "./jobs/orphan-blobs.js";
import type { ApiArea, AreaRuntime } from "./services/area.js";
import { areas as defaultAreas } from "./services/index.js";
import { Operability } from "./operability/index.js";
import type { RateLimits } from "./limits/index.js";
import type { Metrics } from "./operability/metrics.js";

export const JSON_BODY_LIMIT = 32 * 1024 * 1024;

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
  /** The areas to serve; default: every area of services/index.ts. */
  areas?: ApiArea[];
  /** Where the limits and operability settings are read (ATRIUM_RATE_LIMITS, ATRIUM_METRICS, ...); default process.env. */
  env?: Record<string, string | undefined>;
  /**
   * Answer the common unary calls beside Fastify's lifecycle (transport/direct-unary.ts). Default:
   * on, unless the environment sets ATRIUM_DIRECT_UNARY=off (every request through Fastify: for
   * comparing the two, and a way out should the direct path ever misbehave).
   */
  directUnary?: boolean;
}

export interface AtriumServer {
  app: FastifyInstance;
  deps: ServiceDeps;
  sweeper: ExpirySweeper;
  /** The orphan-blob sweeper (its runs are `storage.sweep-orphans` jobs; `sweep()` runs one pass now). */
  orphans: OrphanBlobSweeper;
  jobs: JobRunner;
  generatedAdminKey?: string;
  /** Per-call rate limits (undefined with ATRIUM_RATE_LIMITS=off); `limits.check`/`enforce` serve areas' own limits. */
  limits?: RateLimits;
  /** Undefined with ATRIUM_METRICS=off. */
  metrics?: Metrics;
  /** The direct unary path; undefined when off (ATRIUM_DIRECT_UNARY=off) or before the app is ready. */
  readonly directUnary: DirectUnary | undefined;
  /** Binds the main listener (ATRIUM_HOST/ATRIUM_PORT, TLS when configured). */
  listen(): Promise<{ url: string; port: number }>;
  /**
   * Serves the same app on another port. Handlers see `listener: name` and the client certificate
   * (when `tls.requestCert`) in their context's connection facts (transport/connection.ts).
   */
  addListener(name: string, opts: { host: string; port: number; tls?: TlsFiles }): Promise<ExtraListener>;
  /** Applies a re-read ATRIUM_CONFIG (SIGHUP, file change): organizations, projects, keys, service accounts, identity providers. */
  reloadConfig(next: AtriumConfig): Promise<void>;
  close(): Promise<void>;
}

export interface ExtraListener {
  url: string;
  port: number;
  close(): Promise<void>;
}

export interface RunningServer extends AtriumServer {
  url: string;
  port: number;
}

const urlOf = (host: string, port: number, tls: boolean) => `${tls ? "https" : "http"}://${host.includes(":") ? `[${host}]` : host}:${port}`;

/** Everything behind the HTTP layer: storage, keys, the areas, jobs, the sweeper, operability. */
interface Core {
  log: Logger;
  destination: ReturnType<typeof pino.destination> | undefined;
  storage: ServerStorage;
  deps: ServiceDeps;
  auth: Authenticator;
  runtimes: AreaRuntime[];
  jobs: JobRunner;
  sweeper: ExpirySweeper;
  orphans: OrphanBlobSweeper;
  ops: Operability;
  generatedAdminKey: string | undefined;
}

async function openCore(cfg: AtriumConfig, opts: StartOptions, areas: ApiArea[]): Promise<Core> {
  const names = new Set<string>();
  for (const a of areas) {
    if (names.has(a.name)) throw new Error(`two API areas are named '${a.name}'`);
    names.add(a.name);
  }
  // Asynchronous log writes: a synchronous write per request line cost ~50-90 µs of CPU per
  // request in the bench. pino flushes what is pending on a normal exit.
  const destination = opts.logger ? undefined : pino.destination({ sync: false });
  const log = opts.logger ?? pino({ level: cfg.logLevel }, destination!);
  mkdirSync(cfg.dataDir, { recursive: true });
  keepPathsPrivate(cfg.dataDir);
  const clock = opts.clock ?? systemClock;
  // The store hides expired rows by the same clock the services and the sweeper use.
  const upkeep = cfg.storage ?? DEFAULT_STORAGE_UPKEEP;
  const storage = await openStorage(
    { dataDir: cfg.dataDir, ...cfg.engines, env: opts.env ?? process.env },
    { now: () => clock.now(), migrations: areas.flatMap((a) => a.migrations ?? []), reserveBytes: upkeep.diskReserveBytes },
  );
  const { records, blobs, jobs: jobStore, signals } = storage;
  const keys = new KeyStore(records, signals);
  const { generatedAdminKey } = await bootstrap(keys, cfg);
  const runtimes: AreaRuntime[] = [];
  // Events reach every area's hook; none is sent before the areas are set up (no request yet).
  const events: AreaEvents = {
    async fileDeleted(scope, fileId) {
      for (const r of runtimes) await r.onFileDeleted?.(scope, fileId);
    },
  };
  // Rate limits, metrics, /readyz, /openapi.json, reflection, graceful shutdown (src/operability/).
  const ops = await Operability.open({ env: opts.env ?? process.env, log, records, blobs, file: cfg.file, jobDepth: () => jobStore.unfinishedCounts(), disk: { dir: cfg.dataDir, minFreeBytes: upkeep.minFreeDiskBytes } });
  const deps: ServiceDeps = { records, blobs, keys, clock, log, events, storageCap: ops.callLimits.storage };
  const providers = new Providers(cfg.providers);
  const jobs = new JobRunner(jobStore, { log });

  try {
    for (const area of areas) runtimes.push(await area.setup({ deps, config: cfg, providers, jobs, limits: ops.limits }));
    requireAccessRules(runtimes.flatMap((r) => r.services));
  } catch (e) {
    for (const r of runtimes) await r.stop?.();
    await ops.close();
    await storage.close();
    throw e;
  }
  for (const r of runtimes)
    for (const [kind, { handler, options, settle }] of Object.entries(r.jobs ?? {})) {
      jobs.register(kind, ops.timeJob(kind, handler), options);
      jobs.onFinished(kind, settle);
    }
  const sweeper = new ExpirySweeper(records, clock, log, jobs);
  for (const r of runtimes) for (const [kind, handler] of Object.entries(r.expiry ?? {})) sweeper.on(kind, handler);
  const orphans = new OrphanBlobSweeper(blobs, jobs, log, { graceMs: upkeep.orphanGraceMs, intervalMs: upkeep.orphanSweepIntervalMs });
  for (const r of runtimes) for (const owner of r.blobOwners ?? []) orphans.own(owner);
  return { log, destination, storage, deps, auth: new Authenticator(keys), runtimes, jobs, sweeper, orphans, ops, generatedAdminKey };
}

/** What the main listener asks before handing a request to Fastify; set once the routes are known. */
interface FrontDoor {
  direct?: DirectUnary;
}

/** The Fastify instance on the one-port listener, with the hooks every request passes. */
function createApp(cfg: AtriumConfig, core: Core, tls: TlsFiles | undefined, requestLog: RequestLog, front: FrontDoor): FastifyInstance {
  const { log } = core;
  // The server is our one-port HTTP/1.1 + h2c hybrid; Fastify's types only know one kind at a time.
  const app: FastifyInstance = (Fastify as any)({
    loggerInstance: log,
    // One line per request, written by the onResponse hook below with both request ids; no
    // per-request child logger (errors are logged with their request id explicitly).
    logController: new LogController({ disableRequestLogging: true }),
    childLoggerFactory: (logger: Logger) => logger,
    genReqId: () => newRequestId(),
    requestIdHeader: false,
    bodyLimit: JSON_BODY_LIMIT,
    // Errors Fastify raises before routing (a path that is not valid percent-encoding, ...).
    frameworkErrors: frameworkErrorHandler(log),
    serverFactory: (handler: any) =>
      createOnePortServer(
        (req, res) => {
          if (front.direct?.take(req, res)) return;
          handler(req, res);
        },
        cfg.connections,
        tls,
      ),
    forceCloseConnections: true,
    // Start-up takes ~0.25 s; on a starved machine (a test suite's parallel forks on 2 cores) the
    // default 10 s per plugin can run out. A real hang still fails, just later.
    pluginTimeout: 60_000,
    return503OnClosing: false,
  });

  app.addHook("onRequest", (req, reply, done) => {
    reply.header("x-request-id", req.id);
    reply.header("vendor-version", API_VERSION);
    try {
      (req as any).clientRequestId = checkRequestHeaders(req.headers);
      done();
    } catch (e) {
      done(e as Error);
    }
  });
  app.addHook("onSend", (_req, reply, payload, done) => {
    reply.header("vendor-processing-ms", Math.round(reply.elapsedTime));
    done(null, payload);
  });
  if (requestLog.enabled) {
    app.addHook("onResponse", (req, reply, done) => {
      requestLog.write(req.id, (req as any).clientRequestId, req.method, req.url, reply.statusCode, reply.elapsedTime);
      done();
    });
    app.addHook("onClose", (_app, done) => {
      requestLog.close();
      done();
    });
  }
  installErrorHandler(app, log);
  return app;
}

/** REST routes in a scope of their own: JSON (whatever the label), forms, and multipart left to the uploads. */
async function registerRest(app: FastifyInstance, services: ServiceBinding[], multipart: Record<string, MultipartShape>): Promise<RestRoutes> {
  let routes: RestRoutes = { bindings: [], bodyless: [] };
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("multipart/form-data", (_req, _payload, done) => done(null, undefined));
    // `curl -d '{...}'` labels a JSON body url-encoded: a body that opens as JSON is read as JSON.
    const json = new JsonBodies();
    scope.addHook("onClose", (_app, done) => void json.close().then(() => done(), done));
    const parsed = (body: Buffer, done: (err: Error | null, body?: unknown) => void) => {
      let value: unknown;
      try {
        value = json.parse(body);
      } catch (e) {
        return done(e as Error, undefined);
      }
      if (value instanceof Promise) value.then((v) => done(null, v), (e: Error) => done(e, undefined));
      else done(null, value);
    };
    scope.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "buffer" }, (_req, body, done) => {
      const buffer = body as Buffer;
      if (opensAsJson(buffer)) return parsed(buffer, done);
      try {
        done(null, FormBody.fromUrlEncoded(buffer.toString("utf8")));
      } catch (e) {
        done(e as Error, undefined);
      }
    });
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => parsed(body as Buffer, done));
    routes = registerRestRoutes(scope, { services, multipart, contextValues: requestContextValues });
  });
  return routes;
}

export async function buildServer(cfg: AtriumConfig, opts: StartOptions = {}): Promise<AtriumServer> {
  const areas = opts.areas ?? defaultAreas;
  const core = await openCore(cfg, opts, areas);
  const { deps, ops, jobs, sweeper, runtimes, storage } = core;
  const services: ServiceBinding[] = runtimes.flatMap((r) => r.services).map((s) => secureService(s, core.auth, ops.callLimits));
  const multipart: Record<string, MultipartShape> = Object.assign({}, ...areas.map((a) => a.multipart ?? {}));

  const tls: TlsFiles | undefined = cfg.tlsCert ? { cert: readFileSync(cfg.tlsCert), key: readFileSync(cfg.tlsKey!) } : undefined;
  const requestLog = new RequestLog(core.log, core.destination);
  const front: FrontDoor = {};
  const app = createApp(cfg, core, tls, requestLog, front);
  let started = false;
  ops.install(app, { services, multipart, jobsRunning: () => started });
  // POST /oauth/token, minted-token verification, the mTLS listener's rules (src/auth/identity/).
  const identity = installWorkloadIdentity(app, { config: cfg, deps, auth: core.auth });

  app.get("/healthz", async () => ({ status: "ok" }));

  // Connect, gRPC and gRPC-Web: their own scope, since the plugin installs its own body parsers.
  // Stock connect-fastify, with unary Connect calls on the lean path (src/transport/connect/).
  // JSON codecs need the registry to write the google.protobuf.Any extensions (ContentRange) and
  // error details (ErrorInfo) the services send.
  const rpcServices = [...services, ...ops.rpcServices(services)];
  const connectOptions = { jsonOptions: { registry: createRegistry(file_atrium_v1_options) }, readMaxBytes: JSON_BODY_LIMIT };
  const contextValues = ops.connectContextValues(requestContextValues);
  const leanCalls = leanByDefault() ? leanUnaryCalls(rpcServices, connectOptions) : undefined;
  await app.register(connectPlugin, { services: rpcServices, ...connectOptions, contextValues, lean: leanCalls !== undefined, leanCalls });
  const rest = await registerRest(app, services, multipart);
  installNotFoundHandler(app, { allowedMethods: (path) => allowedMethods(rest.bindings, path) });
  if (opts.directUnary ?? (opts.env ?? process.env).ATRIUM_DIRECT_UNARY !== "off")
    // Once ready: every route is registered, so the metrics know each one's series.
    app.addHook("onReady", (done) => {
      front.direct = new DirectUnary({
        router: app.initialConfig,
        restBindings: rest.bindings,
        rest: rest.bodyless,
        connect: leanCalls,
        contextValues,
        log: core.log,
        requestLog,
        metrics: ops.metrics,
        draining: () => ops.drain.draining,
        defaultRateLimitHeaders: ops.defaultRateLimitHeaders,
      });
      done();
    });

  const extra = new Set<ExtraListener>();
  return {
    app,
    deps,
    sweeper,
    orphans: core.orphans,
    jobs,
    generatedAdminKey: core.generatedAdminKey,
    limits: ops.limits,
    metrics: ops.metrics,
    get directUnary() {
      return front.direct;
    },
    reloadConfig: async (next) => {
      await identity.reload(next);
      ops.limits?.configure(next.file);
    },
    async listen() {
      await app.listen({ host: cfg.host, port: cfg.port });
      started = true;
      jobs.start();
      sweeper.start();
      await core.orphans.start();
      const port = (app.server.address() as AddressInfo).port;
      return { url: urlOf(cfg.host, port, !!tls), port };
    },
    addListener: (name, o) => addListener(app, cfg, extra, name, o),
    async close() {
      for (const l of [...extra]) await l.close();
      if (started) await sweeper.stop();
      await app.close();
      // Running jobs are aborted with "shutdown" and stay resumable; the next start finishes them.
      if (started) await jobs.stop();
      for (const r of runtimes) await r.stop?.();
      await ops.close();
      await storage.close();
    },
  };
}

/** A second listener (the mTLS port) serving the same routes, hooks and errors. */
async function addListener(app: FastifyInstance, cfg: AtriumConfig, extra: Set<ExtraListener>, name: string, o: Parameters<AtriumServer["addListener"]>[1]): Promise<ExtraListener> {
  await app.ready();
  // app.routing is the handler Fastify's own server calls: same routes, hooks and errors.
  const server: Server = createOnePortServer(app.routing as any, cfg.connections, o.tls);
  server.on(o.tls ? "secureConnection" : "connection", (socket) => tagSocket(socket, name));
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const l: ExtraListener = {
    url: urlOf(o.host, port, !!o.tls),
    port,
    close: () =>
      new Promise<void>((resolve) => {
        extra.delete(l);
        (server as any).closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
  extra.add(l);
  return l;
}

/** Builds the server and binds its main listener. */
export async function startServer(cfg: AtriumConfig, opts: StartOptions = {}): Promise<RunningServer> {
  const server = await buildServer(cfg, opts);
  const { url, port } = await server.listen();
  return Object.assign(server, { url, port });
}

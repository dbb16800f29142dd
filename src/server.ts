// Assembles Atrium: storage, keys, the services (each wrapped by auth), and one Fastify app that
// serves REST (the transcoder), Connect, gRPC-Web and gRPC on one port.
import { mkdirSync, readFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import Fastify, { LogController, type FastifyInstance } from "fastify";
import pino, { type Logger } from "pino";
import { createRegistry, type DescService } from "@bufbuild/protobuf";
import { FilesService } from "../gen/atrium/v1/files_pb.js";
import { file_atrium_v1_options } from "../gen/atrium/v1/options_pb.js";
import { UploadsService } from "../gen/atrium/v1/uploads_pb.js";
import { ModelsService } from "../gen/atrium/v1/models_pb.js";
import { ResponsesService } from "../gen/atrium/v1/responses_pb.js";
import type { AtriumConfig } from "./config.js";
import { openStorage } from "./storage/index.js";
import { KeyStore } from "./auth/keys.js";
import { Authenticator } from "./auth/authenticate.js";
import { bootstrap } from "./auth/bootstrap.js";
import { secureService } from "./auth/secure.js";
import { createOnePortServer, type TlsFiles } from "./transport/listener.js";
import { connectPlugin } from "./transport/connect/plugin.js";
import { API_VERSION, checkRequestHeaders, newRequestId } from "./transport/headers.js";
import { ApiError, toRestError } from "./common/errors.js";
import { allowedMethods, registerRestRoutes, type RegisteredService } from "./transport/rest/transcoder.js";
import { systemClock, type Clock, type ServiceDeps } from "./services/deps.js";
import { Sweeper, timerKind } from "./services/common/timers.js";
import { createFilesService } from "./services/files/handler.js";
import { FILE_KIND } from "./services/files/files.js";
import { createUploadsService } from "./services/uploads/handler.js";
import { Uploads, UPLOAD_TIMER } from "./services/uploads/uploads.js";
import { createModelsService } from "./services/models/handler.js";
import { createResponsesService } from "./services/responses/handler.js";

export const JSON_BODY_LIMIT = 32 * 1024 * 1024;

export interface StartOptions {
  clock?: Clock;
  logger?: Logger;
}

export interface RunningServer {
  app: FastifyInstance;
  url: string;
  port: number;
  deps: ServiceDeps;
  sweeper: Sweeper;
  generatedAdminKey?: string;
  close(): Promise<void>;
}

function parseJsonBody(body: Buffer): unknown {
  if (body.length === 0) return undefined;
  try {
    // One UTF-8 decode of the whole body: Fastify's parseAs "string" decodes chunk by chunk and
    // concatenates, which cost ~8 ms per MB on token-counting bodies.
    return JSON.parse(body.toString("utf8"));
  } catch (e) {
    throw new ApiError(
      400,
      `We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The platform expects a JSON payload, but what was sent was not valid JSON.) ${(e as Error).message}`,
      { code: "invalid_json" },
    );
  }
}

/** Public codes for the errors Fastify raises itself (its FST_ERR_* names are internal). */
function fastifyErrorCode(status: number): string | null {
  if (status === 413) return "request_too_large";
  if (status === 415) return "unsupported_content_type";
  if (status === 400) return "invalid_request";
  return null;
}

export async function startServer(cfg: AtriumConfig, opts: StartOptions = {}): Promise<RunningServer> {
  // Asynchronous log writes: a synchronous write per request line cost ~50-90 µs of CPU per
  // request in the bench. pino flushes what is pending on a normal exit.
  const log = opts.logger ?? pino({ level: cfg.logLevel }, pino.destination({ sync: false }));
  mkdirSync(cfg.dataDir, { recursive: true });
  const clock = opts.clock ?? systemClock;
  // The store hides expired rows by the same clock the services and the sweeper use.
  const { records, blobs } = await openStorage(cfg.dataDir, { now: () => clock.now() });
  const keys = new KeyStore(records);
  const { generatedAdminKey } = await bootstrap(keys, cfg);
  const deps: ServiceDeps = { records, blobs, keys, clock, log };
  const auth = new Authenticator(keys);

  const uploads = new Uploads(deps);
  const plain: Array<{ desc: DescService; impl: any }> = [
    { desc: FilesService, impl: createFilesService(deps) },
    { desc: UploadsService, impl: createUploadsService(deps, uploads) },
    { desc: ModelsService, impl: createModelsService(deps) },
    { desc: ResponsesService, impl: createResponsesService(deps, { fetch: { timeoutMs: cfg.fetchTimeoutMs, allowPrivate: cfg.fetchAllowPrivate } }) },
  ];
  const services: RegisteredService[] = plain.map(({ desc, impl }) => ({ desc, impl: secureService(desc, impl, auth) }));

  const sweeper = new Sweeper(records, clock, log);
  sweeper.on(FILE_KIND, async (_scope, rec) => blobs.delete(rec.id));
  sweeper.on(timerKind(UPLOAD_TIMER), async (scope, rec) => uploads.expire(scope, rec.id));

  const tls: TlsFiles | undefined = cfg.tlsCert ? { cert: readFileSync(cfg.tlsCert), key: readFileSync(cfg.tlsKey!) } : undefined;
  // The server is our one-port HTTP/1.1 + h2c hybrid; Fastify's types only know one kind at a time.
  const app: FastifyInstance = (Fastify as any)({
    loggerInstance: log,
    // One line per request, written by the onResponse hook below with both request ids.
    logController: new LogController({ disableRequestLogging: true }),
    genReqId: () => newRequestId(),
    requestIdHeader: false,
    bodyLimit: JSON_BODY_LIMIT,
    serverFactory: (handler: any) => createOnePortServer(handler, tls),
    forceCloseConnections: true,
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
  app.addHook("onResponse", (req, reply, done) => {
    req.log.info(
      { clientRequestId: (req as any).clientRequestId, method: req.method, url: req.url, status: reply.statusCode, ms: Math.round(reply.elapsedTime) },
      "request",
    );
    done();
  });
  app.setErrorHandler((err, _req, reply) => {
    // Fastify's own errors (body too large, bad content length, ...) carry a statusCode.
    const status = (err as { statusCode?: number }).statusCode;
    const e = err instanceof ApiError ? err : status && status < 500 ? new ApiError(status, (err as Error).message, { code: fastifyErrorCode(status) }) : err;
    const { status: s, body, headers } = toRestError(e);
    if (s >= 500) reply.log.error({ err }, "request failed");
    reply.code(s).headers(headers).type("application/json").send(body);
  });

  app.get("/healthz", async () => ({ status: "ok" }));

  // Connect, gRPC and gRPC-Web: their own scope, since the plugin installs its own body parsers.
  // Stock connect-fastify, with unary Connect calls on the lean path (src/transport/connect/).
  // JSON codecs need the registry to write the google.protobuf.Any extensions (ContentRange) and
  // error details (ErrorInfo) the services send.
  await app.register(connectPlugin, { services, jsonOptions: { registry: createRegistry(file_atrium_v1_options) } });

  let bindings: ReturnType<typeof registerRestRoutes> = [];
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("multipart/form-data", (_req, _payload, done) => done(null, undefined));
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => {
      try {
        done(null, parseJsonBody(body as Buffer));
      } catch (e) {
        done(e as Error, undefined);
      }
    });
    bindings = registerRestRoutes(scope, { services });
  });

  app.setNotFoundHandler((req, reply) => {
    const path = req.url.split("?")[0];
    const allow = allowedMethods(bindings, path);
    if (allow.length) {
      reply
        .code(405)
        .header("allow", allow.join(", "))
        .send({ error: { message: `Method ${req.method} is not allowed for ${path}; allowed: ${allow.join(", ")}.`, type: "invalid_request_error", param: null, code: "method_not_allowed" } });
      return;
    }
    reply.code(404).send({ error: { message: `Invalid URL (${req.method} ${path})`, type: "invalid_request_error", param: null, code: null } });
  });

  await app.listen({ host: cfg.host, port: cfg.port });
  const port = (app.server.address() as AddressInfo).port;
  sweeper.start();
  const scheme = tls ? "https" : "http";
  return {
    app,
    url: `${scheme}://${cfg.host.includes(":") ? `[${cfg.host}]` : cfg.host}:${port}`,
    port,
    deps,
    sweeper,
    generatedAdminKey,
    async close() {
      await sweeper.stop();
      await app.close();
      await records.close();
    },
  };
}

// Connect, gRPC and gRPC-Web for Fastify: the stock @connectrpc/connect-fastify plugin serves
// every RPC, and an onRoute hook puts the lean unary handler (lean-unary.ts) in front of each
// unary route it registers. A request the lean path does not take (see leanFormat) reaches the
// stock handler untouched, so streaming, gRPC, gRPC-Web, Connect GET and compressed requests
// behave exactly as stock.
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from "fastify";
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import type { ConnectRouter, ConnectRouterOptions, ContextValues } from "@connectrpc/connect";
import { createMethodUrl, validateUniversalHandlerOptions } from "@connectrpc/connect/protocol";
import { compressionBrotli, compressionGzip } from "@connectrpc/connect-node";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
import type { ServiceBinding } from "../../common/service.js";
import { createLeanUnaryCall, leanFastifyHandler, leanFormat, LeanFormat, type LeanCall, type LeanUnaryOptions } from "./lean-unary.js";
import { parseErrorsAsInvalidArgument } from "./parse-errors.js";


export interface ConnectPluginOptions extends ConnectRouterOptions {
  /** The services to serve: the same implementations the REST transcoder calls. */
  services: ServiceBinding[];
  /**
   * Serve unary Connect calls on the lean path. Default: on, unless the environment sets
   * ATRIUM_CONNECT_LEAN=off (every call on the stock handler: for comparing the two, and a way out
   * should the lean path ever misbehave).
   */
  lean?: boolean;
  /** As in connect-fastify: context values for each request. */
  contextValues?: (req: FastifyRequest) => ContextValues;
  shutdownTimeoutMs?: number;
  shutdownError?: unknown;
  /** The lean calls by route path, when the caller built them (leanUnaryCalls) to serve them elsewhere too. */
  leanCalls?: Map<string, LeanCall>;
}

/** The lean call of every unary method, by its route path (`/package.Service/Method`). */
export function leanUnaryCalls(services: ServiceBinding[], options: ConnectRouterOptions): Map<string, LeanCall> {
  const base = validateUniversalHandlerOptions(options);
  const opt: LeanUnaryOptions = {
    // connect-fastify's default, so both paths negotiate the same response compressions.
    acceptCompression: options.acceptCompression ? [...options.acceptCompression] : [compressionGzip, compressionBrotli],
    compressMinBytes: base.compressMinBytes,
    readMaxBytes: base.readMaxBytes,
    writeMaxBytes: base.writeMaxBytes,
    maxTimeoutMs: base.maxTimeoutMs,
    jsonOptions: options.jsonOptions,
    binaryOptions: options.binaryOptions,
    shutdownSignal: options.shutdownSignal,
  };
  const byPath = new Map<string, LeanCall>();
  for (const { desc, impl } of services)
    for (const method of desc.methods) {
      const fn = impl[method.localName];
      if (method.methodKind !== "unary" || typeof fn !== "function") continue;
      byPath.set(createMethodUrl("/", method), createLeanUnaryCall(desc, method as DescMethod & { methodKind: "unary" }, fn.bind(impl), opt));
    }
  return byPath;
}

/** The onRoute hook that fronts each unary Connect route with its lean call. */
export function leanUnaryRoutes(calls: Map<string, LeanCall>, contextValues?: (req: FastifyRequest) => ContextValues) {
  return function onRoute(route: RouteOptions) {
    const call = calls.get(route.url);
    if (!call) return;
    const stock = route.handler;
    const lean = leanFastifyHandler(call, contextValues);
    route.handler = function connectUnary(this: FastifyInstance, req: FastifyRequest, reply: FastifyReply) {
      if (req.raw.method === "POST") {
        const format = leanFormat(req.raw.headers);
        if (format !== LeanFormat.None) return lean(req, reply, format);
      }
      return stock.call(this, req, reply);
    };
  };
}

/** Whether unary Connect calls take the lean path: yes, unless ATRIUM_CONNECT_LEAN=off. */
export const leanByDefault = () => process.env.ATRIUM_CONNECT_LEAN !== "off";

/** Register with `app.register(connectPlugin, { services })`. */
export async function connectPlugin(scope: FastifyInstance, opts: ConnectPluginOptions) {
  const { services, lean = leanByDefault(), leanCalls, ...connectOptions } = opts;
  // Fastify never reads or parses an RPC body: every content type reaches the Connect handlers,
  // which answer the ones they do not serve as the protocols say (415), enforce readMaxBytes
  // per message and check Content-Length themselves. Otherwise Fastify's defaults would read a
  // text/plain body against the REST body limit, and answer application/xml (no parser) with
  // its own 415 where text/plain gets the router's.
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser("*", (_req, _payload, done) => done(null, undefined));
  // Interceptors run inside the stock pipeline only; with any configured, keep every call there.
  if (lean && !connectOptions.interceptors?.length)
    scope.addHook("onRoute", leanUnaryRoutes(leanCalls ?? leanUnaryCalls(services, connectOptions), connectOptions.contextValues));
  await scope.register(fastifyConnectPlugin, {
    ...connectOptions,
    routes: (router: ConnectRouter) => {
      for (const s of services) router.service(s.desc, s.impl as any);
      // connect-fastify registers what is in router.handlers once this returns.
      router.handlers.forEach((h, i) => (router.handlers[i] = parseErrorsAsInvalidArgument(h, scope.log)));
    },
  });
}

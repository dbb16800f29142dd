// Wraps a service implementation so every method first authenticates the caller, charges the
// call to its rate limits and checks the method's access rule, and storage errors a handler lets
// through leave as the one error model. The REST transcoder, the Connect/gRPC router and the lean
// Connect unary path all receive the wrapped implementation, so no protocol can skip it.
import type { DescMethod } from "@bufbuild/protobuf";
import type { HandlerContext } from "@connectrpc/connect";
import { fromStorageError } from "../common/errors.js";
import type { ServiceBinding } from "../common/service.js";
import { connectionOf } from "../transport/connection.js";
import { recordOutcome } from "../operability/outcome.js";
import { authorize } from "./access.js";
import type { Authenticator } from "./authenticate.js";
import { principalKey, type Principal } from "./principal.js";

type AnyImpl = ServiceBinding["impl"];

/**
 * Per-call limits (src/limits/rate-limits.ts): charges the call, writes its x-ratelimit-* headers
 * into `responseHeader`, throws the 429. Synchronous when its state is in memory.
 */
export interface CallLimiter {
  admit(p: Principal, method: DescMethod, request: unknown, responseHeader: Headers): void | Promise<void>;
  /** A client stream's messages as the handler should see them (uploads metered against storage). */
  uploadStream?<T>(p: Principal, method: DescMethod, requests: AsyncIterable<T>): AsyncIterable<T>;
}

export function secureService({ desc, impl }: ServiceBinding, auth: Authenticator, limiter?: CallLimiter): ServiceBinding {
  const out: AnyImpl = {};
  for (const method of desc.methods) {
    const fn = impl[method.localName];
    if (typeof fn !== "function") continue;
    const admit = (ctx: HandlerContext, p: Principal) => {
      authorize(p, method);
      ctx.values.set(principalKey, p);
    };
    // Limits come before the access rule: a refused call still counts (spec 8, failed requests).
    const enterAs = (req: unknown, ctx: HandlerContext, p: Principal): void | Promise<void> => {
      ctx.responseHeader.set("vendor-organization", p.organizationId);
      const charging = limiter?.admit(p, method, req, ctx.responseHeader);
      if (charging !== undefined) return charging.then(() => admit(ctx, p));
      admit(ctx, p);
    };
    // The connection's own rule (the mTLS listener's client certificate) completes authentication,
    // before limits and the access rule. Nothing to wait for on the main listener.
    const connected = (req: unknown, ctx: HandlerContext, p: Principal): void | Promise<void> => {
      const checking = auth.checkConnection(p, connectionOf(ctx));
      if (checking !== undefined) return checking.then(() => enterAs(req, ctx, p));
      return enterAs(req, ctx, p);
    };
    // authenticateCached answers from the key cache without a promise (the common case);
    // otherwise the full look-up. Either way the same Principal or the same error.
    const enter = (req: unknown, ctx: HandlerContext): void | Promise<void> => {
      const p = auth.authenticateCached(ctx.requestHeader);
      if (p === undefined) return auth.authenticate(ctx.requestHeader).then((p) => connected(req, ctx, p));
      return connected(req, ctx, p);
    };
    const upload = method.methodKind === "client_streaming" && limiter?.uploadStream !== undefined;
    if (method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming") {
      out[method.localName] = async function* (req: any, ctx: HandlerContext) {
        try {
          const entering = enter(req, ctx);
          if (entering !== undefined) await entering;
          yield* fn.call(impl, req, ctx);
          recordOutcome(ctx);
        } catch (e) {
          const err = fromStorageError(e);
          recordOutcome(ctx, err);
          throw err;
        }
      };
    } else {
      out[method.localName] = async (req: any, ctx: HandlerContext) => {
        try {
          const entering = enter(req, ctx);
          if (entering !== undefined) await entering;
          const res = await fn.call(impl, upload ? limiter!.uploadStream!(ctx.values.get(principalKey)!, method, req) : req, ctx);
          recordOutcome(ctx);
          return res;
        } catch (e) {
          const err = fromStorageError(e);
          recordOutcome(ctx, err);
          throw err;
        }
      };
    }
  }
  return { desc, impl: out };
}

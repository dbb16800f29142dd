// Wraps a service implementation so every method first authenticates the caller and checks the
// method's access rule, and storage errors a handler lets through leave as the one error model. The REST transcoder, the Connect/gRPC router and the lean Connect unary
// path all receive the wrapped implementation, so no protocol can skip it.
import type { HandlerContext } from "@connectrpc/connect";
import { fromStorageError } from "../common/errors.js";
import type { ServiceBinding } from "../common/service.js";
import { authorize } from "./access.js";
import type { Authenticator } from "./authenticate.js";
import { principalKey, type Principal } from "./principal.js";

type AnyImpl = ServiceBinding["impl"];

export function secureService({ desc, impl }: ServiceBinding, auth: Authenticator): ServiceBinding {
  const out: AnyImpl = {};
  for (const method of desc.methods) {
    const fn = impl[method.localName];
    if (typeof fn !== "function") continue;
    const admit = (ctx: HandlerContext, p: Principal) => {
      authorize(p, method);
      ctx.values.set(principalKey, p);
      ctx.responseHeader.set("vendor-organization", p.organizationId);
    };
    // authenticateCached answers from the key cache without a promise (the common case);
    // otherwise the full look-up. Either way the same Principal or the same error.
    if (method.methodKind === "server_streaming" || method.methodKind === "bidi_streaming") {
      out[method.localName] = async function* (req: any, ctx: HandlerContext) {
        admit(ctx, auth.authenticateCached(ctx.requestHeader) ?? (await auth.authenticate(ctx.requestHeader)));
        try {
          yield* fn.call(impl, req, ctx);
        } catch (e) {
          throw fromStorageError(e);
        }
      };
    } else {
      out[method.localName] = async (req: any, ctx: HandlerContext) => {
        admit(ctx, auth.authenticateCached(ctx.requestHeader) ?? (await auth.authenticate(ctx.requestHeader)));
        try {
          return await fn.call(impl, req, ctx);
        } catch (e) {
          throw fromStorageError(e);
        }
      };
    }
  }
  return { desc, impl: out };
}

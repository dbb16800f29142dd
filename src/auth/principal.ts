// Who is calling. API keys and short-lived workload identity tokens both resolve to a
// Principal, so every protocol and every credential kind goes through one authorization path.
import { createContextKey, type HandlerContext } from "@connectrpc/connect";
import { ApiError } from "../common/errors.js";
import type { Scope } from "../storage/types.js";

export type Role = "owner" | "member" | "reader";

export interface Principal {
  /** "key": a standard API key; "admin_key": an admin key; "workload_token": a minted access token. */
  kind: "key" | "admin_key" | "workload_token";
  credentialId: string;
  organizationId: string;
  projectId: string;
  role: Role;
  /** Permissions a scoped credential holds; null = unscoped (the role decides). */
  scopes: string[] | null;
  /** Service account behind a workload identity token. */
  serviceAccountId?: string;
  /**
   * X.509-derived workload tokens: the bearer replaces the API key, not the client certificate
   * (spec 5.7), so they are accepted only on the mutual-TLS listener, with an accepted certificate.
   */
  clientCertificateRequired?: boolean;
}

export const principalKey = createContextKey<Principal | undefined>(undefined, { description: "atrium principal" });

/** The authenticated caller of this RPC (set by the auth wrapper before any handler runs). */
export function principalOf(ctx: HandlerContext): Principal {
  const p = ctx.values.get(principalKey);
  if (!p) throw new ApiError(401, "Not authenticated.", { type: "invalid_request_error" });
  return p;
}

/** The caller's tenant scope: every record read or write names it. */
export function scopeOf(ctx: HandlerContext): Scope {
  return { projectId: principalOf(ctx).projectId };
}

// Who may call which RPC, read from each method's atrium.v1.access option once and enforced here
// for every protocol (docs/architecture.md, principle 5: admin-only and Owner-only operations in one place).
import { getOption, hasOption, type DescMethod } from "@bufbuild/protobuf";
import { access as accessExt, type Access } from "../../gen/atrium/v1/options_pb.js";
import { ApiError } from "../common/errors.js";
import type { ServiceBinding } from "../common/service.js";
import type { Principal } from "./principal.js";

const rules = new Map<DescMethod, Access | undefined>();

function ruleOf(method: DescMethod): Access | undefined {
  if (!rules.has(method)) rules.set(method, hasOption(method, accessExt) ? getOption(method, accessExt) : undefined);
  return rules.get(method);
}

export class MissingAccessRule extends Error {}

/**
 * Start-up check: every RPC must say who may call it. A method without the option would
 * otherwise be open to every key, so the server refuses to start instead.
 */
export function requireAccessRules(services: ServiceBinding[]): void {
  const missing = services.flatMap(({ desc }) => desc.methods.filter((m) => !ruleOf(m)).map((m) => `${desc.typeName}.${m.name}`));
  if (missing.length) throw new MissingAccessRule(`every RPC needs an (atrium.v1.access) option; missing on: ${missing.join(", ")}`);
}

export function authorize(p: Principal, method: DescMethod): void {
  const a = ruleOf(method);
  // Unreachable after requireAccessRules; fail closed all the same.
  if (!a) throw new ApiError(403, "This operation has no access rule and cannot be called.", { code: "insufficient_permissions" });
  checkAccess(p, a);
}

/** Whether `p` may call a method with rule `a`; throws the 403 when not. */
export function checkAccess(p: Principal, a: Pick<Access, "scope" | "admin" | "owner" | "write" | "denyWorkloadIdentity">): void {
  if (a.admin && p.kind !== "admin_key")
    throw new ApiError(403, "This operation requires an admin API key.", { type: "invalid_request_error", code: "admin_key_required" });
  if (a.denyWorkloadIdentity && p.kind === "workload_token")
    throw new ApiError(403, "Workload identity tokens cannot call this operation.", { type: "invalid_request_error", code: "workload_identity_not_allowed" });
  if (a.owner && p.role !== "owner")
    throw new ApiError(403, "You have insufficient permissions for this operation: the Owner role is required.", {
      type: "invalid_request_error",
      code: "insufficient_permissions",
    });
  if (a.write && p.role === "reader")
    throw new ApiError(403, "You have insufficient permissions for this operation: the key is read-only.", {
      type: "invalid_request_error",
      code: "insufficient_permissions",
    });
  if (a.scope && p.scopes !== null && !p.scopes.includes(a.scope))
    throw new ApiError(403, `You have insufficient permissions for this operation. Missing scopes: ${a.scope}.`, {
      type: "invalid_request_error",
      code: "insufficient_permissions",
    });
}

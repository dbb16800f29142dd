// The RPC status of a Connect/gRPC/gRPC-Web call, for the request metrics. gRPC answers HTTP 200
// whatever happened (the status travels in trailers), so the metrics cannot read it off the
// response; the auth wrapper, which every call passes through, writes it here instead. The holder
// is the Fastify request (decorated with `rpcCode`), installed into the call's context values by
// the Connect plugin's contextValues (see metrics.ts); REST calls carry none.
import { Code, ConnectError, createContextKey, type HandlerContext } from "@connectrpc/connect";

/** `rpcCode`: 0 for OK (connect-es's Code has no member for it), else a Code. */
export interface CallOutcome {
  rpcCode: number | undefined;
}

export const callOutcomeKey = createContextKey<CallOutcome | undefined>(undefined, { description: "atrium call outcome" });

/** Records how the call ended (no error: OK). */
export function recordOutcome(ctx: HandlerContext, err?: unknown) {
  const o = ctx.values.get(callOutcomeKey);
  if (o !== undefined) o.rpcCode = err === undefined ? 0 : err instanceof ConnectError ? err.code : Code.Unknown;
}

const names: string[] = ["ok"];
for (const [name, value] of Object.entries(Code)) if (typeof value === "number") names[value] = name.replace(/[A-Z]/g, (c, i) => (i ? "_" : "") + c.toLowerCase());

/** "ok", "resource_exhausted", ... (the gRPC status names in lower case). */
export function codeName(code: number): string {
  return names[code] ?? "unknown";
}

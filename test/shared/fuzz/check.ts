// What every fuzz answer must be: no 5xx (but the documented 503s), an error body in the
// platform's shape for the protocol it came on, no RPC status that means a server fault, and an
// answer at all (a connection closed without one only after a body cut short).
import type { FuzzRequest, FuzzResponse } from "./request.js";

/**
 * 503s the docs promise: a shutdown, and a bounded queue's refusal, which says when to come back
 * (`retry-after`). Every other 5xx is a defect.
 */
const DOCUMENTED_503 = new Set(["shutting_down"]);
/** gRPC/Connect statuses that mean a server fault: unknown, internal, data loss. */
const FAULT_CODES = new Set([2, 13, 15]);
const FAULT_NAMES = new Set(["unknown", "internal", "data_loss"]);

function restErrorProblem(body: Buffer): string | null {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString("utf8"));
  } catch {
    return "error body is not JSON";
  }
  const e = (parsed as { error?: Record<string, unknown> })?.error;
  if (!e || typeof e !== "object") return "error body has no `error` object";
  const keys = Object.keys(parsed as object);
  if (keys.length !== 1) return `error body has keys ${keys.join(",")}`;
  if (typeof e.message !== "string" || typeof e.type !== "string") return "error.message/type not strings";
  if (!(e.param === null || typeof e.param === "string") || !(e.code === null || typeof e.code === "string")) return "error.param/code not string|null";
  if (Object.keys(e).sort().join() !== "code,message,param,type") return `error has keys ${Object.keys(e).join(",")}`;
  return null;
}

function documented503(res: FuzzResponse): boolean {
  if (res.status !== 503) return false;
  try {
    const code = JSON.parse(res.body.toString("utf8"))?.error?.code;
    return DOCUMENTED_503.has(code) || res.headers["retry-after"] !== undefined;
  } catch {
    return false;
  }
}

/** gRPC-Web and Connect streaming answers carry their status in a final frame (flag 0x80 / 0x02). */
function finalFrame(body: Buffer, flag: number): Buffer | null {
  let at = 0;
  let last: Buffer | null = null;
  while (at + 5 <= body.length) {
    const flags = body[at]!;
    const len = body.readUInt32BE(at + 1);
    const data = body.subarray(at + 5, at + 5 + len);
    if (flags & flag) last = data;
    at += 5 + len;
  }
  return last;
}

function rpcProblem(req: FuzzRequest, res: FuzzResponse): string | null {
  if (req.protocol === "h2") {
    if (res.grpcStatus === undefined) return `no grpc-status (HTTP ${res.status}, stream reset code ${res.rstCode ?? "none"})`;
    return FAULT_CODES.has(res.grpcStatus) ? `grpc-status ${res.grpcStatus}: ${res.headers["grpc-message"] ?? ""}` : null;
  }
  if (req.kind.startsWith("grpc-web:")) {
    const trailer = finalFrame(res.body, 0x80)?.toString("latin1") ?? "";
    const status = Number(res.headers["grpc-status"] ?? /grpc-status:\s*(\d+)/i.exec(trailer)?.[1] ?? NaN);
    if (Number.isNaN(status)) return res.status >= 400 && res.status < 500 ? null : `no grpc-status (HTTP ${res.status})`;
    return FAULT_CODES.has(status) ? `grpc-web status ${status}: ${trailer || res.headers["grpc-message"]}` : null;
  }
  if (req.kind.startsWith("connect-stream:") && res.status === 200) {
    const end = finalFrame(res.body, 0x02);
    const code = end ? (JSON.parse(end.toString("utf8")) as { error?: { code?: string } }).error?.code : undefined;
    return code && FAULT_NAMES.has(code) ? `connect end-stream error ${code}: ${end!.toString("utf8").slice(0, 200)}` : null;
  }
  if (res.status >= 400 && /json/.test(res.headers["content-type"] ?? "")) {
    const body = JSON.parse(res.body.toString("utf8")) as { code?: unknown };
    if (typeof body.code !== "string") return "Connect error body has no code";
    if (FAULT_NAMES.has(body.code)) return `Connect error ${body.code}: ${res.body.toString("utf8").slice(0, 200)}`;
  }
  return null;
}

/** Why this answer is a defect, or null when it is fine. */
export function problemWith(req: FuzzRequest, res: FuzzResponse, hangMs: number): string | null {
  if (res.hung) return `no answer within ${hangMs} ms`;
  if (res.status >= 500 && !documented503(res)) return `HTTP ${res.status}: ${res.body.toString("utf8").slice(0, 300)}`;
  const rpc = req.target.startsWith("/atrium.v1.");
  // A request cut short may end without an answer; so may one whose head passes the 64 KiB the
  // listener accepts: its 431 races the rest of the head, and the reset that follows can drop it.
  if (res.status === 0) return req.cut || rpc || req.target.length > 60_000 ? null : "connection closed without an answer";
  if (rpc) {
    try {
      return rpcProblem(req, res);
    } catch (e) {
      return `unreadable RPC answer: ${(e as Error).message}`;
    }
  }
  if (res.status >= 400) return restErrorProblem(res.body);
  return null;
}

// Cross-cutting request/response headers (spec 5.8, 5.9, 8 "Other response headers", 9.1).
import { randomUUID } from "node:crypto";
import { ApiError } from "../common/errors.js";

export const API_VERSION = "2020-10-01";
/** Each custom header value and their sum (spec 5.8). */
export const MAX_CUSTOM_HEADER_BYTES = 60 * 1024;

export function newRequestId(): string {
  // The UUID without its dashes (8-4-4-4-12), sliced rather than by regex: this runs per request.
  const u = randomUUID();
  return "req_" + u.slice(0, 8) + u.slice(9, 13) + u.slice(14, 18) + u.slice(19, 23) + u.slice(24);
}

const STANDARD = new Set([
  "host",
  "connection",
  "content-type",
  "content-length",
  "accept",
  "accept-encoding",
  "accept-language",
  "authorization",
  "user-agent",
  "transfer-encoding",
  "te",
  "range",
  "cookie",
  "origin",
  "referer",
  "cache-control",
  "pragma",
  "expect",
  "keep-alive",
  "upgrade",
]);

/** Validates X-Client-Request-Id and the custom-header budget; returns the client id if any. */
export function checkRequestHeaders(headers: Record<string, string | string[] | undefined>): string | undefined {
  let custom = 0;
  for (const k in headers) {
    if (k.charCodeAt(0) === 58 /* ":" pseudo-header */ || STANDARD.has(k)) continue;
    const v = headers[k];
    const len = Array.isArray(v) ? v.reduce((n, x) => n + x.length, 0) : (v?.length ?? 0);
    if (len > MAX_CUSTOM_HEADER_BYTES)
      throw new ApiError(431, `Header '${k}' is too large: custom header values are limited to ${MAX_CUSTOM_HEADER_BYTES} bytes.`, { param: k, code: "header_too_large" });
    custom += len;
  }
  if (custom > MAX_CUSTOM_HEADER_BYTES)
    throw new ApiError(431, `Custom headers are too large: together they are limited to ${MAX_CUSTOM_HEADER_BYTES} bytes.`, { code: "headers_too_large" });
  const cid = headers["x-client-request-id"];
  if (cid === undefined) return undefined;
  const value = Array.isArray(cid) ? cid.join(",") : cid;
  if (value.length > 512 || !/^[\x20-\x7e]*$/.test(value))
    throw new ApiError(400, "Invalid 'X-Client-Request-Id' header: it must be at most 512 printable ASCII characters.", {
      param: "X-Client-Request-Id",
      code: "invalid_client_request_id",
    });
  return value;
}

// POST /oauth/token: the workload identity token exchange (spec 4.11), an OAuth endpoint rather
// than a proto RPC. Bodies are JSON (what the official SDKs send) or form-encoded (RFC 8693);
// answers are the 2.14 result or an OAuth error body {error, error_description} — for every
// failure, including Fastify's own (body too large), so OAuth clients always read an OAuth error.
// The listener decides the mode: the main port does JWT exchanges, the mTLS port X.509 ones.
import type { FastifyInstance, FastifyReply } from "fastify";
import { ApiError } from "../common/errors.js";
import { connectionFacts } from "../transport/connection.js";
import { OAuthError, type TokenExchange } from "./identity/exchange.js";
import { MTLS_LISTENER } from "./identity/mtls.js";

/** A JWT is a few KiB; nothing legitimate comes near this. */
const BODY_LIMIT = 64 * 1024;

function decodeBody(contentType: string | undefined, body: Buffer | undefined): Record<string, unknown> {
  if (!body || body.length === 0) return {};
  const type = (contentType ?? "").split(";")[0]!.trim().toLowerCase();
  if (type === "application/json") {
    let doc: unknown;
    try {
      doc = JSON.parse(body.toString("utf8"));
    } catch {
      throw new OAuthError(400, "invalid_request", "The request body is not valid JSON.");
    }
    if (!doc || typeof doc !== "object" || Array.isArray(doc)) throw new OAuthError(400, "invalid_request", "The request body must be a JSON object.");
    return doc as Record<string, unknown>;
  }
  if (type === "application/x-www-form-urlencoded") {
    const out: Record<string, unknown> = Object.create(null); // a field named __proto__ is just a field
    for (const [k, v] of new URLSearchParams(body.toString("utf8"))) {
      const prev = out[k];
      out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
    }
    return out;
  }
  throw new OAuthError(400, "invalid_request", "The request body must be application/json or application/x-www-form-urlencoded.");
}

function sendOAuthError(reply: FastifyReply, e: OAuthError) {
  reply.code(e.status).header("cache-control", "no-store").header("pragma", "no-cache");
  if (e.status === 401) reply.header("www-authenticate", `Bearer error="${e.error}"`);
  return reply.send(e.body());
}

/** Queues the route's plugin (loaded with the others when the app starts). */
export function registerTokenEndpoint(app: FastifyInstance, exchange: TokenExchange): void {
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer", bodyLimit: BODY_LIMIT }, (_req, body, done) => done(null, body));
    scope.setErrorHandler((err, req, reply) => {
      if (err instanceof OAuthError) return sendOAuthError(reply, err);
      const status = err instanceof ApiError ? err.status : ((err as { statusCode?: number }).statusCode ?? 500);
      if (status >= 500) {
        req.log.error({ err, reqId: req.id }, "token exchange failed");
        return reply.code(500).header("cache-control", "no-store").send({ error: "server_error", error_description: "The server had an error while processing the request." });
      }
      const description = (err as { code?: string }).code === "FST_ERR_CTP_BODY_TOO_LARGE" ? `The request body is larger than ${BODY_LIMIT} bytes.` : (err as Error).message;
      return reply.code(status === 413 ? 413 : 400).header("cache-control", "no-store").send({ error: "invalid_request", error_description: description });
    });
    scope.post("/oauth/token", { bodyLimit: BODY_LIMIT }, async (req, reply) => {
      const params = decodeBody(req.headers["content-type"], req.body as Buffer | undefined);
      const conn = connectionFacts(req.raw);
      const result = await exchange.exchange({
        params,
        mode: conn.listener === MTLS_LISTENER ? "x509" : "jwt",
        peerCertificate: () => conn.peerCertificate(),
      });
      reply.header("cache-control", "no-store").header("pragma", "no-cache");
      return result;
    });
  });
}

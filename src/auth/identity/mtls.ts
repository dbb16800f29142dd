// The mutual-TLS listener (ATRIUM_MTLS_PORT). It serves exactly two things (spec 4.11, 5.7, 7.4):
//   - POST /oauth/token, the X.509 exchange (exchange.ts);
//   - API calls — REST under /v1/ and Connect/gRPC/gRPC-Web at /atrium.v1.<Service>/<Method> —
//     that present an accepted client certificate AND a bearer credential, verified
//     independently: the bearer as on the main port, the certificate against the active roots of
//     the credential's organization and project (chain, validity, admission rules).
// Any other method or path is a 403, before routing.
import type { FastifyInstance } from "fastify";
import { ApiError } from "../../common/errors.js";
import { TtlCache } from "../../common/cache.js";
import { connectionFacts, listenerOf, type ConnectionFacts } from "../../transport/connection.js";
import type { Principal } from "../principal.js";
import type { IdentityState } from "./state.js";
import { presentedChain, verifyPath } from "./x509.js";

export const MTLS_LISTENER = "mtls";

const API_PATH = /^\/(?:v1\/|atrium\.v1\.[A-Za-z0-9]+\/[A-Za-z0-9]+$)/;

/** The onRequest hook refusing everything the mTLS listener does not serve. */
export function guardMtlsPaths(app: FastifyInstance): void {
  app.addHook("onRequest", (req, _reply, done) => {
    if (listenerOf(req.raw) !== MTLS_LISTENER) return done();
    const q = req.url.indexOf("?");
    const path = q < 0 ? req.url : req.url.slice(0, q);
    if (path === "/oauth/token" ? req.method === "POST" : API_PATH.test(path)) return done();
    done(
      new ApiError(403, "The mutual-TLS endpoint serves only POST /oauth/token and API calls with a client certificate.", {
        type: "permission_error",
        code: "forbidden",
      }),
    );
  });
}

/** Certificate checks are cached this long (and never past the certificate's notAfter). */
const CACHE_MS = 10_000;

/**
 * The check run for every API call on the mTLS listener, after the bearer is authenticated: a
 * client certificate that chains to an active root covering the caller's organization and project.
 */
export function clientCertificateCheck(state: () => IdentityState, clock: { now(): number }) {
  // key: chain fingerprints + tenant + generation → the accepted path's notAfter
  const accepted = new TtlCache<number>({ max: 10_000, ttlMs: CACHE_MS });
  return (p: Principal, conn: ConnectionFacts): void => {
    const chain = presentedChain(conn.peerCertificate());
    if (!chain)
      throw new ApiError(401, "A client certificate is required on the mutual-TLS endpoint.", { type: "authentication_error", code: "client_certificate_required" });
    const invalid = new ApiError(401, "The client certificate is not accepted for this organization and project.", {
      type: "authentication_error",
      code: "invalid_client_certificate",
    });
    if (chain === "malformed") throw invalid;
    const s = state();
    const now = clock.now();
    const key = [chain.leaf.fingerprint256, ...chain.intermediates.map((c) => c.fingerprint256), p.organizationId, p.projectId, s.generation].join("|");
    const notAfter = accepted.lookup(key)?.value;
    if (notAfter !== undefined && now <= notAfter) return;
    const path = verifyPath(chain, s.apiRoots(p.organizationId, p.projectId), now);
    if (!path.ok) throw invalid;
    accepted.set(key, path.notAfter);
  };
}

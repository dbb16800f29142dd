// Workload identity (spec 4.11, 5, 7): external identities — OIDC / SPIFFE JWTs and X.509 client
// certificates — exchanged for short-lived access tokens that authorize like a service account's
// key. What buildServer installs with one call:
//   - POST /oauth/token (token-endpoint.ts) on every listener;
//   - the minted-token verifier in the Authenticator, so REST, Connect, gRPC-Web and gRPC accept
//     the tokens through the same path as keys;
//   - the mTLS listener's rules: only /oauth/token and API calls, each API call with an accepted
//     client certificate;
//   - reload(): a new configuration (SIGHUP, file change) takes effect for the next request.
import type { FastifyInstance } from "fastify";
import type { AtriumConfig } from "../../config.js";
import type { ServiceDeps } from "../../services/deps.js";
import type { Authenticator } from "../authenticate.js";
import { bootstrap } from "../bootstrap.js";
import { registerTokenEndpoint } from "../token-endpoint.js";
import { emptyIdentitySpec } from "./config.js";
import { TokenExchange } from "./exchange.js";
import { clientCertificateCheck, guardMtlsPaths, MTLS_LISTENER } from "./mtls.js";
import { IdentityState } from "./state.js";
import { tokenKey, WorkloadTokens } from "./tokens.js";

export { MTLS_LISTENER } from "./mtls.js";

export interface WorkloadIdentity {
  /**
   * Applies a re-read configuration: organizations, projects and keys are stored (as at start-up),
   * and service accounts, identity providers and mappings replace the old ones at once. Tokens
   * of a removed service account, a disabled provider, or a disabled or changed mapping stop
   * working on their next use.
   */
  reload(next: AtriumConfig): Promise<void>;
}

export function installWorkloadIdentity(app: FastifyInstance, opts: { config: AtriumConfig; deps: ServiceDeps; auth: Authenticator }): WorkloadIdentity {
  const { deps, auth } = opts;
  const build = (cfg: AtriumConfig, previous?: IdentityState) =>
    new IdentityState(cfg.identity ?? emptyIdentitySpec(), {
      fetch: { timeoutMs: cfg.fetchTimeoutMs, allowPrivate: cfg.fetchAllowPrivate, maxRedirects: 3 },
      now: () => deps.clock.now() * 1000,
      onJwksError: (providerId, e) => deps.log.warn({ providerId, err: e.message }, "identity provider: JWKS fetch failed"),
      previous,
    });
  let state = build(opts.config);
  const current = () => state;

  const tokens = new WorkloadTokens(tokenKey(opts.config.secretKey, opts.config.dataDir), deps.clock, current);
  auth.addVerifier(tokens);
  auth.addConnectionCheck(MTLS_LISTENER, clientCertificateCheck(current, deps.clock));
  guardMtlsPaths(app);
  registerTokenEndpoint(app, new TokenExchange(current, tokens, deps.clock, deps.log));

  return {
    async reload(next) {
      await bootstrap(deps.keys, next);
      state = build(next, state);
    },
  };
}

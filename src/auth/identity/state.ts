// The identity configuration in force: the compiled spec plus what runs against it (each JWT
// provider's JWKS source). Replaced as a whole on reload; `generation` tells caches keyed on it
// that what they derived may have changed.
import type { FetchPolicy } from "../../common/fetch-url.js";
import type { IdentitySpec, ProviderSpec, ServiceAccount } from "./config.js";
import { fileJwks, inlineJwks, urlJwks, type JwksSource, type NowMs } from "./jwks.js";
import type { TrustRoot } from "./x509.js";

export interface ProviderState {
  spec: ProviderSpec;
  /** JWT providers only. */
  jwks?: JwksSource;
}

let generations = 0;

export class IdentityState {
  readonly generation = ++generations;
  readonly providers = new Map<string, ProviderState>();

  constructor(
    readonly spec: IdentitySpec,
    opts: { fetch: Omit<FetchPolicy, "maxBytes">; now: NowMs; onJwksError: (providerId: string, e: Error) => void; previous?: IdentityState },
  ) {
    for (const [id, p] of spec.providers) {
      let jwks: JwksSource | undefined;
      if (p.kind === "jwt") {
        const j = p.jwks;
        // A URL source that did not change keeps its cached keys across reloads.
        const before = opts.previous?.providers.get(id);
        const prev = before?.spec.kind === "jwt" && before.spec.jwks.kind === "url" && j.kind === "url" && before.spec.jwks.url === j.url ? before.jwks : undefined;
        jwks =
          prev ??
          (j.kind === "inline"
            ? inlineJwks(j.jwks)
            : j.kind === "file"
              ? fileJwks(j.path, j.jwks, opts.now)
              : urlJwks(j.url, opts.fetch, opts.now, (e) => opts.onJwksError(id, e)));
      }
      this.providers.set(id, { spec: p, jwks });
    }
  }

  serviceAccount(organizationId: string, id: string): ServiceAccount | undefined {
    return this.spec.serviceAccounts.get(organizationId)?.get(id);
  }

  /**
   * Roots that accept client certificates for API calls in this organization and project: the
   * active roots of its enabled X.509 providers that cover the project.
   */
  apiRoots(organizationId: string, projectId: string): TrustRoot[] {
    const out: TrustRoot[] = [];
    for (const { spec } of this.providers.values())
      if (spec.kind === "x509" && spec.enabled && spec.organizationId === organizationId)
        for (const r of spec.roots) if (r.projectId === null || r.projectId === projectId) out.push(r);
    return out;
  }
}

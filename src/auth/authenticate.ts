// Turns request headers into a Principal: the bearer credential, then the organization/project
// the caller selects (Vendor-Organization / Vendor-Project, or the OpenAI-* names the official
// SDKs send). Other credential kinds (workload identity tokens) plug in as TokenVerifiers.
import { ApiError } from "../common/errors.js";
import type { ConnectionFacts } from "../transport/connection.js";
import type { ApiKeyRecord, KeyStore, Membership, Project } from "./keys.js";
import type { Principal } from "./principal.js";

export interface HeaderSource {
  get(name: string): string | null;
}

/** Resolves a bearer token that is not an API key (e.g. a minted workload identity token). */
export interface TokenVerifier {
  verify(token: string): Promise<Principal | undefined>;
  /** True for tokens of this verifier's own format: the key store is then not consulted. */
  owns?(token: string): boolean;
  /** verify()'s answer from memory alone (`{ value }`), or undefined when verify() must run. */
  cached?(token: string): { value: Principal | undefined } | undefined;
}

/**
 * Checks the connection a request came on, for an extra listener (the mTLS port's client
 * certificate). Throws an ApiError to refuse; runs after authentication, before authorization.
 */
export type ConnectionCheck = (p: Principal, conn: ConnectionFacts) => void | Promise<void>;

const ORG_HEADERS = ["vendor-organization", "openai-organization"];
const PROJECT_HEADERS = ["vendor-project", "openai-project"];

function firstHeader(h: HeaderSource, names: string[]): string | undefined {
  for (const n of names) {
    const v = h.get(n);
    if (v) return v.trim();
  }
  return undefined;
}

function redact(token: string): string {
  return token.length <= 8 ? "****" : `${token.slice(0, 3)}*****${token.slice(-4)}`;
}

export class Authenticator {
  private verifiers: TokenVerifier[] = [];
  private readonly connectionChecks = new Map<string, ConnectionCheck>();
  constructor(private readonly keys: KeyStore) {}

  addVerifier(v: TokenVerifier) {
    this.verifiers.push(v);
  }

  /** Every authenticated call arriving on the named listener must also pass `check`. */
  addConnectionCheck(listener: string, check: ConnectionCheck) {
    this.connectionChecks.set(listener, check);
  }

  /**
   * The connection rules for an authenticated caller: the listener's own check, if it has one;
   * elsewhere, credentials that need a client certificate are refused. Undefined (no promise) on
   * the main listener's hot path.
   */
  checkConnection(p: Principal, conn: ConnectionFacts | undefined): void | Promise<void> {
    const check = conn && this.connectionChecks.get(conn.listener);
    if (check) return check(p, conn);
    if (p.clientCertificateRequired)
      throw new ApiError(401, "This access token was issued for a client certificate: use it on the mutual-TLS endpoint, presenting the certificate.", {
        type: "authentication_error",
        code: "client_certificate_required",
      });
  }

  private ownerOf(token: string): TokenVerifier | undefined {
    for (const v of this.verifiers) if (v.owns?.(token)) return v;
    return undefined;
  }

  async authenticate(headers: HeaderSource): Promise<Principal> {
    const { token, orgHeader, projectHeader } = parseCredentials(headers);
    const owner = this.ownerOf(token);
    const key = owner ? undefined : await this.keys.lookup(token);
    if (key) {
      const membership = selectMembership(key.memberships, orgHeader, projectHeader);
      const project = membership.projectId === null && projectHeader ? await this.keys.project(projectHeader) : undefined;
      return liveProject(keyPrincipal(key, membership, projectHeader, project), await this.keys.project(projectOf(membership, projectHeader)));
    }
    for (const v of owner ? [owner] : this.verifiers) {
      const p = await v.verify(token);
      if (p) return liveProject(checkTokenHeaders(p, orgHeader, projectHeader), await this.keys.project(p.projectId));
    }
    throw new ApiError(401, `Incorrect API key provided: ${redact(token)}.`, { type: "invalid_request_error", code: "invalid_api_key" });
  }

  /**
   * authenticate()'s answer when it can be given from the key store's caches alone — the
   * Principal, or the same ApiError thrown — and undefined when authenticate() has to read the
   * store or ask a verifier. The request hot path: no promise, no await.
   */
  authenticateCached(headers: HeaderSource): Principal | undefined {
    const { token, orgHeader, projectHeader } = parseCredentials(headers);
    const owner = this.ownerOf(token);
    if (owner) {
      const p = owner.cached?.(token)?.value;
      if (!p) return undefined;
      const live = this.keys.cachedProject(p.projectId);
      return live && liveProject(checkTokenHeaders(p, orgHeader, projectHeader), live.value);
    }
    const key = this.keys.cached(token)?.value;
    if (!key) return undefined;
    const membership = selectMembership(key.memberships, orgHeader, projectHeader);
    let project: Project | undefined;
    if (membership.projectId === null && projectHeader) {
      const hit = this.keys.cachedProject(projectHeader);
      if (!hit) return undefined;
      project = hit.value;
    }
    const live = this.keys.cachedProject(projectOf(membership, projectHeader));
    return live && liveProject(keyPrincipal(key, membership, projectHeader, project), live.value);
  }
}

/** The project a key's call acts in (before keyPrincipal checks it): "" when it has none. */
function projectOf(m: Membership, projectHeader: string | undefined): string {
  return (m.projectId === null ? projectHeader : undefined) ?? m.projectId ?? m.defaultProjectId ?? "";
}

/** `p`, unless its project is archived (a project that is not stored, e.g. "", is not archived). */
function liveProject(p: Principal, project: Project | undefined): Principal {
  if (project?.archivedAt)
    throw new ApiError(401, `The project '${p.projectId}' is archived: its keys and tokens can no longer be used.`, { type: "invalid_request_error", code: "project_archived" });
  return p;
}

/** A verifier's Principal, if the organization/project headers (when sent) name its own. */
function checkTokenHeaders(p: Principal, orgHeader: string | undefined, projectHeader: string | undefined): Principal {
  if (orgHeader && orgHeader !== p.organizationId)
    throw new ApiError(401, "The organization header does not match the organization of this access token.", { code: "mismatched_organization" });
  if (projectHeader && projectHeader !== p.projectId)
    throw new ApiError(401, "The project header does not match the project of this access token.", { code: "mismatched_project" });
  return p;
}

/** The bearer credential and the organization/project the caller selects. */
function parseCredentials(headers: HeaderSource): { token: string; orgHeader: string | undefined; projectHeader: string | undefined } {
  const auth = headers.get("authorization");
  if (!auth)
    throw new ApiError(
      401,
      "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
      { type: "invalid_request_error", code: null },
    );
  const m = /^Bearer\s+(\S+)\s*$/i.exec(auth);
  if (!m) throw new ApiError(401, "The Authorization header must be 'Bearer <API key or access token>'.", { type: "invalid_request_error", code: "invalid_api_key" });
  return { token: m[1], orgHeader: firstHeader(headers, ORG_HEADERS), projectHeader: firstHeader(headers, PROJECT_HEADERS) };
}

/** The Principal of an API key for the selected membership (`project`: the looked-up project header, for org-wide memberships). */
function keyPrincipal(key: ApiKeyRecord, membership: Membership, projectHeader: string | undefined, project: Project | undefined): Principal {
  let projectId = membership.projectId ?? membership.defaultProjectId ?? "";
  if (membership.projectId === null && projectHeader) {
    if (!project || project.organizationId !== membership.organizationId)
      throw new ApiError(401, `The project header should match a project of the API key's organization (got '${projectHeader}').`, { code: "mismatched_project" });
    projectId = project.id;
  }
  if (!projectId) throw new ApiError(401, "This key has no default project; send the Vendor-Project header.", { code: "missing_project" });
  return {
    kind: key.kind === "admin" ? "admin_key" : "key",
    credentialId: key.keyId,
    organizationId: membership.organizationId,
    projectId,
    role: membership.role,
    scopes: null,
  };
}

/** Picks the membership the headers ask for; a header naming something the key lacks is a 401. */
function selectMembership(ms: Membership[], org: string | undefined, project: string | undefined): Membership {
  let candidates = ms;
  if (org) {
    candidates = candidates.filter((m) => m.organizationId === org);
    if (!candidates.length)
      throw new ApiError(401, `The organization header should match an organization of the API key (got '${org}').`, { code: "mismatched_organization" });
  }
  if (project) {
    const exact = candidates.filter((m) => m.projectId === project);
    // An org-wide (admin) membership covers any project; the project must still exist (checked by the caller).
    const wide = candidates.filter((m) => m.projectId === null);
    candidates = exact.length ? exact : wide;
    if (!candidates.length)
      throw new ApiError(401, `The project header should match a project of the API key (got '${project}').`, { code: "mismatched_project" });
  }
  return candidates[0];
}

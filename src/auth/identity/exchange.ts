// The token exchange of spec 4.11 / 7, independent of HTTP: parameters in, a 2.14 result or an
// OAuthError out. Every failure mints nothing. Order of checks (each failure's answer):
//   parameters                                   400 invalid_request / unsupported_grant_type
//   provider: known, enabled, of this mode       400 invalid_grant
//   JWT:   the subject token (4.11's rules)      401 invalid_subject_token, one description for all
//          the service account                   400 invalid_grant
//   X.509: a readable client certificate         401 invalid_subject_token
//          the service account, an active root
//          covering its project                  400 invalid_grant
//          a chain to such a root, validity,
//          admission rules                       401 invalid_subject_token (7.2)
//   attribute mapping (X.509: a non-empty openai.subject), attribute condition, exactly one
//   enabled matching mapping                     400 invalid_grant
// The listener decides the mode: the main port does JWT exchanges, the mutual-TLS port X.509
// ones; a request for the other mode is a parameter error and never falls back.
import type { DetailedPeerCertificate } from "node:tls";
import type { Logger } from "pino";
import { SUBJECT_ATTRIBUTE, type Mapping, type ProviderSpec, type ServiceAccount } from "./config.js";
import type { AttributeValue, CelBindings } from "./cel.js";
import { SubjectTokenInvalid, verifySubjectJwt } from "./jwt.js";
import type { IdentityState } from "./state.js";
import type { WorkloadTokens } from "./tokens.js";
import { certificateAssertion, presentedChain, verifyPath } from "./x509.js";

export const GRANT_TYPE = "urn:ietf:params:oauth:grant-type:token-exchange";
export const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
export const JWT_TOKEN_TYPES = ["urn:ietf:params:oauth:token-type:jwt", "urn:ietf:params:oauth:token-type:id_token"];
/** The spec's neutral URN, and the brand one the official Python SDK sends. */
export const X509_TOKEN_TYPES = ["urn:vendor:params:oauth:token-type:x509", "urn:openai:params:oauth:token-type:x509"];
/** Longest lifetime of a minted token (spec 4.11). */
export const MAX_LIFETIME_S = 3600;

export class OAuthError extends Error {
  constructor(
    readonly status: 400 | 401,
    readonly error: "invalid_request" | "unsupported_grant_type" | "invalid_grant" | "invalid_subject_token",
    readonly description: string,
  ) {
    super(description);
  }
  body() {
    return { error: this.error, error_description: this.description };
  }
}

const invalidRequest = (d: string) => new OAuthError(400, "invalid_request", d);
const invalidGrant = (d: string) => new OAuthError(400, "invalid_grant", d);
const JWT_INVALID = new OAuthError(401, "invalid_subject_token", "The subject token is not a valid JWT for this identity provider.");
const CERT_INVALID = new OAuthError(401, "invalid_subject_token", "The client certificate is not accepted by this identity provider.");

export interface ExchangeResult {
  access_token: string;
  issued_token_type: string;
  token_type: "Bearer";
  expires_in: number;
  scope?: string;
}

export interface ExchangeRequest {
  /** The decoded body: a value per parameter (an array when a form repeats one). */
  params: Record<string, unknown>;
  mode: "jwt" | "x509";
  /** The client certificate chain (mTLS listener). */
  peerCertificate?: () => DetailedPeerCertificate | undefined;
}

const PROVIDER_ID = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$/;

export class TokenExchange {
  constructor(
    private readonly state: () => IdentityState,
    private readonly tokens: WorkloadTokens,
    private readonly clock: { now(): number },
    private readonly log: Logger,
  ) {}

  async exchange(req: ExchangeRequest): Promise<ExchangeResult> {
    const p = readParams(req.params);
    if (p.grant_type === undefined) throw invalidRequest("grant_type is required.");
    if (p.grant_type !== GRANT_TYPE) throw new OAuthError(400, "unsupported_grant_type", `grant_type must be ${GRANT_TYPE}.`);
    if (p.requested_token_type !== undefined && p.requested_token_type !== ACCESS_TOKEN_TYPE)
      throw invalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE} when given.`);
    if (p.subject_token_type === undefined) throw invalidRequest("subject_token_type is required.");
    if (req.mode === "jwt") {
      if (X509_TOKEN_TYPES.includes(p.subject_token_type)) throw invalidRequest("X.509 token exchange is served on the mutual-TLS endpoint.");
      if (!JWT_TOKEN_TYPES.includes(p.subject_token_type)) throw invalidRequest(`subject_token_type must be one of ${JWT_TOKEN_TYPES.join(", ")}.`);
      const missing = (["subject_token", "identity_provider_id", "service_account_id"] as const).filter((k) => p[k] === undefined || p[k] === "");
      if (missing.length) throw invalidRequest(`Missing required parameter${missing.length > 1 ? "s" : ""}: ${missing.join(", ")}.`);
    } else {
      if (!X509_TOKEN_TYPES.includes(p.subject_token_type)) throw invalidRequest(`The mutual-TLS endpoint serves only subject_token_type ${X509_TOKEN_TYPES[0]}.`);
      if (p.subject_token !== undefined) throw invalidRequest("subject_token must be omitted for an X.509 exchange: the identity is the TLS client certificate.");
      const missing = (["identity_provider_id", "service_account_id"] as const).filter((k) => p[k] === undefined || p[k] === "");
      if (missing.length) throw invalidRequest(`Missing required parameter${missing.length > 1 ? "s" : ""}: ${missing.join(", ")}.`);
    }
    // `scope` (and any other parameter) is ignored: permissions come from the mapping only.

    const state = this.state();
    const providerId = p.identity_provider_id!;
    const provider = PROVIDER_ID.test(providerId) ? state.providers.get(providerId) : undefined;
    if (!provider || !provider.spec.enabled || provider.spec.kind !== req.mode)
      throw invalidGrant(`The identity provider '${clip(providerId)}' is unknown, disabled, or does not serve this kind of exchange.`);
    const spec = provider.spec;
    const now = this.clock.now();
    const ctx = { provider: spec.id, serviceAccount: clip(p.service_account_id!) };

    let assertion: Record<string, unknown>;
    let subjectExpiresAt: number;
    let account: ServiceAccount | undefined;
    if (spec.kind === "jwt") {
      try {
        const claims = await verifySubjectJwt(p.subject_token!, spec, provider.jwks!, now);
        assertion = claims as Record<string, unknown>;
        subjectExpiresAt = Math.floor(claims.exp!);
      } catch (e) {
        if (!(e instanceof SubjectTokenInvalid)) throw e;
        this.log.info({ ...ctx, reason: e.message }, "token exchange refused: subject token");
        throw JWT_INVALID;
      }
      account = this.account(state, spec, p.service_account_id!);
    } else {
      const chain = presentedChain(req.peerCertificate?.());
      if (!chain || chain === "malformed") {
        this.log.info({ ...ctx, reason: chain ? "malformed certificate" : "no client certificate" }, "token exchange refused: certificate");
        throw chain ? CERT_INVALID : new OAuthError(401, "invalid_subject_token", "No client certificate was presented.");
      }
      account = this.account(state, spec, p.service_account_id!);
      const roots = spec.roots.filter((r) => r.projectId === null || r.projectId === account!.projectId);
      if (!roots.length) throw invalidGrant(`The identity provider has no active root for the service account's project.`);
      const path = verifyPath(chain, roots, now);
      if (!path.ok) {
        this.log.info({ ...ctx, reason: path.reason }, "token exchange refused: certificate");
        throw CERT_INVALID;
      }
      assertion = certificateAssertion(chain.leaf);
      subjectExpiresAt = path.notAfter;
    }

    const attribute = this.attributes(spec, assertion, ctx);
    const subject = spec.kind === "x509" ? attribute[SUBJECT_ATTRIBUTE] : assertion.sub;
    if (spec.kind === "x509" && (typeof subject !== "string" || subject === ""))
      throw invalidGrant(`The identity provider's attribute mapping must derive a non-empty ${SUBJECT_ATTRIBUTE}.`);
    const bindings: CelBindings = { assertion, attribute };
    if (spec.attributeCondition) {
      const r = spec.attributeCondition.test(bindings);
      if (!r.ok || !r.value) {
        this.log.info({ ...ctx, reason: r.ok ? "false" : r.reason }, "token exchange refused: attribute condition");
        throw invalidGrant("The identity does not satisfy the identity provider's attribute condition.");
      }
    }
    const mapping = this.mapping(spec, account.id, bindings, ctx);

    const expiresAt = Math.min(now + MAX_LIFETIME_S, subjectExpiresAt);
    // Under a second left (a fractional exp) counts as expired: expires_in is whole seconds.
    const expiresIn = expiresAt - now;
    if (expiresIn < 1) throw spec.kind === "jwt" ? JWT_INVALID : CERT_INVALID;
    const token = this.tokens.mint({
      organizationId: spec.organizationId,
      projectId: account.projectId,
      serviceAccountId: account.id,
      providerId: spec.id,
      mappingFingerprint: mapping.fingerprint,
      mode: spec.kind,
      issuedAt: now,
      expiresAt,
    });
    this.log.info({ ...ctx, subject: String(subject), expiresIn }, "token exchange: access token issued");
    const result: ExchangeResult = { access_token: token, issued_token_type: ACCESS_TOKEN_TYPE, token_type: "Bearer", expires_in: expiresIn };
    if (mapping.permissions) result.scope = mapping.permissions.join(" ");
    return result;
  }

  private account(state: IdentityState, spec: ProviderSpec, id: string): ServiceAccount {
    const account = state.serviceAccount(spec.organizationId, id);
    if (!account) throw invalidGrant(`The service account '${clip(id)}' is unknown in the identity provider's organization.`);
    return account;
  }

  private attributes(spec: ProviderSpec, assertion: Record<string, unknown>, ctx: object): Record<string, AttributeValue> {
    const attribute: Record<string, AttributeValue> = {};
    for (const [name, program] of spec.attributeMapping) {
      const r = program.attribute({ assertion });
      if (!r.ok) {
        this.log.info({ ...ctx, attribute: name, reason: r.reason }, "token exchange refused: attribute mapping");
        throw invalidGrant(`The identity provider's attribute mapping failed for '${name}'.`);
      }
      attribute[name] = r.value;
    }
    return attribute;
  }

  /** Exactly one enabled mapping of the account must match; an error in any of their conditions fails the exchange. */
  private mapping(spec: ProviderSpec, accountId: string, bindings: CelBindings, ctx: object): Mapping {
    const forAccount = spec.mappings.filter((m) => m.serviceAccountId === accountId);
    if (!forAccount.length) throw invalidGrant("No mapping of this identity provider binds the service account.");
    const enabled = forAccount.filter((m) => m.enabled);
    if (!enabled.length) throw invalidGrant("The identity provider's mappings for the service account are disabled.");
    const matched: Mapping[] = [];
    for (const m of enabled) {
      const r = m.condition.test(bindings);
      if (!r.ok) {
        this.log.info({ ...ctx, reason: r.reason }, "token exchange refused: mapping condition error");
        throw invalidGrant("A mapping condition could not be evaluated for this identity.");
      }
      if (r.value) matched.push(m);
    }
    if (matched.length === 0) throw invalidGrant("No mapping for the service account matches this identity.");
    if (matched.length > 1) throw invalidGrant("More than one mapping for the service account matches this identity.");
    return matched[0]!;
  }
}

type Params = Partial<Record<"grant_type" | "subject_token_type" | "subject_token" | "identity_provider_id" | "service_account_id" | "requested_token_type", string>>;

/** The parameters of 4.11 (and RFC 8693's requested_token_type) as strings; a repeated or non-string one is invalid_request. */
function readParams(raw: Record<string, unknown>): Params {
  const out: Params = {};
  for (const k of ["grant_type", "subject_token_type", "subject_token", "identity_provider_id", "service_account_id", "requested_token_type"] as const) {
    const v = raw[k];
    if (v === undefined || v === null) continue;
    if (Array.isArray(v)) throw invalidRequest(`${k} must not be repeated.`);
    if (typeof v !== "string") throw invalidRequest(`${k} must be a string.`);
    out[k] = v;
  }
  return out;
}

/** Caller-supplied ids echoed in descriptions are cut short. */
const clip = (s: string) => (s.length > 64 ? s.slice(0, 64) + "..." : s);

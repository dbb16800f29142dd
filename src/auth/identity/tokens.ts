// Minted access tokens: `atr_wit_<payload>.<mac>`, the payload a few ids and two times (base64url
// JSON, no secret in it), the MAC an HMAC-SHA256 under a server key. Signed rather than stored:
// minting costs no database write (which would otherwise dominate an exchange), tokens survive
// a restart, and every server sharing the key (ATRIUM_SECRET_KEY, or the data directory's key
// file) accepts them. Nothing is lost by not storing them, because every use consults the live
// configuration anyway: a removed service account, a disabled provider, or a disabled or changed
// mapping ends the token at its next use (spec 5.3); the role and permissions are the current ones.
//
// Per request: a cache hit on the token (else one HMAC and a JSON parse), then a few Map look-ups,
// memoised per configuration generation.
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { derivedKey } from "../../common/secret-key.js";
import { TtlCache } from "../../common/cache.js";
import type { TokenVerifier } from "../authenticate.js";
import type { Principal } from "../principal.js";
import { grantedScopes } from "./permissions.js";
import type { IdentityState } from "./state.js";

export const TOKEN_PREFIX = "atr_wit_";
const CACHE_MS = 60_000;
/** A longer bearer is not one of ours (and is not worth an HMAC). */
const MAX_TOKEN_LENGTH = 2048;

/** What a token was minted for. Readable by whoever holds the token; it holds nothing secret. */
export interface WorkloadGrant {
  organizationId: string;
  projectId: string;
  serviceAccountId: string;
  providerId: string;
  /** The mapping it was minted under (config.ts Mapping.fingerprint). */
  mappingFingerprint: string;
  /** The exchange it came from: X.509-derived tokens are used with a client certificate only. */
  mode: "jwt" | "x509";
  /** Unix seconds. */
  issuedAt: number;
  expiresAt: number;
}

/** The payload's short field names (the token travels in every request header). */
interface Payload {
  o: string;
  p: string;
  s: string;
  i: string;
  m: string;
  x: "jwt" | "x509";
  iat: number;
  exp: number;
  /** Makes every token unique, even two minted in the same second for the same grant. */
  n: string;
}

interface CacheEntry {
  grant: WorkloadGrant | undefined;
  principal?: Principal;
  generation?: number;
}

let minted = 0;
/** Tokens minted by this process (for tests: a refused exchange must leave it unchanged). */
export const tokensMinted = () => minted;

/** The token key: derived from the master secret (src/common/secret-key.ts) for this use alone. */
export function tokenKey(secretKey: string | undefined, dataDir: string): Buffer {
  return derivedKey(secretKey, dataDir, "workload identity tokens");
}

export class WorkloadTokens implements TokenVerifier {
  private readonly cache = new TtlCache<CacheEntry>({ max: 10_000, ttlMs: CACHE_MS });

  constructor(
    private readonly key: Buffer,
    private readonly clock: { now(): number },
    private readonly state: () => IdentityState,
  ) {}

  private mac(signed: string): string {
    return createHmac("sha256", this.key).update(signed).digest("base64url");
  }

  mint(g: WorkloadGrant): string {
    const payload: Payload = { o: g.organizationId, p: g.projectId, s: g.serviceAccountId, i: g.providerId, m: g.mappingFingerprint, x: g.mode, iat: g.issuedAt, exp: g.expiresAt, n: randomBytes(9).toString("base64url") };
    const signed = TOKEN_PREFIX + Buffer.from(JSON.stringify(payload)).toString("base64url");
    minted++;
    return `${signed}.${this.mac(signed)}`;
  }

  owns(token: string): boolean {
    return token.startsWith(TOKEN_PREFIX);
  }

  cached(token: string): { value: Principal | undefined } | undefined {
    const hit = this.cache.lookup(token);
    return hit && { value: this.principal(hit.value) };
  }

  async verify(token: string): Promise<Principal | undefined> {
    if (!this.owns(token)) return undefined;
    let entry = this.cache.lookup(token)?.value;
    if (!entry) {
      entry = { grant: this.open(token) };
      this.cache.set(token, entry);
    }
    return this.principal(entry);
  }

  /** The grant of a token whose MAC verifies; undefined for anything else. */
  private open(token: string): WorkloadGrant | undefined {
    if (token.length > MAX_TOKEN_LENGTH) return undefined;
    const dot = token.lastIndexOf(".");
    if (dot < TOKEN_PREFIX.length) return undefined;
    const given = Buffer.from(token.slice(dot + 1));
    const expected = Buffer.from(this.mac(token.slice(0, dot)));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return undefined;
    let p: Payload;
    try {
      p = JSON.parse(Buffer.from(token.slice(TOKEN_PREFIX.length, dot), "base64url").toString("utf8"));
    } catch {
      return undefined;
    }
    return { organizationId: p.o, projectId: p.p, serviceAccountId: p.s, providerId: p.i, mappingFingerprint: p.m, mode: p.x, issuedAt: p.iat, expiresAt: p.exp };
  }

  /**
   * The token's Principal if it is still good: not expired, and the configuration still has its
   * service account (in the same project), its provider enabled, and its mapping enabled and
   * unchanged. Role and scopes are the current ones.
   */
  private principal(entry: CacheEntry): Principal | undefined {
    const g = entry.grant;
    if (!g || !(g.expiresAt > this.clock.now())) return undefined;
    const state = this.state();
    if (entry.generation === state.generation) return entry.principal;
    entry.generation = state.generation;
    entry.principal = undefined;
    const provider = state.providers.get(g.providerId)?.spec;
    const account = state.serviceAccount(g.organizationId, g.serviceAccountId);
    if (!provider || !provider.enabled || provider.organizationId !== g.organizationId || provider.kind !== g.mode) return undefined;
    if (!account || account.projectId !== g.projectId) return undefined;
    const mapping = provider.mappings.find((m) => m.enabled && m.fingerprint === g.mappingFingerprint && m.serviceAccountId === g.serviceAccountId);
    if (!mapping) return undefined;
    entry.principal = {
      kind: "workload_token",
      credentialId: `wit_${g.serviceAccountId}`, // the service account is the "user" (per-user limits)
      organizationId: g.organizationId,
      projectId: g.projectId,
      role: account.role,
      scopes: mapping.permissions && grantedScopes(mapping.permissions),
      serviceAccountId: g.serviceAccountId,
      clientCertificateRequired: g.mode === "x509",
    };
    return entry.principal;
  }
}

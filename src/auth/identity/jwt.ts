// Verifying an external JWT (OIDC ID token, SPIFFE JWT-SVID) against a provider, spec 4.11:
// header `kid` present and `alg` one of the provider's (asymmetric only: never `none`, never HMAC);
// claims iss, aud, sub, exp, iat present; issuer and audience match; signature verifies against
// the provider's JWKS; `exp` in the future; `iat` (and `nbf`) not in the future beyond CLOCK_SKEW.
// jose does the JOSE work. Failures carry a reason for the server's log only: callers answer
// every one of them with the same "invalid subject token".
import type { JWTPayload } from "jose";
import type { JwtProviderSpec } from "./config.js";
import { jose, type JwksSource } from "./jwks.js";

/** Seconds a subject token's iat/nbf may lie in the future (clocks of issuer and server differ). `exp` gets none. */
export const CLOCK_SKEW_S = 30;
/** A compact JWT longer than this is refused unread. */
const MAX_JWT_LENGTH = 16 * 1024;

export class SubjectTokenInvalid extends Error {}

const fail = (reason: string): never => {
  throw new SubjectTokenInvalid(reason);
};

/** The verified claims, or throws SubjectTokenInvalid. `now`: Unix seconds. */
export async function verifySubjectJwt(token: string, provider: JwtProviderSpec, jwks: JwksSource, now: number): Promise<JWTPayload> {
  if (token.length > MAX_JWT_LENGTH || token.split(".").length !== 3) fail("not a compact JWS");
  const { decodeProtectedHeader, jwtVerify } = await jose();
  let header;
  try {
    header = decodeProtectedHeader(token);
  } catch {
    return fail("unreadable protected header");
  }
  if (typeof header.alg !== "string" || !provider.algorithms.includes(header.alg)) fail(`alg '${String(header.alg)}' not allowed`);
  if (typeof header.kid !== "string" || header.kid === "") fail("no kid");
  let payload: JWTPayload;
  try {
    ({ payload } = await jwtVerify(token, jwks.getKey, {
      issuer: provider.issuer,
      audience: provider.audiences,
      algorithms: provider.algorithms,
      requiredClaims: ["iss", "aud", "sub", "exp", "iat"],
      clockTolerance: CLOCK_SKEW_S,
      currentDate: new Date(now * 1000),
    }));
  } catch (e) {
    return fail(`${(e as { code?: string }).code ?? "error"}: ${(e as Error).message}`);
  }
  if (typeof payload.sub !== "string" || payload.sub === "") fail("sub is not a non-empty string");
  // jose allowed CLOCK_SKEW_S on exp; the exchange does not (a token is never extended past its exp).
  if (typeof payload.exp !== "number" || payload.exp <= now) fail("expired");
  if (typeof payload.iat !== "number" || payload.iat > now + CLOCK_SKEW_S) fail("iat in the future");
  return payload;
}

// Where a JWT provider's verification keys come from: inline (`jwks`), a file (`jwks_file`, re-read
// when a token names a key it does not hold) or a URL (`jwks_url`, fetched through the SSRF-safe
// fetcher, cached, refetched on an unknown `kid` at most once per cool-down and when older than
// MAX_AGE). Only public asymmetric keys are accepted: a JWKS holding private or symmetric (`oct`)
// material is refused, so an HMAC "signed with the public key" can never find a key.
import { readFileSync } from "node:fs";
import type { JSONWebKeySet, JWK, JWTVerifyGetKey } from "jose";
import { fetchUrl, type FetchPolicy } from "../../common/fetch-url.js";

let joseLoading: Promise<typeof import("jose")> | undefined;
/** jose, imported by the first token verified: a server with no JWT provider never loads it. */
export const jose = () => (joseLoading ??= import("jose"));

/** jose's resolver over `doc`, built on its first use. */
function localSet(doc: JSONWebKeySet): JWTVerifyGetKey {
  let set: JWTVerifyGetKey | undefined;
  return async (header, token) => (set ??= (await jose()).createLocalJWKSet(doc))(header, token);
}

const PRIVATE_MEMBERS = ["d", "p", "q", "dp", "dq", "qi", "k", "oth"];
const ASYMMETRIC_KTY = new Set(["RSA", "EC", "OKP"]);
/** A remote JWKS is refetched on an unknown kid at most this often: random kids cost one fetch per cool-down. */
export const JWKS_URL_COOLDOWN_MS = 30_000;
/** After a failed first fetch (no keys at all yet), the next try waits this long. */
const URL_RETRY_MS = 5_000;
const FILE_COOLDOWN_MS = 1_000;
/** A remote JWKS older than this is refetched before use, so keys the issuer removed stop verifying. */
const MAX_AGE_MS = 10 * 60_000;
const MAX_JWKS_BYTES = 1024 * 1024;

/** Checks a JWKS document; returns it, or throws an Error saying what is wrong. */
export function checkJwks(doc: unknown): JSONWebKeySet {
  if (!doc || typeof doc !== "object" || !Array.isArray((doc as JSONWebKeySet).keys)) throw new Error("must be a JWKS: an object with a `keys` list");
  const keys = (doc as JSONWebKeySet).keys;
  if (keys.length === 0) throw new Error("holds no keys");
  keys.forEach((k: JWK, i) => {
    if (!k || typeof k !== "object") throw new Error(`key ${i} is not an object`);
    if (!ASYMMETRIC_KTY.has(k.kty as string)) throw new Error(`key ${i}: kty must be RSA, EC or OKP (public keys only)`);
    for (const m of PRIVATE_MEMBERS) if (m in k) throw new Error(`key ${i} holds private key material ('${m}'); publish only public keys`);
    if (typeof k.kid !== "string" || !k.kid) throw new Error(`key ${i} has no kid (tokens select their key by kid)`);
  });
  return { keys };
}

export function readJwksFile(path: string): JSONWebKeySet {
  return checkJwks(JSON.parse(readFileSync(path, "utf8")));
}

export interface JwksSource {
  /** jose's key resolver: the key for a token's protected header, or a jose JWKS error. */
  readonly getKey: JWTVerifyGetKey;
}

/** Milliseconds; the server's clock, so tests can move past cool-downs. */
export type NowMs = () => number;

/** A key set that may be refreshed once when a token names a kid it does not hold. */
function refreshing(current: () => Promise<JWTVerifyGetKey>, refresh: () => Promise<boolean>): JWTVerifyGetKey {
  return async (header, token) => {
    try {
      return await (await current())(header, token);
    } catch (e) {
      if (!(e instanceof (await jose()).errors.JWKSNoMatchingKey) || !(await refresh())) throw e;
      return (await current())(header, token);
    }
  };
}

export function inlineJwks(doc: JSONWebKeySet): JwksSource {
  return { getKey: localSet(doc) };
}

export function fileJwks(path: string, loaded: JSONWebKeySet, now: NowMs): JwksSource {
  let set = localSet(loaded);
  let last = now();
  return {
    getKey: refreshing(
      async () => set,
      async () => {
        if (now() - last < FILE_COOLDOWN_MS) return false;
        last = now();
        try {
          set = localSet(readJwksFile(path));
          return true;
        } catch {
          return false; // keep the keys we have; the token simply finds none
        }
      },
    ),
  };
}

export function urlJwks(url: string, policy: Omit<FetchPolicy, "maxBytes">, now: NowMs, onError: (e: Error) => void): JwksSource {
  let set: JWTVerifyGetKey | undefined;
  let fetchedAt = -Infinity;
  let lastAttempt = -Infinity;
  let inFlight: Promise<boolean> | undefined;
  // One fetch at a time; concurrent callers wait for the same one.
  const fetchNow = () =>
    (inFlight ??= (async () => {
      lastAttempt = now();
      try {
        const body = await fetchUrl(url, { ...policy, maxBytes: MAX_JWKS_BYTES });
        set = localSet(checkJwks(JSON.parse(Buffer.from(body).toString("utf8"))));
        fetchedAt = now();
        return true;
      } catch (e) {
        onError(e as Error);
        return false;
      } finally {
        inFlight = undefined;
      }
    })());
  const current = async () => {
    const stale = now() - fetchedAt > MAX_AGE_MS;
    // A stale set is still used when the refetch fails (the issuer's endpoint may be down).
    if (stale && now() - lastAttempt >= (set ? JWKS_URL_COOLDOWN_MS : URL_RETRY_MS)) await fetchNow();
    if (!set) throw new (await jose()).errors.JWKSNoMatchingKey();
    return set;
  };
  const refresh = async () => (now() - lastAttempt >= JWKS_URL_COOLDOWN_MS ? fetchNow() : false);
  return { getKey: refreshing(current, refresh) };
}

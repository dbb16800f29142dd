// Shared pieces of the workload identity tests (test/identity*.test.ts): signing keys and JWTs
// (jose), a JWKS served over HTTP, a test PKI made with openssl (roots, intermediates, leaves),
// an ATRIUM_CONFIG written to disk, the exchange call, and HTTPS with a client certificate.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import * as jose from "jose";
import pino from "pino";
import { configFromEnv } from "../../src/config.js";
import { areaConfigSections } from "../../src/services/index.js";
import { tokensMinted } from "../../src/auth/identity/tokens.js";
import { ManualClock, startTestServer, tempDir, type TestServer } from "./server.js";

export const GRANT = "urn:ietf:params:oauth:grant-type:token-exchange";
export const JWT_TYPE = "urn:ietf:params:oauth:token-type:jwt";
export const ID_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:id_token";
export const X509_TYPE = "urn:vendor:params:oauth:token-type:x509";
export const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";

// ---------- keys and JWTs ----------

export interface SigningKey {
  alg: "RS256" | "ES256" | "EdDSA";
  kid: string;
  privateKey: CryptoKey;
  publicJwk: jose.JWK;
  /** PEM of the public key (for the HS256-with-the-public-key attack). */
  publicPem: string;
}

export async function signingKey(alg: SigningKey["alg"], kid = `${alg.toLowerCase()}-${randomBytes(3).toString("hex")}`): Promise<SigningKey> {
  const { publicKey, privateKey } = await jose.generateKeyPair(alg, { extractable: true });
  return { alg, kid, privateKey, publicJwk: { ...(await jose.exportJWK(publicKey)), kid, alg, use: "sig" }, publicPem: await jose.exportSPKI(publicKey) };
}

export const jwksOf = (...keys: SigningKey[]) => ({ keys: keys.map((k) => k.publicJwk) });

export const ISSUER = "https://ci.example.test";
export const AUDIENCE = "atrium";

/** A JWT with sensible claims at `now` (Unix seconds); `claims` overrides (undefined removes one). */
export async function jwt(key: SigningKey, now: number, claims: Record<string, unknown> = {}, header: Record<string, unknown> = {}): Promise<string> {
  const payload: Record<string, unknown> = { iss: ISSUER, aud: AUDIENCE, sub: "repo:acme/web:ref:refs/heads/main", repository: "acme/web", iat: now, exp: now + 600, ...claims };
  for (const [k, v] of Object.entries(payload)) if (v === undefined) delete payload[k];
  const h: Record<string, unknown> = { alg: key.alg, kid: key.kid, typ: "JWT", ...header };
  for (const [k, v] of Object.entries(h)) if (v === undefined) delete h[k];
  return new jose.CompactSign(new TextEncoder().encode(JSON.stringify(payload))).setProtectedHeader(h as jose.CompactJWSHeaderParameters).sign(key.privateKey);
}

/** A JWKS on a small HTTP server; `keys` may be replaced (rotation); `hits` counts fetches. */
export async function jwksServer(initial: object): Promise<{ url: string; hits: () => number; set(doc: object): void; close(): Promise<void> }> {
  let doc = initial;
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.setHeader("content-type", "application/json");
    res.end(JSON.stringify(doc));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`,
    hits: () => hits,
    set: (d) => (doc = d),
    close: () => new Promise((r) => server.close(() => r())),
  };
}

// ---------- a test PKI (openssl) ----------

function openssl(args: string[], cwd: string) {
  const r = spawnSync("openssl", args, { cwd, encoding: "utf8", timeout: 30_000 });
  if (r.status !== 0) throw new Error(`openssl ${args[0]} failed (openssl is required for these tests): ${r.error?.message ?? r.stderr}`);
}

const EXTENSIONS = `
[ca]
basicConstraints=critical,CA:TRUE
keyUsage=critical,keyCertSign,cRLSign
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
[leaf]
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
subjectAltName=URI:spiffe://acme.test/ns/web/sa/deploy,DNS:svc.acme.test
[server_leaf]
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid
`;

export interface Issued {
  name: string;
  cert: string; // PEM path
  key: string; // PEM path
  pem: string; // PEM text
  keyPem: string;
}

/** Makes certificates in `dir`: `ca(name, issuer?)` for CAs, `leaf(name, issuer, opts)` for clients. */
export function pki(dir: string) {
  writeFileSync(join(dir, "ext.cnf"), EXTENSIONS);
  const read = (name: string): Issued => ({
    name,
    cert: join(dir, `${name}.pem`),
    key: join(dir, `${name}.key`),
    pem: readFileSync(join(dir, `${name}.pem`), "utf8"),
    keyPem: readFileSync(join(dir, `${name}.key`), "utf8"),
  });
  const newKey = (name: string) => openssl(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", `${name}.key`], dir);
  const sign = (name: string, subject: string, issuer: Issued, ext: string, days: number) => {
    openssl(["req", "-new", "-key", `${name}.key`, "-out", `${name}.csr`, "-subj", subject], dir);
    openssl(
      ["x509", "-req", "-in", `${name}.csr`, "-CA", issuer.cert, "-CAkey", issuer.key, "-set_serial", "0x" + randomBytes(8).toString("hex"), "-out", `${name}.pem`, "-days", String(days), "-extfile", "ext.cnf", "-extensions", ext],
      dir,
    );
  };
  return {
    root(name: string, subject: string, days = 30): Issued {
      newKey(name);
      openssl(["req", "-x509", "-new", "-key", `${name}.key`, "-out", `${name}.pem`, "-days", String(days), "-subj", subject, "-config", "ext.cnf", "-extensions", "ca"], dir);
      return read(name);
    },
    intermediate(name: string, subject: string, issuer: Issued, days = 20): Issued {
      newKey(name);
      sign(name, subject, issuer, "ca", days);
      return read(name);
    },
    leaf(name: string, subject: string, issuer: Issued, days = 10): Issued {
      newKey(name);
      sign(name, subject, issuer, "leaf", days);
      return read(name);
    },
    /** A self-signed client certificate (not a CA). */
    selfSigned(name: string, subject: string): Issued {
      newKey(name);
      openssl(
        ["req", "-x509", "-new", "-key", `${name}.key`, "-out", `${name}.pem`, "-days", "10", "-subj", subject, "-addext", "basicConstraints=critical,CA:FALSE", "-addext", "extendedKeyUsage=clientAuth"],
        dir,
      );
      return read(name);
    },
    /** The mTLS listener's own certificate (localhost, 127.0.0.1), self-signed. */
    server(name: string): Issued {
      openssl(
        ["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", `${name}.key`, "-out", `${name}.pem`, "-days", "30", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
        dir,
      );
      return read(name);
    },
  };
}

// ---------- the server ----------

export interface IdentityServer extends TestServer {
  clock: ManualClock;
  configPath: string;
  /** Rewrites ATRIUM_CONFIG and applies it (as SIGHUP does). */
  reload(doc: object): Promise<void>;
  /** Tokens minted so far (in this test file's process): every refused exchange must leave this unchanged. */
  mintedCount(): Promise<number>;
}

export async function startIdentityServer(doc: object, dir = tempDir("atrium-identity-")): Promise<IdentityServer> {
  const configPath = join(dir, "atrium.json");
  writeFileSync(configPath, JSON.stringify(doc));
  const clock = new ManualClock();
  const env = { ATRIUM_CONFIG: configPath, ATRIUM_FETCH_ALLOW_PRIVATE: "true" };
  const s = await startTestServer({ clock, env, logger: pino({ level: process.env.ATRIUM_TEST_LOG ?? "silent" }) });
  return {
    ...s,
    clock,
    configPath,
    async reload(next) {
      writeFileSync(configPath, JSON.stringify(next));
      await s.reloadConfig(configFromEnv({ ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: s.dataDir, ...env }, areaConfigSections()));
    },
    mintedCount: async () => tokensMinted(),
  };
}

export interface ExchangeAnswer {
  status: number;
  body: Record<string, any>;
  headers: Headers;
}

/** POST /oauth/token with a JSON body (as the SDKs send), or form-encoded with `form: true`. */
export async function exchange(baseUrl: string, params: Record<string, unknown>, opts: { form?: boolean } = {}): Promise<ExchangeAnswer> {
  const body = opts.form ? new URLSearchParams(params as Record<string, string>).toString() : JSON.stringify(params);
  const res = await fetch(`${baseUrl}/oauth/token`, {
    method: "POST",
    headers: { "content-type": opts.form ? "application/x-www-form-urlencoded" : "application/json" },
    body,
  });
  return { status: res.status, body: (await res.json()) as Record<string, any>, headers: res.headers };
}

// ---------- HTTPS with a client certificate ----------

export interface TlsClient {
  ca: string;
  /** PEM: the leaf, then any intermediates to send. */
  cert?: string;
  key?: string;
}

export interface HttpsAnswer {
  status: number;
  body: any;
  text: string;
}

export function httpsCall(url: string, tls: TlsClient, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<HttpsAnswer> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method: opts.method ?? "GET", headers: opts.headers, ca: tls.ca, cert: tls.cert, key: tls.key, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8");
        let body: any;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        resolve({ status: res.statusCode!, body, text });
      });
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(opts.body);
  });
}

/** A fetch for the official SDK that presents a client certificate (Node's fetch cannot). */
export function mtlsFetch(tls: TlsClient): typeof fetch {
  return (async (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = typeof input === "string" ? input : input instanceof URL ? input.toString() : input.url;
    const headers: Record<string, string> = {};
    new Headers(init.headers).forEach((v, k) => (headers[k] = v));
    let body: string | undefined;
    if (typeof init.body === "string") body = init.body;
    else if (init.body != null) throw new Error("mtlsFetch: only string bodies in these tests");
    const r = await httpsCall(url, tls, { method: init.method ?? "GET", headers, body });
    return new Response(r.text, { status: r.status, headers: { "content-type": "application/json" } });
  }) as typeof fetch;
}

// Workload identity, X.509 exchange (spec 4.11, 5.7, 7.2, 7.4): the mutual-TLS listener
// (server.addListener("mtls", ...requestCert), as main.ts starts it for ATRIUM_MTLS_PORT). A test
// PKI made with openssl: root → intermediate → leaf for the organization's project, plus a deeper
// chain, a leaf the admission rule refuses, a self-signed leaf and another organization's root.
// Every refused exchange asserts the exact status and OAuth error and that no token was stored.
import { readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { X509Certificate } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ModelsService } from "../../../gen/atrium/v1/models_pb.js";
import { FilesService } from "../../../gen/atrium/v1/files_pb.js";
import type { ExtraListener } from "../../../src/server.js";
import { MTLS_LISTENER } from "../../../src/auth/identity/index.js";
import { API_KEY, tempDir } from "../../shared/server.js";
import { as, expectRpcError } from "../../shared/rpc.js";
import { ACCESS_TOKEN_TYPE, GRANT, httpsCall, JWT_TYPE, mtlsFetch, pki, startIdentityServer, X509_TYPE, type IdentityServer, type Issued, type TlsClient } from "../../shared/identity.js";

let s: IdentityServer;
let mtls: ExtraListener;
let dir: string;
let serverCa: string;
let root: Issued, inter: Issued, inter2: Issued, leaf: Issued, deepLeaf: Issued, outsider: Issued, self: Issued, otherRoot: Issued, otherLeaf: Issued;

const DAY = 86_400;

function config() {
  const rootEntry = { pem_file: "root.pem", project: "proj_default", admission: { subject_matches: "^CN=.*\\.acme\\.test$", max_chain: 3 } };
  const subjectMapping = { "openai.subject": "assertion.subject_cn", spiffe: "assertion.spiffe_id" };
  return {
    organizations: [
      {
        id: "org-default",
        projects: [{ id: "proj_default" }, { id: "proj_b" }],
        service_accounts: [
          { id: "svc_deploy", project: "proj_default", role: "member" },
          { id: "svc_scoped", project: "proj_default", role: "member" },
          { id: "svc_b", project: "proj_b" },
          { id: "svc_two", project: "proj_default" },
        ],
        identity_providers: [
          {
            id: "idp_mtls",
            kind: "x509",
            enabled: true,
            roots: [rootEntry],
            attribute_mapping: subjectMapping,
            attribute_condition: 'attribute.spiffe.startsWith("spiffe://acme.test/")',
            mappings: [
              { service_account: "svc_deploy", enabled: true, condition: 'attribute["openai.subject"] == "svc.acme.test"' },
              { service_account: "svc_scoped", condition: "true", permissions: ["api.model.read"] },
              { service_account: "svc_b", condition: "true" },
              { service_account: "svc_two", condition: "true" },
              { service_account: "svc_two", condition: 'assertion.san_dns.exists(d, d == "svc.acme.test")' },
            ],
          },
          {
            id: "idp_strict",
            kind: "x509",
            roots: [rootEntry],
            attribute_mapping: subjectMapping,
            attribute_condition: 'attribute.spiffe == "spiffe://acme.test/ns/prod/sa/release"',
            mappings: [{ service_account: "svc_deploy", condition: "true" }],
          },
          { id: "idp_nosubject", kind: "x509", roots: [rootEntry], attribute_mapping: { "openai.subject": '""' }, mappings: [{ service_account: "svc_deploy", condition: "true" }] },
          { id: "idp_jwt", kind: "jwt", issuer: "https://ci.example.test", audiences: ["atrium"], jwks: { keys: [{ kty: "OKP", crv: "Ed25519", x: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo", kid: "k" }] }, mappings: [{ service_account: "svc_deploy", condition: "true" }] },
        ],
      },
      {
        id: "org-other",
        projects: [{ id: "proj_other" }],
        service_accounts: [{ id: "svc_other", project: "proj_other" }],
        identity_providers: [{ id: "idp_other", kind: "x509", roots: [{ pem_file: "other-root.pem" }], attribute_mapping: { "openai.subject": "assertion.subject_cn" }, mappings: [{ service_account: "svc_other", condition: "true" }] }],
      },
    ],
  };
}

beforeAll(async () => {
  dir = tempDir("atrium-idx509-");
  const p = pki(dir);
  root = p.root("root", "/O=Acme/CN=Acme Workload Root");
  inter = p.intermediate("inter", "/O=Acme/CN=Acme Workload Intermediate", root);
  inter2 = p.intermediate("inter2", "/O=Acme/CN=Acme Second Intermediate", inter);
  leaf = p.leaf("leaf", "/CN=svc.acme.test", inter);
  deepLeaf = p.leaf("deep", "/CN=deep.acme.test", inter2);
  outsider = p.leaf("outsider", "/CN=svc.evil.example", inter);
  self = p.selfSigned("self", "/CN=svc.acme.test");
  otherRoot = p.root("other-root", "/O=Other/CN=Other Root");
  otherLeaf = p.leaf("other-leaf", "/CN=svc.acme.test", otherRoot);
  const server = p.server("server");
  serverCa = server.pem;
  s = await startIdentityServer(config(), dir);
  mtls = await s.addListener(MTLS_LISTENER, { host: "127.0.0.1", port: 0, tls: { cert: readFileSync(server.cert), key: readFileSync(server.key), requestCert: true } });
});
afterAll(async () => {
  await s?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** TLS client material: `certs` are sent in order (leaf first). */
const client = (key: Issued | undefined, ...chain: Issued[]): TlsClient => (key ? { ca: serverCa, cert: [key, ...chain].map((c) => c.pem).join(""), key: key.keyPem } : { ca: serverCa });
const good = () => client(leaf, inter);

const x509Params = (over: Record<string, unknown> = {}) => {
  const p: Record<string, unknown> = { grant_type: GRANT, subject_token_type: X509_TYPE, identity_provider_id: "idp_mtls", service_account_id: "svc_deploy", ...over };
  for (const [k, v] of Object.entries(p)) if (v === undefined) delete p[k];
  return p;
};

function post(tls: TlsClient, body: object, path = "/oauth/token", method = "POST") {
  return httpsCall(`${mtls.url}${path}`, tls, { method, headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
}

async function mintX509(over: Record<string, unknown> = {}, tls = good()) {
  const r = await post(tls, x509Params(over));
  expect(r.status, r.text).toBe(200);
  return r.body;
}

async function refused(tls: TlsClient, body: Record<string, unknown>, status: number, error: string) {
  const before = await s.mintedCount();
  const r = await post(tls, body);
  expect({ status: r.status, error: r.body?.error }, r.text).toEqual({ status, error });
  expect(Object.keys(r.body).sort()).toEqual(["error", "error_description"]);
  expect(await s.mintedCount()).toBe(before);
  return r;
}

describe("X.509 exchange on the mutual-TLS listener", () => {
  it("root → intermediate → leaf: a 2.14 result, expires_in at most an hour", async () => {
    const r = await mintX509();
    expect(r).toEqual({ access_token: expect.stringMatching(/^atr_wit_/), issued_token_type: ACCESS_TOKEN_TYPE, token_type: "Bearer", expires_in: 3600 });
    // The brand URN the official Python SDK sends is accepted as well; form bodies too.
    expect((await mintX509({ subject_token_type: "urn:openai:params:oauth:token-type:x509" })).expires_in).toBe(3600);
    const form = await httpsCall(`${mtls.url}/oauth/token`, good(), {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(x509Params() as Record<string, string>).toString(),
    });
    expect(form.status, form.text).toBe(200);
  });

  it("the token never outlives the certificate chain", async () => {
    const notAfter = Math.floor(Date.parse(new X509Certificate(leaf.pem).validTo) / 1000);
    const shift = notAfter - 100 - s.clock.now();
    s.clock.advance(shift);
    try {
      expect((await mintX509()).expires_in).toBe(100);
    } finally {
      s.clock.advance(-shift);
    }
  });

  it("the minted token works on the mTLS listener with a certificate: official SDK, Connect, gRPC; permissions narrow it", async () => {
    const token = (await mintX509()).access_token;
    const sdk = new OpenAI({ apiKey: token, baseURL: `${mtls.url}/v1`, fetch: mtlsFetch(good()), maxRetries: 0 });
    expect((await sdk.models.retrieve("gpt-4o")).id).toBe("gpt-4o");
    expect(Array.isArray((await sdk.files.list()).data)).toBe(true);
    const scoped = (await mintX509({ service_account_id: "svc_scoped" })).access_token;
    const narrowed = new OpenAI({ apiKey: scoped, baseURL: `${mtls.url}/v1`, fetch: mtlsFetch(good()), maxRetries: 0 });
    expect((await narrowed.models.list()).data.length).toBeGreaterThan(0);
    expect((await narrowed.files.list().catch((e) => e)).status).toBe(403);
    const nodeOptions = { ca: serverCa, cert: good().cert, key: good().key };
    for (const t of [createGrpcTransport({ baseUrl: mtls.url, nodeOptions }), createConnectTransport({ baseUrl: mtls.url, httpVersion: "1.1", nodeOptions })]) {
      expect((await createClient(ModelsService, t).getModel({ model: "gpt-4o" }, as(token))).id).toBe("gpt-4o");
      await expectRpcError(() => createClient(FilesService, t).listFiles({}, as(scoped)), Code.PermissionDenied, { code: "insufficient_permissions", httpStatus: 403 });
    }
  });

  it("an X.509-derived token is refused on the main port (the bearer replaces the key, not the certificate)", async () => {
    const token = (await mintX509()).access_token;
    const r = await fetch(`${s.baseURL}/models`, { headers: { authorization: `Bearer ${token}` } });
    expect(r.status).toBe(401);
    expect((await r.json()).error.code).toBe("client_certificate_required");
    await expectRpcError(() => createClient(ModelsService, createGrpcTransport({ baseUrl: s.url })).listModels({}, as(token)), Code.Unauthenticated, { code: "client_certificate_required", httpStatus: 401 });
  });
});

describe("X.509 attack matrix (no token minted, exact error)", () => {
  it("TLS without a client certificate", async () => {
    await refused(client(undefined), x509Params(), 401, "invalid_subject_token");
  });

  it("expired and not yet valid (the server's clock moves, the certificates do not)", async () => {
    s.clock.advance(11 * DAY);
    try {
      await refused(good(), x509Params(), 401, "invalid_subject_token");
    } finally {
      s.clock.advance(-11 * DAY);
    }
    s.clock.advance(-2 * DAY);
    try {
      await refused(good(), x509Params(), 401, "invalid_subject_token");
    } finally {
      s.clock.advance(2 * DAY);
    }
  });

  it("a self-signed leaf, a leaf chained to another organization's root, a missing intermediate", async () => {
    await refused(client(self), x509Params(), 401, "invalid_subject_token");
    await refused(client(self, root), x509Params(), 401, "invalid_subject_token");
    await refused(client(otherLeaf, otherRoot), x509Params(), 401, "invalid_subject_token");
    await refused(client(leaf), x509Params(), 401, "invalid_subject_token");
    await refused(client(deepLeaf, inter), x509Params(), 401, "invalid_subject_token");
    // The other organization's own provider accepts its leaf (the roots are per organization).
    expect((await post(client(otherLeaf), x509Params({ identity_provider_id: "idp_other", service_account_id: "svc_other" }))).status).toBe(200);
  });

  it("a CA certificate presented as the leaf, an intermediate as the leaf", async () => {
    await refused(client(inter, root), x509Params(), 401, "invalid_subject_token");
  });

  it("admission rules: the subject pattern, the longest chain", async () => {
    await refused(client(outsider, inter), x509Params(), 401, "invalid_subject_token");
    await refused(client(deepLeaf, inter2, inter), x509Params(), 401, "invalid_subject_token");
  });

  it("subject_token present, a JWT subject type, missing parameters, wrong grant_type", async () => {
    await refused(good(), x509Params({ subject_token: "anything" }), 400, "invalid_request");
    await refused(good(), x509Params({ subject_token: "" }), 400, "invalid_request");
    await refused(good(), x509Params({ subject_token_type: JWT_TYPE, subject_token: "a.b.c" }), 400, "invalid_request");
    await refused(good(), x509Params({ subject_token_type: undefined }), 400, "invalid_request");
    await refused(good(), x509Params({ identity_provider_id: undefined }), 400, "invalid_request");
    await refused(good(), x509Params({ service_account_id: undefined }), 400, "invalid_request");
    await refused(good(), x509Params({ grant_type: "client_credentials" }), 400, "unsupported_grant_type");
  });

  it("provider and mapping resolution: unknown or JWT provider, unknown account, no root for the account's project, two mappings, attribute condition, no openai.subject", async () => {
    await refused(good(), x509Params({ identity_provider_id: "idp_nope" }), 400, "invalid_grant");
    await refused(good(), x509Params({ identity_provider_id: "idp_jwt" }), 400, "invalid_grant"); // never falls back to JWT
    await refused(good(), x509Params({ service_account_id: "svc_nope" }), 400, "invalid_grant");
    await refused(good(), x509Params({ service_account_id: "svc_other" }), 400, "invalid_grant");
    await refused(good(), x509Params({ service_account_id: "svc_b" }), 400, "invalid_grant"); // the root covers proj_default only
    await refused(good(), x509Params({ service_account_id: "svc_two" }), 400, "invalid_grant");
    await refused(good(), x509Params({ identity_provider_id: "idp_strict" }), 400, "invalid_grant");
    await refused(good(), x509Params({ identity_provider_id: "idp_nosubject" }), 400, "invalid_grant");
  });

  it("X.509 is served only on the mTLS port: on the main port it is a parameter error", async () => {
    const before = await s.mintedCount();
    const r = await fetch(`${s.url}/oauth/token`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(x509Params()) });
    expect(r.status).toBe(400);
    expect((await r.json()).error).toBe("invalid_request");
    expect(await s.mintedCount()).toBe(before);
  });
});

describe("the mutual-TLS listener serves only POST /oauth/token and API calls", () => {
  it("every other method or path is a 403, with or without a certificate", async () => {
    for (const tls of [good(), client(undefined)])
      for (const [method, path] of [
        ["GET", "/oauth/token"],
        ["PUT", "/oauth/token"],
        ["DELETE", "/oauth/token"],
        ["POST", "/oauth/token/"],
        ["POST", "/oauth/tokens"],
        ["POST", "/OAUTH/token"],
        ["GET", "/healthz"],
        ["GET", "/"],
        ["GET", "/v2/models"],
        ["GET", "/v1"],
      ]) {
        const r = await httpsCall(`${mtls.url}${path}`, tls, { method });
        expect(r.status, `${method} ${path}`).toBe(403);
      }
  });

  it("API calls need an accepted client certificate AND a bearer, verified independently", async () => {
    const get = (tls: TlsClient, key?: string) => httpsCall(`${mtls.url}/v1/models`, tls, { headers: key ? { authorization: `Bearer ${key}` } : {} });
    expect((await get(good(), API_KEY)).status).toBe(200); // an API key with an accepted certificate
    const noBearer = await get(good());
    expect(noBearer.status).toBe(401);
    const noCert = await get(client(undefined), API_KEY);
    expect(noCert.status).toBe(401);
    expect(noCert.body.error.code).toBe("client_certificate_required");
    for (const tls of [client(otherLeaf, otherRoot), client(self), client(leaf), client(outsider, inter)]) {
      const r = await get(tls, API_KEY);
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe("invalid_client_certificate");
    }
    // gRPC on the mTLS listener: the same rules.
    const bare = createClient(ModelsService, createGrpcTransport({ baseUrl: mtls.url, nodeOptions: { ca: serverCa } }));
    await expectRpcError(() => bare.getModel({ model: "gpt-4o" }, as(API_KEY)), Code.Unauthenticated, { code: "client_certificate_required", httpStatus: 401 });
  });

  it("a certificate stops being accepted once it expires", async () => {
    const get = () => httpsCall(`${mtls.url}/v1/models`, good(), { headers: { authorization: `Bearer ${API_KEY}` } });
    expect((await get()).status).toBe(200);
    s.clock.advance(11 * DAY);
    try {
      expect((await get()).status).toBe(401);
    } finally {
      s.clock.advance(-11 * DAY);
    }
  });
});

describe("reload", () => {
  it("a disabled X.509 provider stops minting and ends its tokens", async () => {
    const token = (await mintX509()).access_token;
    const get = () => httpsCall(`${mtls.url}/v1/models`, good(), { headers: { authorization: `Bearer ${token}` } });
    expect((await get()).status).toBe(200);
    const off = config();
    (off.organizations[0]!.identity_providers[0] as { enabled: boolean }).enabled = false;
    await s.reload(off);
    try {
      expect((await get()).status).toBe(401);
      await refused(good(), x509Params(), 400, "invalid_grant");
    } finally {
      await s.reload(config());
    }
    expect(readFileSync(join(dir, "root.pem"), "utf8")).toBe(root.pem);
  });
});

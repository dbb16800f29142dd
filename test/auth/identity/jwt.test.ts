// Workload identity, JWT exchange (spec 4.11, 5, 7): POST /oauth/token on
// the main port. The attack matrix asserts, for every refused exchange, the exact status and OAuth
// error AND that no token was stored. The happy paths use inline and served JWKS with RS256, ES256
// and EdDSA keys, then use the minted token through the official SDK (also its own
// workloadIdentity option), a Connect client and a gRPC client, with permissions narrowing what
// it can do, until it expires or its provider is disabled.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import OpenAI from "openai";
import * as jose from "jose";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ModelsService } from "../../../gen/atrium/v1/models_pb.js";
import { FilesService } from "../../../gen/atrium/v1/files_pb.js";
import { ResponsesService } from "../../../gen/atrium/v1/responses_pb.js";
import { checkAccess } from "../../../src/auth/access.js";
import { JWKS_URL_COOLDOWN_MS } from "../../../src/auth/identity/jwks.js";
import { CLOCK_SKEW_S } from "../../../src/auth/identity/jwt.js";
import type { Principal } from "../../../src/auth/principal.js";
import { API_KEY, tempDir } from "../../shared/server.js";
import { as, expectRpcError } from "../../shared/rpc.js";
import {
  ACCESS_TOKEN_TYPE,
  AUDIENCE,
  exchange,
  GRANT,
  ID_TOKEN_TYPE,
  ISSUER,
  jwksOf,
  jwksServer,
  jwt,
  JWT_TYPE,
  pki,
  signingKey,
  startIdentityServer,
  X509_TYPE,
  type IdentityServer,
  type SigningKey,
} from "../../shared/identity.js";

let s: IdentityServer;
let dir: string;
let rs: SigningKey, es: SigningKey, ed: SigningKey, stranger: SigningKey, impostor: SigningKey, rotated: SigningKey;
let served: Awaited<ReturnType<typeof jwksServer>>;
let rootPem: string;

function config(over: { ciEnabled?: boolean; deployMappingEnabled?: boolean; withoutDeploy?: boolean } = {}) {
  const accounts = [
    { id: "svc_deploy", project: "proj_default", role: "member" },
    { id: "svc_reader", project: "proj_default", role: "reader" },
    { id: "svc_owner", project: "proj_default", role: "owner" },
    { id: "svc_two", project: "proj_b" },
    { id: "svc_nomap", project: "proj_default" },
    { id: "svc_off", project: "proj_default" },
    { id: "svc_err", project: "proj_default" },
  ].filter((a) => !(over.withoutDeploy && a.id === "svc_deploy"));
  const jwtBase = { kind: "jwt", issuer: ISSUER, audiences: [AUDIENCE] };
  const deployOnly = (extra: object = {}) => ({ mappings: over.withoutDeploy ? [] : [{ service_account: "svc_deploy", condition: "true", ...extra }] });
  return {
    organizations: [
      {
        id: "org-default",
        projects: [{ id: "proj_default" }, { id: "proj_b" }],
        service_accounts: accounts,
        identity_providers: [
          {
            id: "idp_ci",
            ...jwtBase,
            enabled: over.ciEnabled ?? true,
            jwks: jwksOf(rs, es, ed),
            attribute_mapping: { subject: "assertion.sub", repo: "assertion.repository" },
            attribute_condition: 'assertion.repository.startsWith("acme/")',
            mappings: [
              ...(over.withoutDeploy
                ? []
                : [
                    { service_account: "svc_deploy", enabled: over.deployMappingEnabled ?? true, condition: 'attribute.repo == "acme/web"' },
                    { service_account: "svc_deploy", condition: 'attribute.repo == "acme/models-only"', permissions: ["api.model.read"] },
                    { service_account: "svc_deploy", condition: 'attribute.repo == "acme/files"', permissions: ["api.files.write", "api.model.read"] },
                  ]),
              { service_account: "svc_reader", condition: "true" },
              { service_account: "svc_owner", condition: "true" },
              { service_account: "svc_two", condition: "true" },
              { service_account: "svc_two", condition: 'attribute.repo != ""' },
              { service_account: "svc_off", enabled: false, condition: "true" },
              { service_account: "svc_err", condition: 'assertion.no_such_claim == "x"' },
            ],
          },
          { id: "idp_url", ...jwtBase, audiences: ["other", AUDIENCE], jwks_url: served.url, ...deployOnly({ permissions: ["api.model.read", "api.files.read"] }) },
          { id: "idp_rs_only", ...jwtBase, algorithms: ["RS256"], jwks: jwksOf(rs, es), ...deployOnly() },
          { id: "idp_off", ...jwtBase, enabled: false, jwks: jwksOf(rs), ...deployOnly() },
          { id: "idp_bad_attr", ...jwtBase, jwks: jwksOf(rs), attribute_mapping: { x: "assertion.no_such_claim" }, ...deployOnly() },
          // Same kid as rs, another key: a token signed by rs must not verify here.
          { id: "idp_impostor", ...jwtBase, jwks: jwksOf(impostor), ...deployOnly() },
          { id: "idp_x509", kind: "x509", roots: [{ pem: rootPem }], attribute_mapping: { "openai.subject": "assertion.subject" }, ...deployOnly() },
        ],
      },
      { id: "org-other", projects: [{ id: "proj_other" }], service_accounts: [{ id: "svc_other", project: "proj_other" }] },
    ],
  };
}

beforeAll(async () => {
  dir = tempDir("atrium-idjwt-");
  [rs, es, ed, stranger, rotated] = await Promise.all([signingKey("RS256"), signingKey("ES256"), signingKey("EdDSA"), signingKey("RS256"), signingKey("ES256")]);
  impostor = await signingKey("RS256", rs.kid);
  served = await jwksServer(jwksOf(rs, es, ed));
  rootPem = pki(dir).root("root", "/CN=JWT Test Root").pem;
  s = await startIdentityServer(config(), dir);
});
afterAll(async () => {
  await s?.stop();
  await served?.close();
  rmSync(dir, { recursive: true, force: true });
});

const now = () => s.clock.now();
const params = (subjectToken: string, over: Record<string, unknown> = {}) => ({
  grant_type: GRANT,
  subject_token_type: JWT_TYPE,
  subject_token: subjectToken,
  identity_provider_id: "idp_ci",
  service_account_id: "svc_deploy",
  ...over,
});

/** Exchanges and returns the minted access token (expects success). */
async function mint(key: SigningKey = rs, claims: Record<string, unknown> = {}, over: Record<string, unknown> = {}): Promise<string> {
  const r = await exchange(s.url, params(await jwt(key, now(), claims), over));
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.access_token;
}

/** The exchange must fail with exactly this status and error, and store no token. */
async function refused(p: Record<string, unknown>, status: number, error: string, opts: { form?: boolean } = {}) {
  const before = await s.mintedCount();
  const r = await exchange(s.url, p, opts);
  expect({ status: r.status, error: r.body.error }, JSON.stringify(r.body)).toEqual({ status, error });
  expect(typeof r.body.error_description).toBe("string");
  expect(r.body.access_token).toBeUndefined();
  expect(Object.keys(r.body).sort()).toEqual(["error", "error_description"]);
  expect(await s.mintedCount()).toBe(before);
  return r;
}

describe("JWT exchange: the result (2.14)", () => {
  it("inline JWKS, RS256 / ES256 / EdDSA: access_token, issued_token_type, Bearer, expires_in; no scope, no refresh token", async () => {
    for (const key of [rs, es, ed]) {
      const r = await exchange(s.url, params(await jwt(key, now(), { exp: now() + 900 })));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toEqual({ access_token: expect.stringMatching(/^atr_wit_[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/), issued_token_type: ACCESS_TOKEN_TYPE, token_type: "Bearer", expires_in: 900 });
      expect(r.headers.get("cache-control")).toBe("no-store");
    }
  });

  it("lifetime: at most one hour, never past the subject token's exp", async () => {
    const long = await exchange(s.url, params(await jwt(rs, now(), { exp: now() + 7200 })));
    expect(long.body.expires_in).toBe(3600);
    const short = await exchange(s.url, params(await jwt(rs, now(), { exp: now() + 42 })));
    expect(short.body.expires_in).toBe(42);
  });

  it("form-encoded bodies (RFC 8693) and the id_token subject type work too", async () => {
    const form = await exchange(s.url, params(await jwt(es, now())), { form: true });
    expect(form.status, JSON.stringify(form.body)).toBe(200);
    const idToken = await exchange(s.url, params(await jwt(ed, now()), { subject_token_type: ID_TOKEN_TYPE }));
    expect(idToken.status).toBe(200);
  });

  it("scope is returned only when the mapping has permissions; a scope in the request grants nothing and is not refused", async () => {
    const r = await exchange(s.url, params(await jwt(rs, now(), { repository: "acme/models-only" }), { scope: "api.files.write api.model.request" }));
    expect(r.status).toBe(200);
    expect(r.body.scope).toBe("api.model.read");
    const token = r.body.access_token;
    const files = await fetch(`${s.baseURL}/files`, { headers: { authorization: `Bearer ${token}` } });
    expect(files.status).toBe(403);
    const plain = await exchange(s.url, params(await jwt(rs, now()), { scope: "api.model.read" }));
    expect(plain.body.scope).toBeUndefined();
  });

  it("a JWKS served over HTTP: fetched once, cached, refetched for an unknown kid (after the cool-down), the rotated key then verifies", async () => {
    const p = (key: SigningKey) => jwt(key, now()).then((t) => params(t, { identity_provider_id: "idp_url" }));
    const hits0 = served.hits();
    for (const key of [rs, es, ed]) {
      const r = await exchange(s.url, await p(key));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.scope).toBe("api.model.read api.files.read");
    }
    expect(served.hits() - hits0).toBe(1);
    // The issuer rotates in a new key; a token naming it triggers one refetch.
    served.set(jwksOf(rs, es, ed, rotated));
    s.clock.advance(JWKS_URL_COOLDOWN_MS / 1000 + 1);
    expect((await exchange(s.url, await p(rotated))).status).toBe(200);
    expect(served.hits() - hits0).toBe(2);
    // Random unknown kids cost no fetch within the cool-down.
    await refused(await p(stranger), 401, "invalid_subject_token");
    await refused(await p(stranger), 401, "invalid_subject_token");
    expect(served.hits() - hits0).toBe(2);
  });
});

describe("JWT exchange: attack matrix (no token minted, exact error)", () => {
  it("alg none (unsigned), and alg none with a kid", async () => {
    const body = jose.base64url.encode(JSON.stringify({ iss: ISSUER, aud: AUDIENCE, sub: "x", repository: "acme/web", iat: now(), exp: now() + 600 }));
    for (const header of [{ alg: "none" }, { alg: "none", kid: rs.kid }]) {
      const unsigned = `${jose.base64url.encode(JSON.stringify(header))}.${body}.`;
      await refused(params(unsigned), 401, "invalid_subject_token");
    }
  });

  it("HS256 signed with the provider's RSA public key as the HMAC secret", async () => {
    const token = await new jose.SignJWT({ sub: "x", repository: "acme/web" })
      .setProtectedHeader({ alg: "HS256", kid: rs.kid })
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt(now())
      .setExpirationTime(now() + 600)
      .sign(new TextEncoder().encode(rs.publicPem));
    await refused(params(token), 401, "invalid_subject_token");
    const jwkSecret = new TextEncoder().encode(JSON.stringify(rs.publicJwk));
    const token2 = await new jose.SignJWT({ sub: "x", repository: "acme/web" }).setProtectedHeader({ alg: "HS256", kid: rs.kid }).setIssuer(ISSUER).setAudience(AUDIENCE).setIssuedAt(now()).setExpirationTime(now() + 600).sign(jwkSecret);
    await refused(params(token2), 401, "invalid_subject_token");
  });

  it("unknown kid, missing kid, alg outside the provider's list, a valid signature by another key under the same kid", async () => {
    await refused(params(await jwt(stranger, now())), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), {}, { kid: undefined })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), {}, { kid: "" })), 401, "invalid_subject_token");
    await refused(params(await jwt(es, now()), { identity_provider_id: "idp_rs_only" }), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now()), { identity_provider_id: "idp_impostor" }), 401, "invalid_subject_token");
    // ...while the same token is fine for the provider holding the right key.
    expect((await exchange(s.url, params(await jwt(rs, now()), { identity_provider_id: "idp_rs_only" }))).status).toBe(200);
  });

  it("tampered payload, tampered signature, malformed tokens", async () => {
    const good = await jwt(rs, now());
    const [h, , sig] = good.split(".");
    const evil = jose.base64url.encode(JSON.stringify({ iss: ISSUER, aud: AUDIENCE, sub: "admin", repository: "acme/web", iat: now(), exp: now() + 600 }));
    await refused(params(`${h}.${evil}.${sig}`), 401, "invalid_subject_token");
    const flipped = sig!.slice(0, -2) + (sig!.endsWith("AA") ? "BB" : "AA");
    await refused(params(`${h}.${good.split(".")[1]}.${flipped}`), 401, "invalid_subject_token");
    for (const junk of ["abc", "a.b.c", `${h}.${good.split(".")[1]}`, "x".repeat(20_000)]) await refused(params(junk), 401, "invalid_subject_token");
  });

  it("expired (also within the clock skew: exp gets none), iat in the future beyond the skew", async () => {
    await refused(params(await jwt(rs, now(), { exp: now() - 60 })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), { exp: now() - 1 })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), { exp: now() })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), { iat: now() + CLOCK_SKEW_S + 60 })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), { nbf: now() + CLOCK_SKEW_S + 60 })), 401, "invalid_subject_token");
    // A small skew is tolerated on iat.
    expect((await exchange(s.url, params(await jwt(rs, now(), { iat: now() + 5 })))).status).toBe(200);
  });

  it("wrong iss, wrong aud", async () => {
    await refused(params(await jwt(rs, now(), { iss: "https://evil.example.test" })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), { iss: ISSUER + "/" })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), { aud: "someone-else" })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), { aud: ["a", "b"] })), 401, "invalid_subject_token");
    expect((await exchange(s.url, params(await jwt(rs, now(), { aud: ["x", AUDIENCE] })))).status).toBe(200);
  });

  it("each required claim missing (iss, aud, sub, exp, iat), or of the wrong type", async () => {
    for (const claim of ["iss", "aud", "sub", "exp", "iat"]) await refused(params(await jwt(rs, now(), { [claim]: undefined })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), { sub: "" })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), { sub: 42 })), 401, "invalid_subject_token");
    await refused(params(await jwt(rs, now(), { exp: String(now() + 600) })), 401, "invalid_subject_token");
  });

  it("every JWT verification failure reads the same: nothing says which check failed", async () => {
    const a = await refused(params(await jwt(stranger, now())), 401, "invalid_subject_token");
    const b = await refused(params(await jwt(rs, now(), { aud: "x" })), 401, "invalid_subject_token");
    const c = await refused(params(await jwt(rs, now(), { exp: now() - 5 })), 401, "invalid_subject_token");
    expect(new Set([a.body.error_description, b.body.error_description, c.body.error_description]).size).toBe(1);
  });

  it("provider resolution: unknown, malformed, disabled, or an X.509 provider → invalid_grant", async () => {
    const t = await jwt(rs, now());
    for (const id of ["idp_nope", "../idp_ci", "idp ci", "x".repeat(300), "idp_off", "idp_x509"]) await refused(params(t, { identity_provider_id: id }), 400, "invalid_grant");
  });

  it("service account and mapping resolution → invalid_grant", async () => {
    const t = (claims: Record<string, unknown> = {}) => jwt(rs, now(), claims);
    await refused(params(await t(), { service_account_id: "svc_missing" }), 400, "invalid_grant");
    await refused(params(await t(), { service_account_id: "svc_other" }), 400, "invalid_grant"); // another organization's
    await refused(params(await t(), { service_account_id: "svc_nomap" }), 400, "invalid_grant"); // no mapping
    await refused(params(await t(), { service_account_id: "svc_off" }), 400, "invalid_grant"); // mapping disabled
    await refused(params(await t({ repository: "acme/other" })), 400, "invalid_grant"); // no mapping matches
    await refused(params(await t(), { service_account_id: "svc_two" }), 400, "invalid_grant"); // two match
    await refused(params(await t(), { service_account_id: "svc_err" }), 400, "invalid_grant"); // condition errors
    await refused(params(await t({ repository: "evil/web" })), 400, "invalid_grant"); // attribute condition false
    await refused(params(await t({ repository: 42 })), 400, "invalid_grant"); // attribute condition errors
    await refused(params(await t(), { identity_provider_id: "idp_bad_attr" }), 400, "invalid_grant"); // attribute mapping fails
  });

  it("parameters: grant_type, subject_token_type, each required parameter, repeated or non-string values", async () => {
    const t = await jwt(rs, now());
    await refused(params(t, { grant_type: "authorization_code" }), 400, "unsupported_grant_type");
    await refused(params(t, { grant_type: "client_credentials" }), 400, "unsupported_grant_type");
    await refused(params(t, { grant_type: undefined }), 400, "invalid_request");
    await refused(params(t, { subject_token_type: undefined }), 400, "invalid_request");
    await refused(params(t, { subject_token_type: "urn:ietf:params:oauth:token-type:saml2" }), 400, "invalid_request");
    await refused(params(t, { subject_token_type: X509_TYPE }), 400, "invalid_request"); // X.509 belongs to the mTLS port
    for (const k of ["subject_token", "identity_provider_id", "service_account_id"]) {
      await refused(params(t, { [k]: undefined }), 400, "invalid_request");
      await refused(params(t, { [k]: "" }), 400, "invalid_request");
    }
    await refused(params(t, { identity_provider_id: ["idp_ci"] }), 400, "invalid_request");
    await refused(params(t, { service_account_id: 7 }), 400, "invalid_request");
    await refused(params(t, { requested_token_type: "urn:ietf:params:oauth:token-type:refresh_token" }), 400, "invalid_request");
    // A form repeating a parameter.
    const before = await s.mintedCount();
    const body = new URLSearchParams(params(t) as Record<string, string>);
    body.append("identity_provider_id", "idp_url");
    const r = await fetch(`${s.url}/oauth/token`, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: body.toString() });
    expect(r.status).toBe(400);
    expect((await r.json()).error).toBe("invalid_request");
    expect(await s.mintedCount()).toBe(before);
  });

  it("bodies: empty, not JSON, not an object, unsupported content type, too large → OAuth error bodies", async () => {
    const post = (body: string, type = "application/json") => fetch(`${s.url}/oauth/token`, { method: "POST", headers: { "content-type": type }, body });
    for (const [body, type] of [["", "application/json"], ["{", "application/json"], ["[1]", "application/json"], ["<x/>", "text/xml"]] as const) {
      const r = await post(body, type);
      expect(r.status).toBe(400);
      expect(await r.json()).toMatchObject({ error: "invalid_request", error_description: expect.any(String) });
    }
    const big = await post(JSON.stringify({ ...params("x"), pad: "y".repeat(100_000) }));
    expect(big.status).toBe(413);
    expect((await big.json()).error).toBe("invalid_request");
  });
});

describe("minted tokens authorize like a service account's key", () => {
  it("the official SDK with its workloadIdentity option: exchange, then calls with the token; a scoped token is narrowed", async () => {
    let exchanges = 0;
    const redirectAuth: typeof fetch = (input, init) => {
      const url = String(input instanceof Request ? input.url : input);
      if (url === "https://auth.openai.com/oauth/token") {
        exchanges++;
        return fetch(`${s.url}/oauth/token`, init);
      }
      return fetch(input, init);
    };
    const client = (repository: string) =>
      new OpenAI({
        baseURL: s.baseURL,
        fetch: redirectAuth,
        maxRetries: 0,
        workloadIdentity: {
          identityProviderId: "idp_ci",
          serviceAccountId: "svc_deploy",
          provider: { tokenType: "jwt", getToken: () => jwt(rs, now(), { repository, exp: now() + 3600 }) },
        },
      });
    const full = client("acme/web");
    expect((await full.models.retrieve("gpt-4o")).id).toBe("gpt-4o");
    const f = await full.files.create({ file: new File(["hello"], "a.txt"), purpose: "assistants" });
    expect((await full.files.list()).data.map((x) => x.id)).toContain(f.id);
    expect(exchanges).toBe(1);
    // The file landed in the service account's project: the project's API key sees it.
    const viaKey = await fetch(`${s.baseURL}/files/${f.id}`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(viaKey.status).toBe(200);

    const scoped = client("acme/models-only");
    expect((await scoped.models.list()).data.length).toBeGreaterThan(0);
    const denied = await scoped.files.list().catch((e) => e);
    expect(denied).toBeInstanceOf(OpenAI.PermissionDeniedError);
    expect(denied.error).toMatchObject({ code: "insufficient_permissions" });
    // write implies read: api.files.write reads files back; models allowed; token counting is not.
    const writer = client("acme/files");
    const g = await writer.files.create({ file: new File(["x"], "b.txt"), purpose: "assistants" });
    expect((await writer.files.retrieve(g.id)).id).toBe(g.id);
    const count = await fetch(`${s.baseURL}/responses/input_tokens`, {
      method: "POST",
      headers: { authorization: `Bearer ${await mint(rs, { repository: "acme/files" })}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "gpt-4o", input: "hi" }),
    });
    expect(count.status).toBe(403);
  });

  it("Connect and gRPC clients accept the token through the same path as keys", async () => {
    const full = await mint(rs);
    const scoped = await mint(es, { repository: "acme/models-only" });
    for (const t of [createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" }), createGrpcTransport({ baseUrl: s.url })]) {
      const models = createClient(ModelsService, t);
      const files = createClient(FilesService, t);
      const responses = createClient(ResponsesService, t);
      expect((await models.getModel({ model: "gpt-4o" }, as(full))).id).toBe("gpt-4o");
      await files.listFiles({}, as(full));
      expect((await models.listModels({}, as(scoped))).data.length).toBeGreaterThan(0);
      await expectRpcError(() => files.listFiles({}, as(scoped)), Code.PermissionDenied, { code: "insufficient_permissions", httpStatus: 403 });
      await expectRpcError(() => responses.countInputTokens({ model: "gpt-4o" }, as(scoped)), Code.PermissionDenied, { code: "insufficient_permissions", httpStatus: 403 });
      await expectRpcError(() => models.getModel({ model: "gpt-4o" }, as(full + "x")), Code.Unauthenticated, { httpStatus: 401 });
    }
  });

  it("roles apply: a reader's token cannot write; DELETE /v1/models/{model} refuses every workload token, even an owner's", async () => {
    const reader = await mint(rs, {}, { service_account_id: "svc_reader" });
    const up = await new OpenAI({ apiKey: reader, baseURL: s.baseURL, maxRetries: 0 }).files.create({ file: new File(["x"], "r.txt"), purpose: "assistants" }).catch((e) => e);
    expect(up.status).toBe(403);
    const owner = await mint(rs, {}, { service_account_id: "svc_owner" });
    const del = await fetch(`${s.baseURL}/models/ft:gpt-4o:acme::abc`, { method: "DELETE", headers: { authorization: `Bearer ${owner}` } });
    expect(del.status).toBe(403);
    expect((await del.json()).error.code).toBe("workload_identity_not_allowed");
    const grpcDel = createClient(ModelsService, createGrpcTransport({ baseUrl: s.url }));
    await expectRpcError(() => grpcDel.deleteModel({ model: "ft:gpt-4o:acme::abc" }, as(owner)), Code.PermissionDenied, { code: "workload_identity_not_allowed", httpStatus: 403 });
  });

  it("admin-key endpoints refuse workload tokens (the access rule every admin RPC carries)", () => {
    const p: Principal = { kind: "workload_token", credentialId: "wit_x", organizationId: "org-default", projectId: "proj_default", role: "owner", scopes: null };
    expect(() => checkAccess(p, { scope: "", admin: true, owner: false, write: false, denyWorkloadIdentity: false })).toThrow(/admin API key/);
    expect(() => checkAccess({ ...p, kind: "admin_key" }, { scope: "", admin: true, owner: false, write: false, denyWorkloadIdentity: false })).not.toThrow();
    expect(() => checkAccess({ ...p, scopes: ["api.model.read"] }, { scope: "api.files.read", admin: false, owner: false, write: false, denyWorkloadIdentity: false })).toThrow(/Missing scopes/);
  });

  it("organization and project headers must name the token's own", async () => {
    const t = await mint(rs);
    const get = (h: Record<string, string>) => fetch(`${s.baseURL}/models`, { headers: { authorization: `Bearer ${t}`, ...h } });
    expect((await get({ "openai-project": "proj_default", "openai-organization": "org-default" })).status).toBe(200);
    expect((await get({ "openai-project": "proj_b" })).status).toBe(401);
    expect((await get({ "openai-organization": "org-other" })).status).toBe(401);
  });

  it("a forged token is refused: payload edited (another project, a later expiry), MAC cut or replaced", async () => {
    const t = await mint(rs);
    const [signed, mac] = [t.slice(0, t.lastIndexOf(".")), t.slice(t.lastIndexOf(".") + 1)];
    const payload = JSON.parse(Buffer.from(signed.slice("atr_wit_".length), "base64url").toString());
    expect(Object.keys(payload).sort()).toEqual(["exp", "i", "iat", "m", "n", "o", "p", "s", "x"]); // ids and times only
    const forge = (p: object) => `atr_wit_${Buffer.from(JSON.stringify(p)).toString("base64url")}.${mac}`;
    const forged = [forge({ ...payload, p: "proj_b" }), forge({ ...payload, exp: payload.exp + 86_400 }), signed, `${signed}.`, `${signed}.${"A".repeat(43)}`, t + "A"];
    for (const f of forged) {
      const r = await fetch(`${s.baseURL}/models`, { headers: { authorization: `Bearer ${f}` } });
      expect(r.status).toBe(401);
    }
    expect((await fetch(`${s.baseURL}/models`, { headers: { authorization: `Bearer ${t}` } })).status).toBe(200);
  });

  it("expires on time", async () => {
    const t = await mint(rs, { exp: now() + 120 });
    const get = () => fetch(`${s.baseURL}/models`, { headers: { authorization: `Bearer ${t}` } });
    expect((await get()).status).toBe(200);
    s.clock.advance(119);
    expect((await get()).status).toBe(200);
    s.clock.advance(1);
    const r = await get();
    expect(r.status).toBe(401);
    expect((await r.json()).error.code).toBe("invalid_api_key");
  });
});

describe("configuration changes (reload) take effect at once", () => {
  beforeEach(async () => {
    await s.reload(config());
  });
  afterAll(async () => {
    await s.reload(config());
  });

  it("a disabled provider stops minting, and its tokens stop working; enabling it again restores them", async () => {
    const t = await mint(rs);
    const get = () => fetch(`${s.baseURL}/models`, { headers: { authorization: `Bearer ${t}` } });
    expect((await get()).status).toBe(200);
    await s.reload(config({ ciEnabled: false }));
    expect((await get()).status).toBe(401);
    await refused(params(await jwt(rs, now())), 400, "invalid_grant");
    // gRPC sees the same.
    await expectRpcError(() => createClient(ModelsService, createGrpcTransport({ baseUrl: s.url })).listModels({}, as(t)), Code.Unauthenticated, { httpStatus: 401 });
    await s.reload(config());
    expect((await get()).status).toBe(200);
  });

  it("a disabled mapping stops minting and ends its tokens", async () => {
    const t = await mint(rs);
    await s.reload(config({ deployMappingEnabled: false }));
    await refused(params(await jwt(rs, now())), 400, "invalid_grant");
    expect((await fetch(`${s.baseURL}/models`, { headers: { authorization: `Bearer ${t}` } })).status).toBe(401);
    // Tokens of the account's other (unchanged) mappings keep working.
  });

  it("a removed service account: its tokens stop working", async () => {
    const t = await mint(rs);
    const scoped = await mint(rs, { repository: "acme/models-only" });
    await s.reload(config({ withoutDeploy: true }));
    for (const tok of [t, scoped]) expect((await fetch(`${s.baseURL}/models`, { headers: { authorization: `Bearer ${tok}` } })).status).toBe(401);
    await refused(params(await jwt(rs, now())), 400, "invalid_grant");
  });

  it("a reload with an invalid file is refused by configFromEnv before anything changes (main keeps the running one)", async () => {
    const t = await mint(rs);
    await expect(s.reload({ organizations: [{ id: "org-default", identity_providers: [{ id: "idp_ci", kind: "jwt" }] }] })).rejects.toThrow(/ATRIUM_CONFIG/);
    expect((await fetch(`${s.baseURL}/models`, { headers: { authorization: `Bearer ${t}` } })).status).toBe(200);
  });

  it("API keys keep working alongside (ATRIUM_API_KEY still seeds its key with ATRIUM_CONFIG set)", async () => {
    expect((await fetch(`${s.baseURL}/models`, { headers: { authorization: `Bearer ${API_KEY}` } })).status).toBe(200);
  });
});

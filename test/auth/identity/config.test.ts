// Workload identity configuration: organizations[].service_accounts and
// organizations[].identity_providers in ATRIUM_CONFIG — the brief's example loads; every rule a
// schema or the identity compiler enforces is an error naming its path; every scope an RPC
// declares is a known permission; the mTLS variables go together; and a real server process
// re-reads its file on SIGHUP and when the file changes.
import { spawn, type ChildProcess } from "node:child_process";
import { readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getOption, hasOption, type DescMethod, type DescService } from "@bufbuild/protobuf";
import { access } from "../../../gen/atrium/v1/options_pb.js";
import { ConfigError, configFromEnv } from "../../../src/config.js";
import { PERMISSIONS } from "../../../src/auth/identity/permissions.js";
import { authorize } from "../../../src/auth/access.js";
import type { Principal } from "../../../src/auth/principal.js";
import { tempDir } from "../../shared/server.js";
import { exchange, GRANT, httpsCall, jwksOf, jwt, JWT_TYPE, pki, signingKey, type Issued, type SigningKey } from "../../shared/identity.js";

let dir: string;
let root: Issued;
let leafPem: string;
let key: SigningKey;
let n = 0;

beforeAll(async () => {
  dir = tempDir("atrium-idcfg-");
  const p = pki(dir);
  root = p.root("ca", "/CN=Config Test Root");
  leafPem = p.leaf("leaf", "/CN=svc.acme.test", root).pem;
  key = await signingKey("ES256", "k1");
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function load(doc: object | string) {
  const path = join(dir, `c${++n}.${typeof doc === "string" ? "yaml" : "json"}`);
  writeFileSync(path, typeof doc === "string" ? doc : JSON.stringify(doc));
  return configFromEnv({ ATRIUM_CONFIG: path });
}

function errorOf(doc: object): string {
  try {
    load(doc);
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("expected a ConfigError");
}

const jwtProvider = (over: object = {}) => ({ id: "idp_ci", kind: "jwt", issuer: "https://ci.example.test", audiences: ["atrium"], jwks: jwksOf(key), mappings: [{ service_account: "svc_deploy", condition: "true" }], ...over });
const x509Provider = (over: object = {}) => ({ id: "idp_mtls", kind: "x509", roots: [{ pem_file: "ca.pem" }], attribute_mapping: { "openai.subject": "assertion.subject_cn" }, mappings: [{ service_account: "svc_deploy", condition: "true" }], ...over });
const org = (providers: object[], extra: object = {}) => ({
  organizations: [{ id: "org-acme", projects: [{ id: "proj_web" }], service_accounts: [{ id: "svc_deploy", project: "proj_web", role: "member" }], identity_providers: providers, ...extra }],
});

describe("ATRIUM_CONFIG: service accounts and identity providers", () => {
  it("the documented example (YAML) loads", () => {
    const jwks = JSON.stringify(jwksOf(key));
    const cfg = load(`
organizations:
  - id: org-acme
    projects: [{ id: proj_web }]
    service_accounts:
      - { id: svc_deploy, project: proj_web, role: member }
    identity_providers:
      - id: idp_ci
        kind: jwt
        enabled: true
        issuer: https://ci.example.test
        audiences: [atrium]
        jwks: ${jwks}
        algorithms: [RS256, ES256, EdDSA]
        attribute_mapping: { subject: assertion.sub, repo: assertion.repository }
        attribute_condition: 'assertion.repository.startsWith("acme/")'
        mappings:
          - service_account: svc_deploy
            enabled: true
            condition: 'attribute.repo == "acme/web"'
            permissions: [api.model.read]
      - id: idp_mtls
        kind: x509
        enabled: true
        roots:
          - { pem_file: ca.pem, project: proj_web, admission: { subject_matches: "^CN=.*\\\\.acme\\\\.test$", max_chain: 3 } }
        attribute_mapping: { openai.subject: 'assertion.subject_cn' }
        mappings: [ { service_account: svc_deploy, enabled: true, condition: 'true' } ]
`);
    const providers = cfg.identity!.providers;
    expect([...providers.keys()]).toEqual(["idp_ci", "idp_mtls"]);
    const mtls = providers.get("idp_mtls")!;
    expect(mtls.kind === "x509" && mtls.roots[0]!.subjectMatches!.test("CN=svc.acme.test")).toBe(true);
    expect(cfg.identity!.serviceAccounts.get("org-acme")!.get("svc_deploy")).toEqual({ id: "svc_deploy", organizationId: "org-acme", projectId: "proj_web", role: "member" });
    expect(cfg.identity!.files).toEqual([join(dir, "ca.pem")]);
  });

  it("cross-references: accounts' projects, mappings' accounts, roots' projects, unique ids", () => {
    expect(errorOf(org([jwtProvider({ mappings: [{ service_account: "svc_x", condition: "true" }] })]))).toBe(
      "ATRIUM_CONFIG: /organizations/0/identity_providers/0/mappings/0/service_account 'svc_x' is not a service account of organization 'org-acme'",
    );
    expect(errorOf({ organizations: [{ id: "o", projects: [{ id: "p" }], service_accounts: [{ id: "s", project: "q" }] }] })).toBe(
      "ATRIUM_CONFIG: /organizations/0/service_accounts/0/project 'q' is not a project of organization 'o'",
    );
    expect(errorOf(org([x509Provider({ roots: [{ pem_file: "ca.pem", project: "proj_nope" }] })]))).toMatch(/roots\/0\/project 'proj_nope' is not a project/);
    const twice = { organizations: [...org([jwtProvider()]).organizations, { id: "org-b", projects: [{ id: "pb" }], service_accounts: [{ id: "svc_deploy", project: "pb" }], identity_providers: [jwtProvider()] }] };
    expect(errorOf(twice)).toMatch(/\/organizations\/1\/identity_providers\/0\/id 'idp_ci' is already used by \/organizations\/0\/identity_providers\/0/);
  });

  it("JWT providers: exactly one JWKS source, public asymmetric keys only, asymmetric algorithms only, issuer and audiences", () => {
    expect(errorOf(org([jwtProvider({ jwks_url: "https://x.test/jwks" })]))).toMatch(/must set exactly one of jwks, jwks_url, jwks_file \(has jwks, jwks_url\)/);
    expect(errorOf(org([jwtProvider({ jwks: undefined })]))).toMatch(/must set exactly one of jwks, jwks_url, jwks_file$/);
    expect(errorOf(org([jwtProvider({ jwks: { keys: [{ ...key.publicJwk, d: "secret" }] } })]))).toMatch(/jwks key 0 holds private key material \('d'\)/);
    expect(errorOf(org([jwtProvider({ jwks: { keys: [{ kty: "oct", k: "c2VjcmV0", kid: "h" }] } })]))).toMatch(/kty must be RSA, EC or OKP/);
    expect(errorOf(org([jwtProvider({ jwks_file: "missing.json", jwks: undefined })]))).toMatch(/jwks_file ENOENT|jwks_file .*no such file/);
    for (const alg of ["HS256", "none"]) expect(errorOf(org([jwtProvider({ algorithms: [alg] })]))).toMatch(/algorithms\/0 must be one of RS256/);
    expect(errorOf(org([jwtProvider({ issuer: undefined })]))).toMatch(/issuer is required for a jwt provider/);
    expect(errorOf(org([jwtProvider({ audiences: [] })]))).toMatch(/audiences must not be empty/);
    expect(errorOf(org([jwtProvider({ roots: [{ pem: root.pem }] })]))).toMatch(/roots is not allowed for a jwt provider/);
    expect(errorOf(org([jwtProvider({ jwks_url: "ftp://x", jwks: undefined })]))).toMatch(/jwks_url must be an http or https URL/);
  });

  it("X.509 providers: roots that are CA certificates, an openai.subject mapping, admission rules that compile", () => {
    writeFileSync(join(dir, "leaf.pem"), leafPem);
    expect(errorOf(org([x509Provider({ roots: [{ pem_file: "leaf.pem" }] })]))).toMatch(/roots\/0: the certificate 'CN=svc.acme.test' is not a CA certificate/);
    expect(errorOf(org([x509Provider({ roots: [{ pem_file: "nope.pem" }] })]))).toMatch(/roots\/0\/pem_file cannot be read/);
    expect(errorOf(org([x509Provider({ roots: [{ pem: "junk" }] })]))).toMatch(/roots\/0\/pem holds no PEM certificate/);
    expect(errorOf(org([x509Provider({ roots: [{ pem: root.pem, pem_file: "ca.pem" }] })]))).toMatch(/roots\/0 must set exactly one of pem, pem_file/);
    expect(errorOf(org([x509Provider({ attribute_mapping: { subject: "assertion.subject" } })]))).toMatch(/attribute_mapping must map 'openai.subject'/);
    expect(errorOf(org([x509Provider({ roots: [{ pem_file: "ca.pem", admission: { subject_matches: "([" } }] })]))).toMatch(/subject_matches is not a valid regular expression/);
    expect(errorOf(org([x509Provider({ roots: [{ pem_file: "ca.pem", admission: { max_chain: 0 } }] })]))).toMatch(/max_chain must be at least 1/);
    expect(errorOf(org([x509Provider({ issuer: "https://x" })]))).toMatch(/issuer is not allowed for an x509 provider/);
  });

  it("CEL must parse; mappings need a condition; permissions are known ones", () => {
    expect(errorOf(org([jwtProvider({ attribute_condition: "assertion.sub ==" })]))).toMatch(/identity_providers\/0\/attribute_condition is not valid CEL/);
    expect(errorOf(org([jwtProvider({ attribute_mapping: { repo: "foo(" } })]))).toMatch(/attribute_mapping\/repo is not valid CEL/);
    expect(errorOf(org([jwtProvider({ mappings: [{ service_account: "svc_deploy", condition: "1 +" }] })]))).toMatch(/mappings\/0\/condition is not valid CEL/);
    expect(errorOf(org([jwtProvider({ mappings: [{ service_account: "svc_deploy" }] })]))).toMatch(/mappings\/0\/condition is required/);
    expect(errorOf(org([jwtProvider({ mappings: [{ service_account: "svc_deploy", condition: "true", permissions: ["api.everything"] }] })]))).toMatch(
      /permissions\/0 must be one of api.model.read/,
    );
  });

  it("limits: 50 providers per organization, 50 mappings per provider; ids have a format", () => {
    const many = Array.from({ length: 51 }, (_, i) => jwtProvider({ id: `idp_${i}` }));
    expect(errorOf(org(many))).toMatch(/identity_providers must have at most 50 items/);
    const mappings = Array.from({ length: 51 }, () => ({ service_account: "svc_deploy", condition: "true" }));
    expect(errorOf(org([jwtProvider({ mappings })]))).toMatch(/mappings must have at most 50 items/);
    expect(errorOf(org([jwtProvider({ id: "idp ci" })]))).toMatch(/identity_providers\/0\/id must be 1-128 letters/);
  });

  /** Every RPC of every generated service, with its access rule. */
  async function allMethods(): Promise<DescMethod[]> {
    const genDir = fileURLToPath(new URL("../../../gen/atrium/v1/", import.meta.url));
    const out: DescMethod[] = [];
    for (const f of readdirSync(genDir).filter((f) => f.endsWith("_pb.ts"))) {
      const mod = (await import(join(genDir, f))) as Record<string, unknown>;
      for (const v of Object.values(mod)) if ((v as DescService)?.kind === "service") out.push(...(v as DescService).methods.filter((m) => hasOption(m, access)));
    }
    return out;
  }

  it("every scope an RPC declares is a known permission (the permissions table is the proto's)", async () => {
    const scopes = new Set((await allMethods()).map((m) => getOption(m, access).scope).filter(Boolean));
    expect(scopes.size).toBeGreaterThan(5);
    for (const scope of scopes) expect(PERMISSIONS as readonly string[], `scope ${scope} (add it to src/auth/identity/permissions.ts)`).toContain(scope);
  });

  it("every admin-key RPC, and every RPC denying workload identity, refuses a workload token — even an owner's, unscoped", async () => {
    const token: Principal = { kind: "workload_token", credentialId: "wit_x", organizationId: "o", projectId: "p", role: "owner", scopes: null };
    const refusing = (await allMethods()).filter((m) => getOption(m, access).admin || getOption(m, access).denyWorkloadIdentity);
    expect(refusing.map((m) => m.name)).toContain("DeleteModel");
    for (const m of refusing) expect(() => authorize(token, m), m.name).toThrow(/admin API key|Workload identity tokens cannot/);
  });

  it("ATRIUM_MTLS_PORT, ATRIUM_MTLS_CERT and ATRIUM_MTLS_KEY go together", () => {
    expect(() => configFromEnv({ ATRIUM_MTLS_PORT: "8443" })).toThrow(/go together/);
    expect(() => configFromEnv({ ATRIUM_MTLS_PORT: "x", ATRIUM_MTLS_CERT: "c", ATRIUM_MTLS_KEY: "k" })).toThrow(/port number/);
    expect(configFromEnv({ ATRIUM_MTLS_PORT: "8443", ATRIUM_MTLS_CERT: "c", ATRIUM_MTLS_KEY: "k" }).mtls).toEqual({ port: 8443, cert: "c", key: "k" });
    expect(configFromEnv({}).mtls).toBeUndefined();
  });
});

describe("a server process re-reads ATRIUM_CONFIG on SIGHUP and when the file changes", () => {
  let proc: ChildProcess | undefined;
  afterAll(() => {
    if (proc && proc.exitCode === null) proc.kill("SIGKILL");
  });

  it("SIGHUP disables a provider within seconds; a file change enables it again; the mTLS listener starts from the environment", { timeout: 120_000 }, async () => {
    const server = pki(dir).server("listener");
    const configPath = join(dir, "live.json");
    const write = (enabled: boolean) => writeFileSync(configPath, JSON.stringify(org([jwtProvider({ enabled })])));
    write(true);
    const main = fileURLToPath(new URL("../../../src/main.ts", import.meta.url));
    proc = spawn(process.execPath, ["--import", "tsx", main], {
      cwd: fileURLToPath(new URL("../../..", import.meta.url)),
      env: {
        ...process.env,
        ATRIUM_HOST: "127.0.0.1",
        ATRIUM_PORT: "0",
        ATRIUM_MTLS_PORT: "0",
        ATRIUM_MTLS_CERT: server.cert,
        ATRIUM_MTLS_KEY: server.key,
        ATRIUM_DATA_DIR: join(dir, "data"),
        ATRIUM_CONFIG: configPath,
        ATRIUM_API_KEY: "sk-atrium-sighup-test-key-0001",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    proc.stdout!.on("data", (d) => (out += d));
    proc.stderr!.on("data", (d) => (out += d));
    const waitFor = async <T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 60_000): Promise<T> => {
      const deadline = Date.now() + ms;
      for (;;) {
        const v = await probe();
        if (v !== undefined) return v;
        if (proc!.exitCode !== null) throw new Error(`server exited (${proc!.exitCode}):\n${out}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${out.slice(-3000)}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    };
    const url = await waitFor("the main listener", () => /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out)?.[1]);
    const mtlsUrl = await waitFor("the mTLS listener", () => /"mtlsUrl":"(https:\/\/127\.0\.0\.1:\d+)"/.exec(out)?.[1]);
    expect((await httpsCall(`${mtlsUrl}/healthz`, { ca: server.pem })).status).toBe(403);

    const attempt = async () => {
      const t = Math.floor(Date.now() / 1000);
      const r = await exchange(url, { grant_type: GRANT, subject_token_type: JWT_TYPE, subject_token: await jwt(key, t), identity_provider_id: "idp_ci", service_account_id: "svc_deploy" });
      return r.status;
    };
    expect(await attempt()).toBe(200);

    write(false);
    proc.kill("SIGHUP");
    const t0 = Date.now();
    await waitFor("SIGHUP to disable the provider", async () => ((await attempt()) === 400 ? true : undefined), 10_000);
    expect(Date.now() - t0).toBeLessThan(5_000);

    // No signal: the file watcher notices (size and mtime change).
    write(true);
    await waitFor("the file change to enable it again", async () => ((await attempt()) === 200 ? true : undefined), 10_000);

    // An invalid file is reported and the running configuration stays.
    writeFileSync(configPath, "{ not json");
    proc.kill("SIGHUP");
    await waitFor("the reload error", () => (out.includes("configuration not reloaded") ? true : undefined), 10_000);
    expect(await attempt()).toBe(200);

    proc.kill("SIGTERM");
    await waitFor("exit", () => (proc!.exitCode !== null ? true : undefined), 15_000).catch(() => undefined);
  });
});

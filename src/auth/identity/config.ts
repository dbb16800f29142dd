// The workload identity part of ATRIUM_CONFIG: `organizations[].service_accounts` and
// `organizations[].identity_providers`. The JSON Schema (config-schema.ts) checks shapes; this
// module checks what a schema cannot (cross-references, exactly one JWKS source, CEL that parses,
// PEM roots that are CAs, regexes that compile) and compiles the result once per load: CEL
// planned, JWKS files and PEM roots read. Every problem names its path in the file.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { isAbsolute, resolve } from "node:path";
import type { JSONWebKeySet } from "jose";
import type { Role } from "../principal.js";
import { CelProgram, compileCel } from "./cel.js";
import { checkJwks, readJwksFile } from "./jwks.js";
import { certificatesFromPem, type TrustRoot } from "./x509.js";

// ---- the file's shapes (snake_case, as written) ----

export interface ServiceAccountFileConfig {
  id: string;
  name?: string;
  project: string;
  role?: Role;
}

export interface MappingFileConfig {
  service_account: string;
  enabled?: boolean;
  /** CEL over `assertion` and `attribute`; must be true for the mapping to match. */
  condition: string;
  /** Narrows the token to these permissions (permissions.ts); absent: the account's role decides. */
  permissions?: string[];
}

export interface RootFileConfig {
  pem_file?: string;
  pem?: string;
  project?: string;
  active?: boolean;
  admission?: { subject_matches?: string; max_chain?: number };
}

export interface IdentityProviderFileConfig {
  id: string;
  name?: string;
  kind: "jwt" | "x509";
  enabled?: boolean;
  issuer?: string;
  audiences?: string[];
  jwks?: unknown;
  jwks_url?: string;
  jwks_file?: string;
  algorithms?: string[];
  attribute_mapping?: Record<string, string>;
  attribute_condition?: string;
  roots?: RootFileConfig[];
  mappings?: MappingFileConfig[];
}

export interface OrganizationIdentityFileConfig {
  id: string;
  projects?: Array<{ id: string }>;
  service_accounts?: ServiceAccountFileConfig[];
  identity_providers?: IdentityProviderFileConfig[];
}

// ---- compiled ----

export const DEFAULT_JWT_ALGORITHMS = ["RS256", "ES256", "EdDSA"];
/** The X.509 attribute every X.509 provider must derive, non-empty (spec 4.11). */
export const SUBJECT_ATTRIBUTE = "openai.subject";

export interface ServiceAccount {
  id: string;
  organizationId: string;
  projectId: string;
  role: Role;
}

export interface Mapping {
  serviceAccountId: string;
  enabled: boolean;
  condition: CelProgram;
  /** As configured (the `scope` of the exchange response); null: none, the role decides. */
  permissions: string[] | null;
  /** Identifies this mapping's content: a token minted under it dies when it changes or goes. */
  fingerprint: string;
}

interface ProviderCommon {
  id: string;
  organizationId: string;
  enabled: boolean;
  attributeMapping: Array<[name: string, program: CelProgram]>;
  attributeCondition?: CelProgram;
  mappings: Mapping[];
}

export type JwksSpec = { kind: "inline"; jwks: JSONWebKeySet } | { kind: "file"; path: string; jwks: JSONWebKeySet } | { kind: "url"; url: string };

export interface JwtProviderSpec extends ProviderCommon {
  kind: "jwt";
  issuer: string;
  audiences: string[];
  algorithms: string[];
  jwks: JwksSpec;
}

export interface X509ProviderSpec extends ProviderCommon {
  kind: "x509";
  /** The active roots only. */
  roots: TrustRoot[];
}

export type ProviderSpec = JwtProviderSpec | X509ProviderSpec;

export interface IdentitySpec {
  /** By provider id (unique across organizations: the exchange names only the provider). */
  providers: Map<string, ProviderSpec>;
  /** Organization id → service account id → account. */
  serviceAccounts: Map<string, Map<string, ServiceAccount>>;
  /** The JWKS and PEM files read (absolute paths), for watching. */
  files: string[];
}

export const emptyIdentitySpec = (): IdentitySpec => ({ providers: new Map(), serviceAccounts: new Map(), files: [] });

/**
 * Compiles the identity sections of `organizations` (already schema-valid). Relative file paths
 * are resolved against `baseDir` (the configuration file's folder). Returns the problems found,
 * each naming its path; the spec is only meaningful when there are none.
 */
export function compileIdentity(organizations: OrganizationIdentityFileConfig[], baseDir: string): { spec: IdentitySpec; errors: string[] } {
  const spec = emptyIdentitySpec();
  const errors: string[] = [];
  const providerPaths = new Map<string, string>();
  const file = (p: string) => {
    const abs = isAbsolute(p) ? p : resolve(baseDir, p);
    if (!spec.files.includes(abs)) spec.files.push(abs);
    return abs;
  };

  organizations.forEach((org, oi) => {
    const at = `/organizations/${oi}`;
    const projects = new Set((org.projects ?? []).map((p) => p.id));
    const accounts = new Map<string, ServiceAccount>();
    spec.serviceAccounts.set(org.id, accounts);
    (org.service_accounts ?? []).forEach((sa, si) => {
      if (accounts.has(sa.id)) errors.push(`${at}/service_accounts/${si}/id '${sa.id}' is declared twice in this organization`);
      if (!projects.has(sa.project)) errors.push(`${at}/service_accounts/${si}/project '${sa.project}' is not a project of organization '${org.id}'`);
      accounts.set(sa.id, { id: sa.id, organizationId: org.id, projectId: sa.project, role: sa.role ?? "member" });
    });

    (org.identity_providers ?? []).forEach((p, pi) => {
      const pat = `${at}/identity_providers/${pi}`;
      const earlier = providerPaths.get(p.id);
      if (earlier) errors.push(`${pat}/id '${p.id}' is already used by ${earlier} (provider ids are unique across organizations)`);
      providerPaths.set(p.id, pat);

      const cel = (source: string, path: string): CelProgram => {
        const r = compileCel(source);
        if (typeof r === "string") {
          errors.push(`${path} is not valid CEL: ${r}`);
          return new CelProgram("false");
        }
        return r;
      };
      const attributeMapping = Object.entries(p.attribute_mapping ?? {}).map(
        ([name, source]) => [name, cel(source, `${pat}/attribute_mapping/${name}`)] as [string, CelProgram],
      );
      const mappings = (p.mappings ?? []).map((m, mi): Mapping => {
        const mat = `${pat}/mappings/${mi}`;
        if (!accounts.has(m.service_account)) errors.push(`${mat}/service_account '${m.service_account}' is not a service account of organization '${org.id}'`);
        const permissions = m.permissions ? [...new Set(m.permissions)] : null;
        const fingerprint = createHash("sha256")
          .update(JSON.stringify([p.id, m.service_account, m.condition, permissions]))
          .digest("hex")
          .slice(0, 32);
        return { serviceAccountId: m.service_account, enabled: m.enabled ?? true, condition: cel(m.condition, `${mat}/condition`), permissions, fingerprint };
      });
      const common: ProviderCommon = {
        id: p.id,
        organizationId: org.id,
        enabled: p.enabled ?? true,
        attributeMapping,
        attributeCondition: p.attribute_condition === undefined ? undefined : cel(p.attribute_condition, `${pat}/attribute_condition`),
        mappings,
      };

      if (p.kind === "jwt") {
        for (const k of ["roots"] as const) if (p[k] !== undefined) errors.push(`${pat}/${k} is not allowed for a jwt provider`);
        if (!p.issuer) errors.push(`${pat}/issuer is required for a jwt provider`);
        if (!p.audiences?.length) errors.push(`${pat}/audiences is required (and not empty) for a jwt provider`);
        const sources = (["jwks", "jwks_url", "jwks_file"] as const).filter((k) => p[k] !== undefined);
        if (sources.length !== 1) {
          errors.push(`${pat} must set exactly one of jwks, jwks_url, jwks_file${sources.length ? ` (has ${sources.join(", ")})` : ""}`);
          return;
        }
        let jwks: JwksSpec;
        try {
          if (p.jwks !== undefined) jwks = { kind: "inline", jwks: checkJwks(p.jwks) };
          else if (p.jwks_file !== undefined) jwks = { kind: "file", path: file(p.jwks_file), jwks: readJwksFile(file(p.jwks_file)) };
          else jwks = { kind: "url", url: p.jwks_url! };
        } catch (e) {
          errors.push(`${pat}/${sources[0]} ${(e as Error).message}`);
          return;
        }
        spec.providers.set(p.id, { ...common, kind: "jwt", issuer: p.issuer ?? "", audiences: p.audiences ?? [], algorithms: p.algorithms ?? DEFAULT_JWT_ALGORITHMS, jwks });
        return;
      }

      for (const k of ["issuer", "audiences", "jwks", "jwks_url", "jwks_file", "algorithms"] as const)
        if (p[k] !== undefined) errors.push(`${pat}/${k} is not allowed for an x509 provider`);
      if (!p.roots?.length) errors.push(`${pat}/roots is required (and not empty) for an x509 provider`);
      if (!p.attribute_mapping || !(SUBJECT_ATTRIBUTE in p.attribute_mapping))
        errors.push(`${pat}/attribute_mapping must map '${SUBJECT_ATTRIBUTE}' for an x509 provider`);
      const roots: TrustRoot[] = [];
      (p.roots ?? []).forEach((r, ri) => {
        const rat = `${pat}/roots/${ri}`;
        if ((r.pem === undefined) === (r.pem_file === undefined)) return void errors.push(`${rat} must set exactly one of pem, pem_file`);
        if (r.project !== undefined && !projects.has(r.project)) errors.push(`${rat}/project '${r.project}' is not a project of organization '${org.id}'`);
        let subjectMatches: RegExp | undefined;
        if (r.admission?.subject_matches !== undefined) {
          try {
            subjectMatches = new RegExp(r.admission.subject_matches);
          } catch (e) {
            errors.push(`${rat}/admission/subject_matches is not a valid regular expression: ${(e as Error).message}`);
          }
        }
        let certs;
        try {
          certs = certificatesFromPem(r.pem ?? readFileSync(file(r.pem_file!), "utf8"));
        } catch (e) {
          return void errors.push(`${rat}/${r.pem !== undefined ? "pem" : "pem_file"} ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "cannot be read" : (e as Error).message}`);
        }
        for (const cert of certs) {
          if (!cert.ca) errors.push(`${rat}: the certificate '${cert.subject.replaceAll("\n", ",")}' is not a CA certificate`);
          if (r.active ?? true) roots.push({ cert, projectId: r.project ?? null, subjectMatches, maxChain: r.admission?.max_chain });
        }
      });
      spec.providers.set(p.id, { ...common, kind: "x509", roots });
    });
  });
  return { spec, errors };
}

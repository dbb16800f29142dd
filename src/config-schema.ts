// The JSON Schema (draft 2020-12) of the ATRIUM_CONFIG file, compiled once with ajv, and the
// translation of ajv's errors into messages that name the path and the reason:
//   ATRIUM_CONFIG: /keys/0/role must be one of owner, member, reader
//   ATRIUM_CONFIG: /organizations/0: unknown property 'projets'
//
// Areas add their own top-level sections (e.g. `containers`) by passing schema fragments to
// configFromEnv(env, sections); they are merged into the root's `properties`, so an area never
// edits this file. A fragment should set `additionalProperties: false` on its objects: unknown
// properties are errors everywhere else, so that a typo never passes silently.
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import { PERMISSIONS } from "./auth/identity/permissions.js";

/** Annotation read by describeError(): replaces ajv's generic reason for errors raised by that schema. */
const REASON = "x-reason";

/** Default time limit of one provider call when `timeout_ms` is not given. */
export const DEFAULT_PROVIDER_TIMEOUT_MS = 60_000;

const id = { type: "string", minLength: 1 };
const name = { type: "string" };
const model = { type: "string", minLength: 1 };
const baseUrl = { type: "string", format: "http-url", description: "OpenAI-compatible base URL, e.g. https://api.example.com/v1" };
const apiKeyEnv = {
  type: "string",
  pattern: "^[A-Za-z_][A-Za-z0-9_]*$",
  [REASON]: "must be the name of an environment variable (letters, digits, _), not the key itself",
};
const timeoutMs = { type: "integer", minimum: 1, maximum: 3_600_000 };

// Rate limits (spec 8; src/limits/config.ts): per organization (defaults: 10,000 requests and
// 10,000,000 tokens per minute) and a project's own caps inside its organization's.
const perWindow = { type: "integer", minimum: 1 };
const rateLimits = {
  type: "object",
  additionalProperties: false,
  properties: {
    requests_per_minute: perWindow,
    requests_per_day: perWindow,
    tokens_per_minute: perWindow,
    tokens_per_day: perWindow,
    // Read on organizations only: per credential, per vector store, per organization (spec 8).
    uploads_per_minute: perWindow,
    vector_store_file_requests_per_minute: { ...perWindow, description: "Requests per minute to one vector store's /files and /file_batches endpoints (default 300)." },
    vector_store_attached_files_per_minute: { ...perWindow, description: "Files attached to vector stores per minute in the organization, a batch of N counting N (default 2000)." },
  },
};
const spendLimit = { type: "integer", minimum: 1, description: "Hard cap on tokens per calendar month (UTC): 429 insufficient_quota once reached." };

const project = {
  type: "object",
  additionalProperties: false,
  required: ["id"],
  properties: {
    id,
    name,
    rate_limits: rateLimits,
    spend_limit_tokens_per_month: spendLimit,
    archived: { type: "boolean", description: "true: every key and token of the project is refused, on every instance. Final: a file without it does not bring the project back." },
  },
};

// Workload identity (spec 4.11): service accounts and the providers whose identities map to them.
// Cross-references, the JWKS source rule, CEL and PEM are checked by src/auth/identity/config.ts.
const identityId = { type: "string", pattern: "^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$", [REASON]: "must be 1-128 letters, digits, _ . : - (starting with a letter or digit)" };
const cel = { type: "string", minLength: 1, maxLength: 4096, description: "A CEL expression over `assertion` and `attribute`." };

const serviceAccount = {
  type: "object",
  additionalProperties: false,
  required: ["id", "project"],
  properties: { id: identityId, name, project: id, role: { enum: ["owner", "member", "reader"] } },
};

const identityMapping = {
  type: "object",
  additionalProperties: false,
  required: ["service_account", "condition"],
  properties: {
    service_account: identityId,
    enabled: { type: "boolean" },
    condition: cel,
    permissions: { type: "array", uniqueItems: true, items: { enum: [...PERMISSIONS] } },
  },
};

const trustRoot = {
  type: "object",
  additionalProperties: false,
  properties: {
    pem_file: { type: "string", minLength: 1 },
    pem: { type: "string", minLength: 1 },
    project: id,
    active: { type: "boolean" },
    admission: {
      type: "object",
      additionalProperties: false,
      properties: {
        subject_matches: { type: "string", minLength: 1, description: "A regular expression the leaf's subject DN (RFC 4514 order) must match." },
        max_chain: { type: "integer", minimum: 1, maximum: 8, description: "Longest accepted chain, counting the leaf and the root." },
      },
    },
  },
};

const identityProvider = {
  type: "object",
  additionalProperties: false,
  required: ["id", "kind"],
  properties: {
    id: identityId,
    name,
    kind: { enum: ["jwt", "x509"] },
    enabled: { type: "boolean" },
    issuer: { type: "string", minLength: 1 },
    audiences: { type: "array", minItems: 1, items: { type: "string", minLength: 1 } },
    jwks: { type: "object" },
    jwks_url: { type: "string", format: "http-url" },
    jwks_file: { type: "string", minLength: 1 },
    algorithms: {
      type: "array",
      minItems: 1,
      uniqueItems: true,
      // Asymmetric only: never `none`, never an HMAC algorithm.
      items: { enum: ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA", "Ed25519"] },
    },
    attribute_mapping: { type: "object", maxProperties: 50, additionalProperties: cel, propertyNames: { type: "string", minLength: 1, maxLength: 128 } },
    attribute_condition: cel,
    roots: { type: "array", minItems: 1, maxItems: 50, items: trustRoot },
    mappings: { type: "array", maxItems: 50, items: identityMapping },
  },
};

const organization = {
  type: "object",
  additionalProperties: false,
  required: ["id"],
  properties: {
    id,
    name,
    projects: { type: "array", items: project },
    rate_limits: rateLimits,
    spend_limit_tokens_per_month: spendLimit,
    service_accounts: { type: "array", items: serviceAccount },
    identity_providers: { type: "array", maxItems: 50, items: identityProvider },
  },
};

const key = {
  type: "object",
  additionalProperties: false,
  required: ["key", "organization"],
  properties: {
    key: { type: "string", minLength: 8, description: "The secret itself; only its hash is stored." },
    name,
    kind: { enum: ["standard", "admin"] },
    // Must name a declared organization: checked after the schema (a cross-reference).
    organization: id,
    projects: { type: "array", items: id, description: "The first is the key's default project. Omit on admin keys for every project." },
    role: { enum: ["owner", "member", "reader"] },
    revoked: { type: "boolean", description: "true: the key is refused, on every instance. Final: a file without it does not bring the key back." },
  },
  // A standard key (the default kind) must list its projects; an admin key may omit them.
  if: { required: ["kind"], properties: { kind: { const: "admin" } } },
  else: {
    required: ["projects"],
    [REASON]: "is required for a standard key",
    properties: { projects: { type: "array", minItems: 1, [REASON]: "must not be empty for a standard key" } },
  },
};

/**
 * One model-backed capability. `kind` defaults to `local` without a base_url and to `upstream`
 * with one; `upstream` requires base_url. `api_key_env` names the environment variable holding
 * the upstream's key (the key itself never goes in the file).
 */
function capability(description: string, extra: Record<string, object> = {}) {
  return {
    type: "object",
    description,
    additionalProperties: false,
    properties: {
      kind: { enum: ["local", "upstream"] },
      base_url: baseUrl,
      api_key_env: apiKeyEnv,
      timeout_ms: timeoutMs,
      ...extra,
    },
    dependentRequired: { api_key_env: ["base_url"] },
    allOf: [
      { if: kindIs("upstream"), then: { required: ["base_url"], [REASON]: "is required when kind is upstream" } },
      { if: kindIs("local"), then: { properties: { base_url: { not: {}, [REASON]: "is not allowed when kind is local" } } } },
    ],
  };
}

function kindIs(kind: string) {
  return { required: ["kind"], properties: { kind: { const: kind } } };
}

const providers = {
  type: "object",
  additionalProperties: false,
  properties: {
    embeddings: capability("Vector store ingestion and search, /v1/embeddings.", {
      model,
      dimensions: { type: "integer", minimum: 1, maximum: 65_536 },
    }),
    moderation: capability("/v1/moderations.", { model }),
    video: capability("/v1/videos renders."),
    fine_tuning: capability("Fine-tuning jobs (the trainer)."),
    // Model calls (graders, batch /v1/responses and /v1/chat/completions): always an upstream,
    // so no `kind`; absent means none is configured.
    responses: {
      type: "object",
      description: "Model calls: graders, batch /v1/responses and /v1/chat/completions.",
      additionalProperties: false,
      required: ["base_url"],
      properties: {
        base_url: baseUrl,
        api_key_env: apiKeyEnv,
        timeout_ms: timeoutMs,
      },
    },
  },
};

const coreProperties = { organizations: { type: "array", items: organization }, keys: { type: "array", items: key }, providers };

export const CORE_SECTIONS: readonly string[] = Object.keys(coreProperties);

/** The root schema with the areas' sections merged into its properties. */
export function configSchema(sections: Record<string, object> = {}): object {
  for (const name of Object.keys(sections))
    if (CORE_SECTIONS.includes(name)) throw new Error(`config section '${name}' is a core section; choose another name`);
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    title: "ATRIUM_CONFIG",
    type: "object",
    additionalProperties: false,
    properties: { ...coreProperties, ...sections },
  };
}

export function isHttpUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === "http:" || u.protocol === "https:") && !!u.hostname;
  } catch {
    return false;
  }
}

// useDefaults: a section's schema may declare defaults, and its area then reads them filled in.
// Built on the first file to validate: compiling the schema costs ~0.2 s of start-up, which a
// server started without ATRIUM_CONFIG never needs.
let ajv: Ajv2020 | undefined;
function compiler(): Ajv2020 {
  if (!ajv) {
    ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false, useDefaults: true, verbose: true });
    ajv.addKeyword(REASON);
    ajv.addFormat("http-url", { type: "string", validate: isHttpUrl });
  }
  return ajv;
}

let coreValidator: ValidateFunction | undefined;
// Compiled once per sections object (areas pass the same object on every start and re-read).
const sectionValidators = new WeakMap<object, ValidateFunction>();

export function configValidator(sections: Record<string, object> = {}): ValidateFunction {
  if (Object.keys(sections).length === 0) return (coreValidator ??= compiler().compile(configSchema()));
  let v = sectionValidators.get(sections);
  if (!v) {
    v = compiler().compile(configSchema(sections));
    sectionValidators.set(sections, v);
  }
  return v;
}

/** Validates (filling schema defaults in place); returns readable messages, none when valid. */
export function validateConfig(doc: unknown, sections: Record<string, object> = {}): string[] {
  const validate = configValidator(sections);
  if (validate(doc)) return [];
  const messages = (validate.errors ?? []).map(describeError).filter((m): m is string => m !== null);
  return [...new Set(messages)];
}

const article: Record<string, string> = {
  string: "a string",
  integer: "an integer",
  number: "a number",
  boolean: "true or false",
  array: "a list",
  object: "an object (a mapping)",
  null: "null",
};

function pointer(path: string): string {
  return path === "" ? "top level" : path;
}

/** One ajv error as "path reason"; null for errors that only repeat another (if/then wrappers). */
export function describeError(e: ErrorObject): string | null {
  const custom = (e.parentSchema as Record<string, unknown> | undefined)?.[REASON] as string | undefined;
  const p = e.params as Record<string, any>;
  switch (e.keyword) {
    case "if":
    case "allOf":
      return null; // the failing then/else branch reports the actual problem
    case "additionalProperties":
      return `${pointer(e.instancePath)}: unknown property '${p.additionalProperty}'`;
    case "required":
      return `${e.instancePath}/${p.missingProperty} ${custom ?? "is required"}`;
    case "dependentRequired":
      return `${e.instancePath}/${p.missingProperty} is required with ${p.property}`;
  }
  const reason = custom ?? genericReason(e, p);
  return `${pointer(e.instancePath)} ${reason}`;
}

function genericReason(e: ErrorObject, p: Record<string, any>): string {
  switch (e.keyword) {
    case "type": {
      const types = String(p.type).split(",");
      return `must be ${types.map((t) => article[t] ?? t).join(" or ")}`;
    }
    case "enum":
      return `must be one of ${(p.allowedValues as unknown[]).map(String).join(", ")}`;
    case "const":
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case "minLength":
      return p.limit === 1 ? "must not be empty" : `must be at least ${p.limit} characters`;
    case "maxLength":
      return `must be at most ${p.limit} characters`;
    case "minItems":
      return p.limit === 1 ? "must not be empty" : `must have at least ${p.limit} items`;
    case "maxItems":
      return `must have at most ${p.limit} items`;
    case "minimum":
      return `must be at least ${p.limit}`;
    case "maximum":
      return `must be at most ${p.limit}`;
    case "exclusiveMinimum":
      return `must be greater than ${p.limit}`;
    case "exclusiveMaximum":
      return `must be less than ${p.limit}`;
    case "format":
      return p.format === "http-url" ? "must be an http or https URL" : `must be a valid ${p.format}`;
    case "pattern":
      return `must match ${p.pattern}`;
    case "uniqueItems":
      return `must not repeat items (${p.j} and ${p.i} are the same)`;
    case "not":
      return "is not allowed here";
    default:
      return e.message ?? "is invalid";
  }
}

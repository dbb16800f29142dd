// Runtime configuration: the environment variables of the README's table, plus an optional
// ATRIUM_CONFIG file (JSON or YAML) declaring organizations, projects, keys, the model providers
// and the areas' own sections. The file is checked against the JSON Schema in config-schema.ts.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { createRequire } from "node:module";
import type { Role } from "./auth/principal.js";
import { compileIdentity, emptyIdentitySpec, type IdentitySpec, type OrganizationIdentityFileConfig } from "./auth/identity/config.js";
import { DEFAULT_PROVIDER_TIMEOUT_MS, validateConfig } from "./config-schema.js";
import { enginesConfig, type EnginesConfig } from "./config-engines.js";
import { DEFAULT_CONNECTION_LIMITS, type ConnectionLimits } from "./transport/timeouts.js";

export interface KeyConfig {
  /** The secret itself (hashed on load) ... */
  key?: string;
  name?: string;
  kind?: "standard" | "admin";
  organization: string;
  /** Projects this key may use; the first is the default. Omit on admin keys for all projects. */
  projects?: string[];
  role?: Role;
  /** Refused everywhere from the next look-up on; final (see KeyStore.put). */
  revoked?: boolean;
}

/** One capability's section of `providers` as written in the file (see config-schema.ts). */
export interface FileProviderConfig {
  kind?: "local" | "upstream";
  base_url?: string;
  /** The name of the environment variable holding the upstream's key, never the key itself. */
  api_key_env?: string;
  timeout_ms?: number;
}

export interface FileProvidersConfig {
  embeddings?: FileProviderConfig & { model?: string; dimensions?: number };
  moderation?: FileProviderConfig & { model?: string };
  video?: FileProviderConfig;
  fine_tuning?: FileProviderConfig;
  responses?: { base_url: string; api_key_env?: string; timeout_ms?: number };
}

export interface FileConfig {
  /** Workload identity (service_accounts, identity_providers): see auth/identity/config.ts. */
  organizations?: Array<OrganizationIdentityFileConfig & { name?: string; projects?: Array<{ id: string; name?: string; archived?: boolean }> }>;
  keys?: KeyConfig[];
  providers?: FileProvidersConfig;
}

/** A capability served in-process by the engine that owns it. */
export interface LocalProviderConfig {
  kind: "local";
  /** Time limit of one call; the local engine applies it. */
  timeoutMs: number;
}

/** A capability served by an OpenAI-compatible service. */
export interface UpstreamProviderConfig {
  kind: "upstream";
  /** http(s) URL without a trailing slash; paths such as /embeddings are appended to it. */
  baseUrl: string;
  /** Read from the variable `apiKeyEnv` names, at start-up. */
  apiKey?: string;
  apiKeyEnv?: string;
  /** Time limit of one HTTP request, headers and body. */
  timeoutMs: number;
}

export type ProviderConfig = LocalProviderConfig | UpstreamProviderConfig;
export type EmbeddingsProviderConfig = ProviderConfig & { model?: string; dimensions?: number };
export type ModerationProviderConfig = ProviderConfig & { model?: string };

/** `providers` normalised: kind resolved, api keys read from the environment, defaults applied. */
export interface ProvidersConfig {
  embeddings: EmbeddingsProviderConfig;
  moderation: ModerationProviderConfig;
  video: ProviderConfig;
  fineTuning: ProviderConfig;
  /** Model calls (graders, batch /v1/responses and /v1/chat/completions); undefined = none configured. */
  responses?: UpstreamProviderConfig;
}

export interface AtriumConfig {
  host: string;
  port: number;
  dataDir: string;
  /** ATRIUM_DATABASE_URL, ATRIUM_BLOB_URL, ATRIUM_DATABASE_POOL_SIZE: the shared engines of a scaled deployment (docs/scale-out.md). */
  engines: EnginesConfig;
  tlsCert?: string;
  tlsKey?: string;
  /** ATRIUM_MTLS_PORT/CERT/KEY: the mutual-TLS listener (X.509 token exchange, certificate-bound API calls). */
  mtls?: { port: number; cert: string; key: string };
  apiKey?: string;
  adminKey?: string;
  file: FileConfig;
  /** Service accounts and identity providers of `file`, checked and compiled (CEL planned, JWKS and PEM files read). */
  identity?: IdentitySpec;
  providers: ProvidersConfig;
  /** The areas' own sections of ATRIUM_CONFIG (see configFromEnv's `sections`), validated, schema defaults applied. */
  sections: Record<string, unknown>;
  logLevel: string;
  /**
   * ATRIUM_MODEL_CACHE_DIR (default `<dataDir>/cache`): data derived from the shipped models (the
   * moderation bank's vectors), keyed by content, so servers may share it.
   */
  modelCacheDir: string;
  /** ATRIUM_SECRET_KEY: encrypts secrets at rest (container domain secrets); else a key file in dataDir. */
  secretKey?: string;
  /** Fetching caller-supplied URLs (token counting's image_url / file_url). */
  fetchTimeoutMs: number;
  fetchAllowPrivate: boolean;
  /** ATRIUM_HEADERS_TIMEOUT_MS, ATRIUM_IDLE_TIMEOUT_MS, ATRIUM_BODY_STALL_TIMEOUT_MS, ATRIUM_MAX_CONNECTIONS_PER_ADDRESS. */
  connections: ConnectionLimits;
  /** The data directory's upkeep; defaults apply when omitted. */
  storage?: StorageUpkeepConfig;
}

export interface StorageUpkeepConfig {
  /** ATRIUM_ORPHAN_SWEEP_INTERVAL_MS: time between orphan-blob sweeps (default 1 hour). */
  orphanSweepIntervalMs: number;
  /** ATRIUM_ORPHAN_GRACE_MS: blobs younger than this are never swept (default 1 hour). */
  orphanGraceMs: number;
  /** ATRIUM_MIN_FREE_DISK_BYTES: /readyz answers 503 when the data directory's file system has less free (default 100 MiB). */
  minFreeDiskBytes: number;
  /** ATRIUM_DISK_RESERVE_BYTES: space kept back so deletes work on a full disk (default 16 MiB; 0: none). */
  diskReserveBytes: number;
}

export const DEFAULT_STORAGE_UPKEEP: StorageUpkeepConfig = {
  orphanSweepIntervalMs: 3600_000,
  orphanGraceMs: 3600_000,
  minFreeDiskBytes: 100 * 1024 * 1024,
  diskReserveBytes: 16 * 1024 * 1024,
};

export class ConfigError extends Error {}

const PREFIX = "ATRIUM_CONFIG: ";
/** Every problem is reported at once (one per line), up to this many. */
const MAX_REPORTED_ERRORS = 20;

function readDocument(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`${PREFIX}cannot read ${path}: ${(e as Error).message}`);
  }
  if (text.trim() === "") return {}; // an empty file declares nothing (JSON.parse would refuse it)
  const json = path.endsWith(".json");
  try {
    // The YAML parser is loaded for a YAML file only (required: this path is synchronous).
    return json ? JSON.parse(text) : (createRequire(import.meta.url)("yaml") as typeof import("yaml")).parse(text);
  } catch (e) {
    throw new ConfigError(`${PREFIX}${path} is not valid ${json ? "JSON" : "YAML"}: ${(e as Error).message}`);
  }
}

function loadFile(path: string | undefined, sections: Record<string, object>): { file: FileConfig & Record<string, unknown>; identity: IdentitySpec } {
  if (!path) return { file: {}, identity: emptyIdentitySpec() };
  const doc = readDocument(path);
  if (doc === null || doc === undefined) return { file: {}, identity: emptyIdentitySpec() }; // a YAML file holding only comments
  if (typeof doc !== "object" || Array.isArray(doc)) throw new ConfigError(`${PREFIX}${path} must hold an object (a mapping)`);
  const errors = validateConfig(doc, sections);
  if (errors.length) {
    const shown = errors.slice(0, MAX_REPORTED_ERRORS);
    if (errors.length > shown.length) shown.push(`... and ${errors.length - shown.length} more`);
    throw new ConfigError(PREFIX + shown.join(`\n${PREFIX}`));
  }
  const cfg = doc as FileConfig & Record<string, unknown>;
  // The one rule a schema cannot express: keys name organizations declared in the same file.
  const orgIds = new Set((cfg.organizations ?? []).map((o) => o.id));
  for (const [i, k] of (cfg.keys ?? []).entries())
    if (!orgIds.has(k.organization))
      throw new ConfigError(`${PREFIX}/keys/${i}/organization '${k.organization}' is not declared in /organizations`);
  const identity = compileIdentity(cfg.organizations ?? [], dirname(path));
  if (identity.errors.length) throw new ConfigError(PREFIX + identity.errors.slice(0, MAX_REPORTED_ERRORS).join(`\n${PREFIX}`));
  return { file: cfg, identity: identity.spec };
}

function providerConfig(path: string, section: FileProviderConfig | undefined, env: NodeJS.ProcessEnv): ProviderConfig {
  const timeoutMs = section?.timeout_ms ?? DEFAULT_PROVIDER_TIMEOUT_MS;
  // No base_url means the local engine; a base_url alone means that upstream.
  const kind = section?.kind ?? (section?.base_url ? "upstream" : "local");
  if (kind === "local") return { kind, timeoutMs };
  return upstreamConfig(path, section as FileProviderConfig & { base_url: string }, env);
}

function upstreamConfig(
  path: string,
  section: { base_url: string; api_key_env?: string; timeout_ms?: number },
  env: NodeJS.ProcessEnv,
): UpstreamProviderConfig {
  const out: UpstreamProviderConfig = {
    kind: "upstream",
    baseUrl: section.base_url.replace(/\/+$/, ""),
    timeoutMs: section.timeout_ms ?? DEFAULT_PROVIDER_TIMEOUT_MS,
  };
  if (section.api_key_env !== undefined) {
    const value = env[section.api_key_env];
    if (!value) throw new ConfigError(`${PREFIX}${path}/api_key_env names ${section.api_key_env}, which is not set in the environment`);
    out.apiKey = value;
    out.apiKeyEnv = section.api_key_env;
  }
  return out;
}

function withModel<T extends ProviderConfig>(base: T, section: { model?: string; dimensions?: number } | undefined) {
  return {
    ...base,
    ...(section?.model !== undefined && { model: section.model }),
    ...(section?.dimensions !== undefined && { dimensions: section.dimensions }),
  };
}

function providersConfig(file: FileProvidersConfig | undefined, env: NodeJS.ProcessEnv): ProvidersConfig {
  const p = file ?? {};
  return {
    embeddings: withModel(providerConfig("/providers/embeddings", p.embeddings, env), p.embeddings),
    moderation: withModel(providerConfig("/providers/moderation", p.moderation, env), p.moderation),
    video: providerConfig("/providers/video", p.video, env),
    fineTuning: providerConfig("/providers/fine_tuning", p.fine_tuning, env),
    responses: p.responses && upstreamConfig("/providers/responses", p.responses, env),
  };
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${name} must be a positive integer, got '${raw}'`);
  return n;
}

function nonNegativeInt(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return dflt;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new ConfigError(`${name} must be a whole number, 0 or more, got '${raw}'`);
  return n;
}

function mtlsConfig(env: NodeJS.ProcessEnv): AtriumConfig["mtls"] {
  const { ATRIUM_MTLS_PORT: port, ATRIUM_MTLS_CERT: cert, ATRIUM_MTLS_KEY: key } = env;
  if (!port && !cert && !key) return undefined;
  if (!port || !cert || !key) throw new ConfigError("ATRIUM_MTLS_PORT, ATRIUM_MTLS_CERT and ATRIUM_MTLS_KEY go together");
  const n = Number(port);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new ConfigError(`ATRIUM_MTLS_PORT must be a port number, got '${port}'`);
  return { port: n, cert, key };
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = (env[name] ?? "").toLowerCase();
  if (raw === "" || raw === "0" || raw === "false" || raw === "no") return false;
  if (raw === "1" || raw === "true" || raw === "yes") return true;
  throw new ConfigError(`${name} must be true or false, got '${env[name]}'`);
}

/**
 * The server's configuration from the environment and the ATRIUM_CONFIG file.
 * `sections` maps a top-level property name to a JSON Schema fragment an area contributes
 * (e.g. `containers: {...}`); it is validated with the rest of the file and handed back in
 * `AtriumConfig.sections`. Any problem is a ConfigError naming the variable or the file's path.
 */
export function configFromEnv(env: NodeJS.ProcessEnv = process.env, sections: Record<string, object> = {}): AtriumConfig {
  const port = Number(env.ATRIUM_PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`ATRIUM_PORT must be a port number, got '${env.ATRIUM_PORT}'`);
  if (!!env.ATRIUM_TLS_CERT !== !!env.ATRIUM_TLS_KEY) throw new ConfigError("ATRIUM_TLS_CERT and ATRIUM_TLS_KEY go together");
  const mtls = mtlsConfig(env);
  const engines = enginesConfig(env);
  const { file, identity } = loadFile(env.ATRIUM_CONFIG, sections);
  return {
    host: env.ATRIUM_HOST ?? "127.0.0.1",
    port,
    dataDir: env.ATRIUM_DATA_DIR ?? "./.atrium",
    engines,
    tlsCert: env.ATRIUM_TLS_CERT,
    tlsKey: env.ATRIUM_TLS_KEY,
    mtls,
    apiKey: env.ATRIUM_API_KEY || undefined,
    adminKey: env.ATRIUM_ADMIN_KEY || undefined,
    file,
    identity,
    providers: providersConfig(file.providers, env),
    sections: Object.fromEntries(Object.keys(sections).filter((name) => file[name] !== undefined).map((name) => [name, file[name]])),
    logLevel: env.ATRIUM_LOG_LEVEL ?? "info",
    secretKey: env.ATRIUM_SECRET_KEY || undefined,
    modelCacheDir: env.ATRIUM_MODEL_CACHE_DIR || join(env.ATRIUM_DATA_DIR ?? "./.atrium", "cache"),
    fetchTimeoutMs: positiveInt(env, "ATRIUM_FETCH_TIMEOUT_MS", 10_000),
    fetchAllowPrivate: flag(env, "ATRIUM_FETCH_ALLOW_PRIVATE"),
    connections: {
      headersTimeoutMs: positiveInt(env, "ATRIUM_HEADERS_TIMEOUT_MS", DEFAULT_CONNECTION_LIMITS.headersTimeoutMs),
      idleTimeoutMs: positiveInt(env, "ATRIUM_IDLE_TIMEOUT_MS", DEFAULT_CONNECTION_LIMITS.idleTimeoutMs),
      bodyStallTimeoutMs: positiveInt(env, "ATRIUM_BODY_STALL_TIMEOUT_MS", DEFAULT_CONNECTION_LIMITS.bodyStallTimeoutMs),
      maxConnectionsPerAddress: positiveInt(env, "ATRIUM_MAX_CONNECTIONS_PER_ADDRESS", DEFAULT_CONNECTION_LIMITS.maxConnectionsPerAddress),
    },
    storage: {
      orphanSweepIntervalMs: positiveInt(env, "ATRIUM_ORPHAN_SWEEP_INTERVAL_MS", DEFAULT_STORAGE_UPKEEP.orphanSweepIntervalMs),
      orphanGraceMs: positiveInt(env, "ATRIUM_ORPHAN_GRACE_MS", DEFAULT_STORAGE_UPKEEP.orphanGraceMs),
      minFreeDiskBytes: nonNegativeInt(env, "ATRIUM_MIN_FREE_DISK_BYTES", DEFAULT_STORAGE_UPKEEP.minFreeDiskBytes),
      diskReserveBytes: nonNegativeInt(env, "ATRIUM_DISK_RESERVE_BYTES", DEFAULT_STORAGE_UPKEEP.diskReserveBytes),
    },
  };
}

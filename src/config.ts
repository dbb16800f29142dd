// Runtime configuration: the DESIGN contract's environment variables, plus an optional
// ATRIUM_CONFIG file (JSON or YAML) declaring organizations, projects and keys.
import { readFileSync } from "node:fs";
import { parse as parseYaml } from "yaml";
import type { Role } from "./auth/principal.js";

export interface KeyConfig {
  /** The secret itself (hashed on load) ... */
  key?: string;
  name?: string;
  kind?: "standard" | "admin";
  organization: string;
  /** Projects this key may use; the first is the default. Omit on admin keys for all projects. */
  projects?: string[];
  role?: Role;
}

export interface FileConfig {
  organizations?: Array<{ id: string; name?: string; projects?: Array<{ id: string; name?: string }> }>;
  keys?: KeyConfig[];
}

export interface AtriumConfig {
  host: string;
  port: number;
  dataDir: string;
  tlsCert?: string;
  tlsKey?: string;
  apiKey?: string;
  adminKey?: string;
  file: FileConfig;
  logLevel: string;
  /** Fetching caller-supplied URLs (token counting's image_url / file_url). */
  fetchTimeoutMs: number;
  fetchAllowPrivate: boolean;
}

export class ConfigError extends Error {}

function loadFile(path: string | undefined): FileConfig {
  if (!path) return {};
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (e) {
    throw new ConfigError(`ATRIUM_CONFIG: cannot read ${path}: ${(e as Error).message}`);
  }
  let doc: unknown;
  try {
    doc = path.endsWith(".json") ? JSON.parse(text) : parseYaml(text);
  } catch (e) {
    throw new ConfigError(`ATRIUM_CONFIG: ${path} is not valid ${path.endsWith(".json") ? "JSON" : "YAML"}: ${(e as Error).message}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== "object" || Array.isArray(doc)) throw new ConfigError(`ATRIUM_CONFIG: ${path} must hold an object`);
  const cfg = doc as FileConfig;
  const orgIds = new Set<string>();
  for (const [i, o] of (cfg.organizations ?? []).entries()) {
    if (!o || typeof o.id !== "string" || !o.id) throw new ConfigError(`ATRIUM_CONFIG: organizations[${i}].id is required`);
    orgIds.add(o.id);
  }
  for (const [i, k] of (cfg.keys ?? []).entries()) {
    if (!k || typeof k.key !== "string" || k.key.length < 8) throw new ConfigError(`ATRIUM_CONFIG: keys[${i}].key must be a string of at least 8 characters`);
    if (!orgIds.has(k.organization)) throw new ConfigError(`ATRIUM_CONFIG: keys[${i}].organization '${k.organization}' is not declared`);
    if (k.kind && k.kind !== "standard" && k.kind !== "admin") throw new ConfigError(`ATRIUM_CONFIG: keys[${i}].kind must be standard or admin`);
    if (k.role && !["owner", "member", "reader"].includes(k.role)) throw new ConfigError(`ATRIUM_CONFIG: keys[${i}].role must be owner, member or reader`);
    if (k.kind !== "admin" && !k.projects?.length) throw new ConfigError(`ATRIUM_CONFIG: keys[${i}].projects is required for a standard key`);
  }
  return cfg;
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw new ConfigError(`${name} must be a positive integer, got '${raw}'`);
  return n;
}

function flag(env: NodeJS.ProcessEnv, name: string): boolean {
  const raw = (env[name] ?? "").toLowerCase();
  if (raw === "" || raw === "0" || raw === "false" || raw === "no") return false;
  if (raw === "1" || raw === "true" || raw === "yes") return true;
  throw new ConfigError(`${name} must be true or false, got '${env[name]}'`);
}

export function configFromEnv(env: NodeJS.ProcessEnv = process.env): AtriumConfig {
  const port = Number(env.ATRIUM_PORT ?? 8080);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`ATRIUM_PORT must be a port number, got '${env.ATRIUM_PORT}'`);
  if (!!env.ATRIUM_TLS_CERT !== !!env.ATRIUM_TLS_KEY) throw new ConfigError("ATRIUM_TLS_CERT and ATRIUM_TLS_KEY go together");
  return {
    host: env.ATRIUM_HOST ?? "127.0.0.1",
    port,
    dataDir: env.ATRIUM_DATA_DIR ?? "./.atrium",
    tlsCert: env.ATRIUM_TLS_CERT,
    tlsKey: env.ATRIUM_TLS_KEY,
    apiKey: env.ATRIUM_API_KEY || undefined,
    adminKey: env.ATRIUM_ADMIN_KEY || undefined,
    file: loadFile(env.ATRIUM_CONFIG),
    logLevel: env.ATRIUM_LOG_LEVEL ?? "info",
    fetchTimeoutMs: positiveInt(env, "ATRIUM_FETCH_TIMEOUT_MS", 10_000),
    fetchAllowPrivate: flag(env, "ATRIUM_FETCH_ALLOW_PRIVATE"),
  };
}

// The limits' settings: per organization and per project from ATRIUM_CONFIG (validated by
// config-schema.ts), and the environment switches. The file keys, exactly:
//
//   organizations:
//     - id: org-acme
//       rate_limits: { requests_per_minute: 500, requests_per_day: 10000,
//                      tokens_per_minute: 200000, tokens_per_day: 5000000 }
//       spend_limit_tokens_per_month: 50000000   # hard cap: 429 insufficient_quota
//       projects:
//         - { id: proj_web, rate_limits: { requests_per_minute: 60 }, spend_limit_tokens_per_month: 1000000 }
//
// Organizations also take the per-minute limits of spec 8 that are not per call: `uploads_per_minute`
// (per credential, default 1,000), `vector_store_file_requests_per_minute` (per vector store, its
// /files and /file_batches endpoints together, default 300) and
// `vector_store_attached_files_per_minute` (per organization, default 2,000).
//
// An organization without `requests_per_minute` / `tokens_per_minute` gets the documented
// defaults (the documented defaults: 10,000 requests and 10,000,000 tokens per minute); per-day limits and spend
// caps apply only where configured. A project's limits are its own caps inside its organization's:
// a request must fit both.
import { ConfigError } from "../config.js";
import { redisKeyPrefix, redisUrl } from "../config-engines.js";

export interface RateLimitRules {
  requests_per_minute?: number;
  requests_per_day?: number;
  tokens_per_minute?: number;
  tokens_per_day?: number;
  /** Per credential (organizations only; default UPLOADS_PER_MINUTE_PER_USER). */
  uploads_per_minute?: number;
  /** Per vector store: requests to its /files and /file_batches endpoints (organizations only; default 300). */
  vector_store_file_requests_per_minute?: number;
  /** Per organization: files attached to vector stores, a batch of N counting N (organizations only; default 2,000). */
  vector_store_attached_files_per_minute?: number;
}

/** The per-minute limits areas enforce themselves (through RateLimits.enforceAll), and their defaults (spec 8). */
export const AREA_RATES_PER_MINUTE = {
  vector_store_file_requests_per_minute: 300,
  vector_store_attached_files_per_minute: 2000,
} as const satisfies Partial<Record<keyof RateLimitRules, number>>;

export type AreaRateSetting = keyof typeof AREA_RATES_PER_MINUTE;

export interface LimitedProject {
  id: string;
  rate_limits?: RateLimitRules;
  spend_limit_tokens_per_month?: number;
}

export interface LimitedOrganization extends LimitedProject {
  projects?: LimitedProject[];
}

/** The part of ATRIUM_CONFIG the limits read (config.ts's FileConfig carries these keys through). */
export interface LimitsFileConfig {
  organizations?: LimitedOrganization[];
}

export const DEFAULT_REQUESTS_PER_MINUTE = 10_000;
export const DEFAULT_TOKENS_PER_MINUTE = 10_000_000;
/** Spec 8: file storage per project. */
export const DEFAULT_PROJECT_STORAGE_BYTES = 2.5e12;
/** Spec 8: file upload rate per authenticated user (credential). */
export const UPLOADS_PER_MINUTE_PER_USER = 1000;

export interface LimitsEnv {
  /** ATRIUM_RATE_LIMITS: "on" (default) or "off" (no limits, no x-ratelimit-* headers: for benchmarks). */
  enabled: boolean;
  /** ATRIUM_REDIS_URL: share limit state between instances (redis://[:password@]host:port[/db]). */
  redisUrl?: string;
  /** ATRIUM_REDIS_KEY_PREFIX (default "atrium:"): instances with the same prefix share one allowance; deployments sharing a Redis keep apart with different ones. */
  redisKeyPrefix: string;
  /** ATRIUM_STORAGE_LIMIT_BYTES: file storage per project (default 2.5 TB). */
  projectStorageBytes: number;
}

export function limitsEnv(env: Record<string, string | undefined>): LimitsEnv {
  const switchValue = (env.ATRIUM_RATE_LIMITS ?? "on").toLowerCase();
  if (!["on", "off", "true", "false", "1", "0"].includes(switchValue)) throw new ConfigError(`ATRIUM_RATE_LIMITS must be on or off, got '${env.ATRIUM_RATE_LIMITS}'`);
  const storage = env.ATRIUM_STORAGE_LIMIT_BYTES;
  const projectStorageBytes = storage === undefined || storage === "" ? DEFAULT_PROJECT_STORAGE_BYTES : Number(storage);
  if (!Number.isSafeInteger(projectStorageBytes) || projectStorageBytes <= 0)
    throw new ConfigError(`ATRIUM_STORAGE_LIMIT_BYTES must be a positive integer, got '${storage}'`);
  return {
    enabled: switchValue === "on" || switchValue === "true" || switchValue === "1",
    redisUrl: redisUrl(env.ATRIUM_REDIS_URL),
    redisKeyPrefix: redisKeyPrefix(env.ATRIUM_REDIS_KEY_PREFIX),
    projectStorageBytes,
  };
}

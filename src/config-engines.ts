// The shared engines of a scaled deployment (docs/scale-out.md), read from the environment:
// ATRIUM_DATABASE_URL (records, jobs and the search index in PostgreSQL), ATRIUM_BLOB_URL (blobs
// in an S3-compatible store), ATRIUM_REDIS_URL (+ ATRIUM_REDIS_KEY_PREFIX: rate limits shared by
// the instances). None set: the embedded default, SQLite and the local disk. Each is independent.
// A malformed value is a ConfigError naming the variable; a password in a URL never appears in it.
import { ConfigError } from "./config.js";
import { redactedUrl } from "./common/redacted-url.js";

/** What the storage layer needs to choose and open its engines (src/storage/index.ts). */
export interface EnginesConfig {
  /** postgres://…: records, jobs and the search index in PostgreSQL; undefined = SQLite in the data dir. */
  databaseUrl?: string;
  /** s3://bucket[/prefix]: blobs in an S3-compatible store; undefined = the data dir's blobs/. */
  blobUrl?: string;
  /** ATRIUM_DATABASE_POOL_SIZE: connections each instance may open (default 10). */
  databasePoolSize: number;
}

export const DEFAULT_DATABASE_POOL_SIZE = 10;
export const DEFAULT_REDIS_KEY_PREFIX = "atrium:";

function parseUrl(name: string, raw: string, shape: string): URL {
  try {
    return new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be a URL of the form ${shape}, got '${redactedUrl(raw)}'`);
  }
}

export function databaseUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const shape = "postgres://user[:password]@host[:port]/database";
  const u = parseUrl("ATRIUM_DATABASE_URL", raw, shape);
  if (u.protocol !== "postgres:" && u.protocol !== "postgresql:")
    throw new ConfigError(`ATRIUM_DATABASE_URL must be a postgres:// URL (${shape}), got scheme '${u.protocol.replace(/:$/, "")}'`);
  if (!u.hostname && !u.searchParams.get("host")) throw new ConfigError(`ATRIUM_DATABASE_URL names no host (${shape}), got '${redactedUrl(raw)}'`);
  if (u.pathname.length <= 1) throw new ConfigError(`ATRIUM_DATABASE_URL names no database (${shape}), got '${redactedUrl(raw)}'`);
  return raw;
}

// S3's bucket naming rules: 3-63 characters, lowercase letters, digits, '.' and '-', starting and
// ending with a letter or digit.
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

export function blobUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const shape = "s3://bucket[/prefix]";
  const m = /^([a-z0-9+.-]+):\/\/([^/?#]*)(\/[^?#]*)?$/i.exec(raw);
  if (!m) throw new ConfigError(`ATRIUM_BLOB_URL must be a URL of the form ${shape}, got '${raw}'`);
  if (m[1].toLowerCase() !== "s3") throw new ConfigError(`ATRIUM_BLOB_URL must be an s3:// URL (${shape}), got scheme '${m[1]}'`);
  if (!BUCKET.test(m[2]))
    throw new ConfigError(`ATRIUM_BLOB_URL: '${m[2]}' is not a valid bucket name (3-63 lowercase letters, digits, '.' and '-', starting and ending with a letter or digit)`);
  return raw;
}

export function redisUrl(raw: string | undefined): string | undefined {
  if (!raw) return undefined;
  const shape = "redis://[:password@]host:port[/db]";
  const u = parseUrl("ATRIUM_REDIS_URL", raw, shape);
  if (u.protocol !== "redis:" && u.protocol !== "rediss:")
    throw new ConfigError(`ATRIUM_REDIS_URL must be a redis:// or rediss:// URL (${shape}), got scheme '${u.protocol.replace(/:$/, "")}'`);
  if (!u.hostname) throw new ConfigError(`ATRIUM_REDIS_URL names no host (${shape}), got '${redactedUrl(raw)}'`);
  return raw;
}

export function redisKeyPrefix(raw: string | undefined): string {
  if (raw === undefined || raw === "") return DEFAULT_REDIS_KEY_PREFIX;
  if (raw.length > 64 || !/^[A-Za-z0-9_.:-]+$/.test(raw))
    throw new ConfigError(`ATRIUM_REDIS_KEY_PREFIX must be 1-64 letters, digits, '_', '.', ':' or '-', got '${raw}'`);
  return raw;
}

function poolSize(raw: string | undefined): number {
  if (raw === undefined || raw === "") return DEFAULT_DATABASE_POOL_SIZE;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > 1000) throw new ConfigError(`ATRIUM_DATABASE_POOL_SIZE must be an integer from 1 to 1000, got '${raw}'`);
  return n;
}

/** The engines chosen by the environment, validated; `secretKey` is ATRIUM_SECRET_KEY. */
export function enginesConfig(env: Record<string, string | undefined>): EnginesConfig {
  const database = databaseUrl(env.ATRIUM_DATABASE_URL);
  // Every instance must seal secrets and sign workload tokens with one key; a key file made in
  // each instance's own data dir would differ per instance.
  if (database && !env.ATRIUM_SECRET_KEY)
    throw new ConfigError(
      "ATRIUM_SECRET_KEY must be set when ATRIUM_DATABASE_URL is: the instances sharing the database must seal secrets and sign tokens with the same key, which a key file in each data dir cannot give",
    );
  return { databaseUrl: database, blobUrl: blobUrl(env.ATRIUM_BLOB_URL), databasePoolSize: poolSize(env.ATRIUM_DATABASE_POOL_SIZE) };
}

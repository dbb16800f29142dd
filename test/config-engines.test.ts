// The scaled engines' variables: ATRIUM_DATABASE_URL, ATRIUM_BLOB_URL, ATRIUM_REDIS_URL,
// ATRIUM_REDIS_KEY_PREFIX, ATRIUM_DATABASE_POOL_SIZE, and ATRIUM_SECRET_KEY required beside a
// database. Each bad value is a ConfigError naming the variable; no password reaches a message.
import { describe, expect, it } from "vitest";
import { ConfigError, configFromEnv } from "../src/config.js";
import { limitsEnv } from "../src/limits/config.js";

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return (e as Error).message;
  }
  throw new Error("expected a ConfigError");
}

const DB = "postgres://atrium:s3cret-pw@db.internal:5432/atrium";

describe("engines from the environment", () => {
  it("no variable: the embedded default (SQLite and the data dir's blobs)", () => {
    const cfg = configFromEnv({});
    expect(cfg.engines).toEqual({ databaseUrl: undefined, blobUrl: undefined, databasePoolSize: 10 });
  });

  it("each engine is chosen on its own", () => {
    expect(configFromEnv({ ATRIUM_DATABASE_URL: DB, ATRIUM_SECRET_KEY: "k" }).engines).toMatchObject({ databaseUrl: DB, blobUrl: undefined });
    expect(configFromEnv({ ATRIUM_BLOB_URL: "s3://atrium-blobs/prod/a" }).engines).toMatchObject({ databaseUrl: undefined, blobUrl: "s3://atrium-blobs/prod/a" });
    expect(configFromEnv({ ATRIUM_DATABASE_URL: "postgresql://h/db", ATRIUM_SECRET_KEY: "k", ATRIUM_BLOB_URL: "s3://b12", ATRIUM_DATABASE_POOL_SIZE: "4" }).engines).toEqual({
      databaseUrl: "postgresql://h/db",
      blobUrl: "s3://b12",
      databasePoolSize: 4,
    });
  });

  it("ATRIUM_SECRET_KEY is required once ATRIUM_DATABASE_URL is set", () => {
    expect(errorOf(() => configFromEnv({ ATRIUM_DATABASE_URL: DB }))).toMatch(/^ATRIUM_SECRET_KEY must be set when ATRIUM_DATABASE_URL is/);
    // Blobs alone keep the data dir's key file valid: records (and sealed secrets) stay in one SQLite file.
    expect(() => configFromEnv({ ATRIUM_BLOB_URL: "s3://bucket" })).not.toThrow();
  });

  it("ATRIUM_DATABASE_URL: a postgres URL naming a host and a database; the password never shown", () => {
    const env = (v: string) => ({ ATRIUM_DATABASE_URL: v, ATRIUM_SECRET_KEY: "k" });
    expect(errorOf(() => configFromEnv(env("mysql://u:pw@h/db")))).toBe(
      "ATRIUM_DATABASE_URL must be a postgres:// URL (postgres://user[:password]@host[:port]/database), got scheme 'mysql'",
    );
    expect(errorOf(() => configFromEnv(env("postgres://u:s3cret-pw@h")))).toBe(
      "ATRIUM_DATABASE_URL names no database (postgres://user[:password]@host[:port]/database), got 'postgres://u:****@h'",
    );
    const garbled = errorOf(() => configFromEnv(env("not a url:s3cret-pw@")));
    expect(garbled).toMatch(/^ATRIUM_DATABASE_URL must be a URL of the form postgres:/);
    expect(garbled).not.toContain("s3cret-pw");
  });

  it("ATRIUM_BLOB_URL: s3://bucket[/prefix] with a valid bucket name", () => {
    expect(errorOf(() => configFromEnv({ ATRIUM_BLOB_URL: "https://s3.example.com/bucket" }))).toBe(
      "ATRIUM_BLOB_URL must be an s3:// URL (s3://bucket[/prefix]), got scheme 'https'",
    );
    expect(errorOf(() => configFromEnv({ ATRIUM_BLOB_URL: "s3://Bad_Bucket" }))).toMatch(/^ATRIUM_BLOB_URL: 'Bad_Bucket' is not a valid bucket name/);
    expect(errorOf(() => configFromEnv({ ATRIUM_BLOB_URL: "bucket" }))).toBe("ATRIUM_BLOB_URL must be a URL of the form s3://bucket[/prefix], got 'bucket'");
  });

  it("ATRIUM_DATABASE_POOL_SIZE: 1 to 1000", () => {
    expect(errorOf(() => configFromEnv({ ATRIUM_DATABASE_POOL_SIZE: "0" }))).toBe("ATRIUM_DATABASE_POOL_SIZE must be an integer from 1 to 1000, got '0'");
  });

  it("ATRIUM_REDIS_URL and ATRIUM_REDIS_KEY_PREFIX", () => {
    expect(limitsEnv({ ATRIUM_REDIS_URL: "redis://127.0.0.1:6379/2" })).toMatchObject({ redisUrl: "redis://127.0.0.1:6379/2", redisKeyPrefix: "atrium:" });
    expect(limitsEnv({ ATRIUM_REDIS_KEY_PREFIX: "team-a:" }).redisKeyPrefix).toBe("team-a:");
    expect(errorOf(() => limitsEnv({ ATRIUM_REDIS_URL: "http://127.0.0.1:6379" }))).toBe(
      "ATRIUM_REDIS_URL must be a redis:// or rediss:// URL (redis://[:password@]host:port[/db]), got scheme 'http'",
    );
    expect(errorOf(() => limitsEnv({ ATRIUM_REDIS_KEY_PREFIX: "a b" }))).toBe("ATRIUM_REDIS_KEY_PREFIX must be 1-64 letters, digits, '_', '.', ':' or '-', got 'a b'");
  });
});

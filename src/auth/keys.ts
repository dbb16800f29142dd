// API keys, organizations and projects. A key is stored only as its SHA-256 hash (the record id),
// so the database never holds a usable secret. Look-ups are cached for a couple of seconds:
// the spec allows revocation to take "a few seconds", and the cache keeps the hash + SQLite read
// off the hot path of every request.
import * as crypto from "node:crypto";
import { createHash, randomBytes } from "node:crypto";
import type { RecordStore } from "../storage/types.js";
import { TtlCache } from "../common/cache.js";
import type { Role } from "./principal.js";

export const SYSTEM = { projectId: "" };

export interface Organization {
  id: string;
  name: string;
}

export interface Project {
  id: string;
  organizationId: string;
  name: string;
}

export interface Membership {
  organizationId: string;
  /** null: every project of the organization (admin keys). */
  projectId: string | null;
  /** For an organization-wide membership: the project used when the caller names none. */
  defaultProjectId?: string;
  role: Role;
}

export interface ApiKeyRecord {
  keyId: string;
  name: string;
  kind: "standard" | "admin";
  /** The first one is the default when the caller sends no organization/project header. */
  memberships: Membership[];
  /** A short, non-secret prefix for display ("sk-atr...abcd"). */
  redacted: string;
  createdAt: number;
  revokedAt: number | null;
}

// One-shot crypto.hash (Node >= 20.12) is ~3x cheaper than a Hash object; this runs per request.
const oneShotHash = (crypto as { hash?: (alg: string, data: string, enc: "hex") => string }).hash;

export function hashKey(secret: string): string {
  return oneShotHash ? oneShotHash("sha256", secret, "hex") : createHash("sha256").update(secret).digest("hex");
}

export function newSecret(kind: "standard" | "admin"): string {
  return (kind === "admin" ? "sk-admin-" : "sk-atrium-") + randomBytes(24).toString("base64url");
}

const CACHE_MS = 2000;

export class KeyStore {
  private readonly cache = new TtlCache<ApiKeyRecord | undefined>({ max: 10_000, ttlMs: CACHE_MS });
  private readonly projectCache = new TtlCache<Project | undefined>({ max: 10_000, ttlMs: CACHE_MS });
  constructor(private readonly records: RecordStore) {}

  private keys() {
    return this.records.collection<ApiKeyRecord>("api_key");
  }

  /**
   * The cached answer of lookup(secret) while it is fresh, without touching storage: `{ rec }`
   * (rec undefined: not a live key), or undefined when lookup() has to read the store.
   */
  cached(secret: string): { value: ApiKeyRecord | undefined } | undefined {
    return this.cache.lookup(hashKey(secret));
  }

  async lookup(secret: string): Promise<ApiKeyRecord | undefined> {
    const hash = hashKey(secret);
    const hit = this.cache.lookup(hash);
    if (hit) return hit.value;
    const rec = (await this.keys().get(SYSTEM, hash))?.data;
    const live = rec && rec.revokedAt === null ? rec : undefined;
    this.cache.set(hash, live);
    return live;
  }

  async count(): Promise<number> {
    return this.keys().count(SYSTEM);
  }

  /** Stores a key given its secret (idempotent: an existing key keeps its id and creation time). */
  async put(secret: string, init: Omit<ApiKeyRecord, "keyId" | "redacted" | "createdAt" | "revokedAt">): Promise<ApiKeyRecord> {
    const hash = hashKey(secret);
    const existing = await this.keys().get(SYSTEM, hash);
    const rec: ApiKeyRecord = {
      keyId: existing?.data.keyId ?? "key_" + randomBytes(8).toString("hex"),
      redacted: secret.slice(0, 6) + "..." + secret.slice(-4),
      createdAt: existing?.data.createdAt ?? Math.floor(Date.now() / 1000),
      revokedAt: null,
      ...init,
    };
    if (existing) await this.keys().update(SYSTEM, hash, rec);
    else await this.keys().insert(SYSTEM, { id: hash, createdAt: rec.createdAt, data: rec });
    this.cache.delete(hash);
    return rec;
  }

  async revoke(secret: string): Promise<boolean> {
    const hash = hashKey(secret);
    const existing = await this.keys().get(SYSTEM, hash);
    if (!existing) return false;
    await this.keys().update(SYSTEM, hash, { ...existing.data, revokedAt: Math.floor(Date.now() / 1000) });
    this.cache.delete(hash);
    return true;
  }

  async putOrganization(org: Organization) {
    const c = this.records.collection<Organization>("organization");
    if (await c.get(SYSTEM, org.id)) await c.update(SYSTEM, org.id, org);
    else await c.insert(SYSTEM, { id: org.id, createdAt: Math.floor(Date.now() / 1000), data: org });
  }

  async putProject(p: Project) {
    const c = this.records.collection<Project>("project");
    if (await c.get(SYSTEM, p.id)) await c.update(SYSTEM, p.id, p);
    else await c.insert(SYSTEM, { id: p.id, parentId: p.organizationId, createdAt: Math.floor(Date.now() / 1000), data: p });
  }

  /** The cached answer of project(id) while it is fresh (`{ value }`), else undefined. */
  cachedProject(id: string): { value: Project | undefined } | undefined {
    return this.projectCache.lookup(id);
  }

  async project(id: string): Promise<Project | undefined> {
    const hit = this.projectCache.lookup(id);
    if (hit) return hit.value;
    const p = (await this.records.collection<Project>("project").get(SYSTEM, id))?.data;
    this.projectCache.set(id, p);
    return p;
  }

  async organization(id: string): Promise<Organization | undefined> {
    return (await this.records.collection<Organization>("organization").get(SYSTEM, id))?.data;
  }
}

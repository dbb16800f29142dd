// API keys, organizations and projects. A key is stored only as its SHA-256 hash (the record id),
// so the database never holds a usable secret. Look-ups are cached for CACHE_MS: the spec allows
// revocation to take "a few seconds", and the cache keeps the hash + store read off the hot path
// of every request. Instances sharing a store each keep their own cache: a change made on one is
// signalled to the others (AUTH_SIGNAL), which drop the entry at once; without the signal (a
// listener reconnecting) the entry still lives at most CACHE_MS (docs/scale-out.md).
//
// Revocation and archiving are final: a later put of the same key or project (a start or a reload
// with an older file, on any instance) keeps them.
import * as crypto from "node:crypto";
import { createHash, randomBytes } from "node:crypto";
import { DuplicateRecord, type Collection, type RecordStore } from "../storage/types.js";
import type { Signals } from "../storage/signals.js";
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
  /** Unix seconds; set once, never cleared. Its keys and tokens are refused. Absent on rows written before archiving existed. */
  archivedAt?: number | null;
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
const HASH_MEMO_MAX = 10_000;
/** The signal topic of a changed key ("key:<hash>") or project ("project:<id>"). */
export const AUTH_SIGNAL = "auth.changed";
/** The record kind of first-start markers (one record per thing done once per database). */
const FIRST_START_KIND = "first_start";

/**
 * Writes `build(current)` under `id`: an update conditional on the version read, or an insert
 * when absent; a lost race (another writer inserted or updated first) reads again and retries.
 */
async function upsert<T>(c: Collection<T>, id: string, build: (cur: T | undefined) => T, createdAt: (rec: T) => number, parentId?: string): Promise<T> {
  for (;;) {
    const rec = await c.mutate(SYSTEM, id, (cur) => {
      const data = build(cur?.data);
      return cur ? { write: "update", data, result: data } : { write: "none", result: undefined };
    });
    if (rec !== undefined) return rec;
    const data = build(undefined);
    try {
      await c.insert(SYSTEM, { id, createdAt: createdAt(data), data, ...(parentId !== undefined && { parentId }) });
      return data;
    } catch (err) {
      if (!(err instanceof DuplicateRecord)) throw err;
    }
  }
}

export class KeyStore {
  private readonly cache = new TtlCache<ApiKeyRecord | undefined>({ max: 10_000, ttlMs: CACHE_MS });
  private readonly projectCache = new TtlCache<Project | undefined>({ max: 10_000, ttlMs: CACHE_MS });
  /** Secret → hash of keys found live (see hashOf). */
  private readonly hashes = new Map<string, string>();
  constructor(
    private readonly records: RecordStore,
    private readonly signals?: Signals,
  ) {
    signals?.on(AUTH_SIGNAL, (m) => {
      if (m.startsWith("key:")) this.cache.delete(m.slice(4));
      else if (m.startsWith("project:")) this.projectCache.delete(m.slice(8));
    });
  }

  private keys() {
    return this.records.collection<ApiKeyRecord>("api_key");
  }

  /**
   * The cached answer of lookup(secret) while it is fresh, without touching storage: `{ rec }`
   * (rec undefined: not a live key), or undefined when lookup() has to read the store.
   */
  cached(secret: string): { value: ApiKeyRecord | undefined } | undefined {
    return this.cache.lookup(this.hashOf(secret));
  }

  async lookup(secret: string): Promise<ApiKeyRecord | undefined> {
    const hash = this.hashOf(secret);
    const hit = this.cache.lookup(hash);
    if (hit) return hit.value;
    const rec = (await this.keys().get(SYSTEM, hash))?.data;
    const live = rec && rec.revokedAt === null ? rec : undefined;
    this.cache.set(hash, live);
    if (live) this.rememberHash(secret, hash);
    return live;
  }

  /**
   * hashKey(secret), remembered for secrets of live keys: the SHA-256 was ~4 % of a small call's
   * CPU (bench/profile.ts). Only secrets that were a live key are kept, so unknown tokens cannot
   * fill it; revocation still goes through the record cache, since a hash never changes.
   */
  private hashOf(secret: string): string {
    return this.hashes.get(secret) ?? hashKey(secret);
  }

  private rememberHash(secret: string, hash: string) {
    if (this.hashes.size >= HASH_MEMO_MAX) this.hashes.clear();
    this.hashes.set(secret, hash);
  }

  async count(): Promise<number> {
    return this.keys().count(SYSTEM);
  }

  /**
   * Stores a key given its secret (idempotent: an existing key keeps its id and creation time).
   * Safe when several instances put the same key at once (start-up): it is a compare-and-set on
   * the key's record, and an insert that loses the race becomes an update of the winner's.
   * `revoked` revokes it; a revoked key stays revoked whatever a later put says.
   */
  async put(secret: string, init: Omit<ApiKeyRecord, "keyId" | "redacted" | "createdAt" | "revokedAt">, opts: { revoked?: boolean } = {}): Promise<ApiKeyRecord> {
    const hash = hashKey(secret);
    const now = Math.floor(Date.now() / 1000);
    const build = (existing: ApiKeyRecord | undefined): ApiKeyRecord => ({
      keyId: existing?.keyId ?? "key_" + randomBytes(8).toString("hex"),
      redacted: secret.slice(0, 6) + "..." + secret.slice(-4),
      createdAt: existing?.createdAt ?? now,
      ...init,
      revokedAt: existing?.revokedAt ?? (opts.revoked ? now : null),
    });
    const rec = await upsert(this.keys(), hash, build, (rec) => rec.createdAt);
    this.changed(`key:${hash}`);
    return rec;
  }

  /**
   * Stores `secret` as the generated admin key of a first start, unless one was generated before
   * (by this or another instance starting at the same time): false then, and nothing is written.
   * The marker record and the key commit together, so exactly one start generates a key.
   */
  async putFirstAdminKey(secret: string, init: Omit<ApiKeyRecord, "keyId" | "redacted" | "createdAt" | "revokedAt">): Promise<boolean> {
    const createdAt = Math.floor(Date.now() / 1000);
    const rec: ApiKeyRecord = { keyId: "key_" + randomBytes(8).toString("hex"), redacted: secret.slice(0, 6) + "..." + secret.slice(-4), createdAt, revokedAt: null, ...init };
    try {
      await this.records.atomically([
        { op: "insert", kind: FIRST_START_KIND, scope: SYSTEM, record: { id: "generated_admin_key", createdAt, data: { keyId: rec.keyId } } },
        { op: "insert", kind: "api_key", scope: SYSTEM, record: { id: hashKey(secret), createdAt, data: rec } },
      ]);
      return true;
    } catch (err) {
      if (err instanceof DuplicateRecord && err.kind === FIRST_START_KIND) return false;
      throw err;
    }
  }

  async revoke(secret: string): Promise<boolean> {
    const hash = hashKey(secret);
    const now = Math.floor(Date.now() / 1000);
    const done = await this.keys().mutate(SYSTEM, hash, (cur) =>
      cur ? { write: "update", data: { ...cur.data, revokedAt: cur.data.revokedAt ?? now }, result: true } : { write: "none", result: false },
    );
    this.changed(`key:${hash}`);
    return done;
  }

  async putOrganization(org: Organization): Promise<void> {
    await upsert(this.records.collection<Organization>("organization"), org.id, () => org, () => Math.floor(Date.now() / 1000));
  }

  /** Stores a project; `archived` archives it, and an archived project stays archived. */
  async putProject(p: Omit<Project, "archivedAt">, opts: { archived?: boolean } = {}): Promise<void> {
    const now = Math.floor(Date.now() / 1000);
    const build = (existing: Project | undefined): Project => ({ ...p, archivedAt: existing?.archivedAt ?? (opts.archived ? now : null) });
    await upsert(this.records.collection<Project>("project"), p.id, build, () => now, p.organizationId);
    this.changed(`project:${p.id}`);
  }

  /** Drops the cached entry here, and tells the other instances to drop theirs. */
  private changed(what: string) {
    if (what.startsWith("key:")) this.cache.delete(what.slice(4));
    else this.projectCache.delete(what.slice(8));
    this.signals?.publish(AUTH_SIGNAL, what);
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

// The Redis limit store against a real redis-server (started here on a free port): it answers any
// sequence exactly as the memory store does, two server instances sharing one Redis enforce one
// limit between them (the per-call limits and the vector stores' own), and an unreachable Redis admits requests (fail open) rather than failing
// them. Skipped, with the install hint, only where redis-server is absent.
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryLimitStore } from "../../src/limits/memory.js";
import { RedisLimitStore } from "../../src/limits/redis.js";
import { RateLimits } from "../../src/limits/rate-limits.js";
import type { LimitEntry } from "../../src/limits/store.js";
import { API_KEY } from "../shared/server.js";
import { api } from "../shared/rest.js";
import { REDIS_INSTALL_HINT, hasRedis, startConfiguredServer, startRedis, type RedisProcess } from "../shared/operability.js";

const available = hasRedis();
if (!available) console.warn(`test/limits/redis.test.ts skipped: ${REDIS_INSTALL_HINT}`);

describe.skipIf(!available)("Redis limit store", () => {
  let redis: RedisProcess;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => redis?.stop());

  it("answers a random sequence exactly as the memory store does, refunds included", async () => {
    const store = await RedisLimitStore.open(redis.url, { prefix: `agree:${Date.now()}:` });
    const memory = new MemoryLimitStore();
    // Limits whose emission intervals are not whole milliseconds (60000/7, 1000/3, 86400000/10000).
    const entries: LimitEntry[] = [
      { kind: "rate", key: "a", limit: 7, windowMs: 60_000 },
      { kind: "rate", key: "b", limit: 3, windowMs: 1000 },
      { kind: "rate", key: "c", limit: 10_000, windowMs: 86_400_000 },
      { kind: "rate", key: "d", limit: 200_000, windowMs: 60_000 },
      { kind: "quota", key: "q", limit: 5000, expiresAt: 0 },
    ];
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
    let now = Date.now();
    (entries[4] as { expiresAt: number }).expiresAt = now + 3_600_000;
    let refused = 0;
    for (let i = 0; i < 1500; i++) {
      now += Math.floor(rand() * 400);
      const pick = entries.filter(() => rand() < 0.6);
      if (!pick.length) continue;
      const costs = pick.map((e) => (e.kind === "rate" && e.limit > 1000 ? Math.floor(rand() * 3000) : Math.floor(rand() * 2) + (e.kind === "quota" ? Math.floor(rand() * 10) : 0)));
      // One step in ten gives units back (leases.ts): a rate's TAT moves back, never before now; a quota ignores it.
      if (rand() < 0.1) for (let k = 0; k < costs.length; k++) costs[k] = -costs[k]! * 3;
      const m = memory.take(pick, costs, now);
      const r = await store.take(pick, costs, now);
      expect(r, `step ${i}`).toEqual(m);
      if (!m.ok) refused++;
    }
    // The sequence exercised both outcomes.
    expect(refused).toBeGreaterThan(50);
    expect(refused).toBeLessThan(1400);
    await store.close();
  });

  it("without an explicit time, uses Redis's clock", async () => {
    const store = await RedisLimitStore.open(redis.url, { prefix: `clock:${Date.now()}:` });
    const r = await store.take([{ kind: "rate", key: "x", limit: 1, windowMs: 1000 }], [1]);
    expect(r.ok).toBe(true);
    expect(Math.abs(r.now - Date.now())).toBeLessThan(2000);
    expect(r.values[0]).toBe(r.now + 1000);
    expect((await store.take([{ kind: "rate", key: "x", limit: 1, windowMs: 1000 }], [1])).ok).toBe(false);
    await store.close();
  });

  it("two server instances sharing one Redis enforce one limit", async () => {
    const config = { organizations: [{ id: "org-default", rate_limits: { requests_per_minute: 10 }, projects: [{ id: "proj_default" }] }] };
    const env = { ATRIUM_REDIS_URL: redis.url };
    const [a, b] = await Promise.all([startConfiguredServer(config, env), startConfiguredServer(config, env)]);
    try {
      const seen: number[] = [];
      for (let i = 0; i < 10; i++) {
        const res = await api((i % 2 ? a : b).baseURL, "/models", { key: API_KEY });
        await res.arrayBuffer();
        seen.push(res.status);
        expect(res.headers.get("x-ratelimit-remaining-requests")).toBe(String(9 - i));
      }
      expect(seen).toEqual(Array(10).fill(200));
      for (const s of [a, b]) {
        const res = await api(s.baseURL, "/models", { key: API_KEY });
        expect(res.status).toBe(429);
        expect((await res.json()).error.code).toBe("rate_limit_exceeded");
        expect(Number(res.headers.get("retry-after-ms"))).toBeGreaterThan(4000);
      }
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it("ATRIUM_REDIS_KEY_PREFIX: instances with the same prefix share one allowance, another prefix has its own", async () => {
    const config = { organizations: [{ id: "org-default", rate_limits: { requests_per_minute: 2 }, projects: [{ id: "proj_default" }] }] };
    const env = (prefix: string) => ({ ATRIUM_REDIS_URL: redis.url, ATRIUM_REDIS_KEY_PREFIX: prefix });
    const [a, b, other] = await Promise.all([
      startConfiguredServer(config, env("deploy-1:")),
      startConfiguredServer(config, env("deploy-1:")),
      startConfiguredServer(config, env("deploy-2:")),
    ]);
    try {
      const status = async (s: typeof a) => {
        const res = await api(s.baseURL, "/models", { key: API_KEY });
        await res.arrayBuffer();
        return res.status;
      };
      expect([await status(a), await status(b), await status(a), await status(b)]).toEqual([200, 200, 429, 429]);
      expect([await status(other), await status(other), await status(other)]).toEqual([200, 200, 429]);
      const client = new Redis(redis.url);
      try {
        expect(await client.keys("deploy-1:rl:*")).not.toEqual([]);
        expect(await client.keys("deploy-2:rl:*")).not.toEqual([]);
      } finally {
        client.disconnect();
      }
    } finally {
      await Promise.all([a.stop(), b.stop(), other.stop()]);
    }
  });

  it("an area's limits (the vector stores') are charged all or nothing, and shared by two instances", async () => {
    // RateLimits.enforceAll on Redis: a refused charge leaves every entry as it was.
    const limits = new RateLimits(await RedisLimitStore.open(redis.url, { prefix: `area:${Date.now()}:` }), {
      organizations: [{ id: "org-x", rate_limits: { vector_store_file_requests_per_minute: 10, vector_store_attached_files_per_minute: 3 } }],
    });
    const store = { key: "proj_1:vs_1", rule: limits.organizationRule("org-x", "vector_store_file_requests_per_minute"), what: "requests to vs_1" };
    const files = (cost: number) => ({ key: "", rule: limits.organizationRule("org-x", "vector_store_attached_files_per_minute"), what: "attached files", cost });
    await limits.enforceAll("org-x", [store, files(2)]);
    await expect(limits.enforceAll("org-x", [store, files(2)])).rejects.toMatchObject({ rawMessage: expect.stringMatching(/^Rate limit reached for attached files: Limit 3, Used 2, Requested 2\./) });
    // The refused call charged the store nothing: 9 of its 10 are left.
    for (let i = 0; i < 9; i++) await limits.enforceAll("org-x", [store]);
    await expect(limits.enforceAll("org-x", [store])).rejects.toMatchObject({ rawMessage: expect.stringMatching(/^Rate limit reached for requests to vs_1: Limit 10, Used 10, Requested 1\./) });
    await limits.close();

    // Two servers, one Redis: calls to one store's /files on either instance spend one allowance
    // (the store exists on neither: failed calls count, spec 8).
    const config = { organizations: [{ id: "org-default", rate_limits: { vector_store_file_requests_per_minute: 4 }, projects: [{ id: "proj_default" }] }] };
    const env = { ATRIUM_REDIS_URL: redis.url };
    const [a, b] = await Promise.all([startConfiguredServer(config, env), startConfiguredServer(config, env)]);
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 6; i++) {
        const res = await api((i % 2 ? a : b).baseURL, "/vector_stores/vs_shared/files", { key: API_KEY });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
      expect(statuses).toEqual([404, 404, 404, 404, 429, 429]);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it("two instances on a high limit spend leased units: one allowance, few scripts in Redis, headers counting down", async () => {
    // 20,000 a minute: leases of 100 units (src/limits/leases.ts). A Redis of its own, so that
    // its command statistics count these servers' scripts only.
    const own = await startRedis();
    const config = { organizations: [{ id: "org-default", rate_limits: { requests_per_minute: 20_000 }, projects: [{ id: "proj_default" }] }] };
    const env = { ATRIUM_REDIS_URL: own.url };
    const [a, b] = await Promise.all([startConfiguredServer(config, env), startConfiguredServer(config, env)]);
    const client = new Redis(own.url);
    try {
      const scripts = async () => {
        const stats = await client.info("commandstats");
        return [...stats.matchAll(/cmdstat_(?:evalsha|eval):calls=(\d+)/g)].reduce((n, m) => n + Number(m[1]), 0);
      };
      const before = await scripts();
      const started = performance.now();
      for (let i = 0; i < 400; i++) {
        const s = i % 2 ? a : b;
        const res = await api(s.baseURL, "/models", { key: API_KEY });
        await res.arrayBuffer();
        expect(res.status).toBe(200);
        // Within two leases (100 units each) of the exact count, which refills a unit every 3 ms.
        const exact = 20_000 - (i + 1);
        const refill = (performance.now() - started) / 3 + 1;
        const left = Number(res.headers.get("x-ratelimit-remaining-requests"));
        expect(left).toBeGreaterThanOrEqual(exact - 200);
        expect(left).toBeLessThanOrEqual(Math.min(20_000, exact + 200 + refill));
      }
      // Far fewer scripts than calls (a lease of 100 every ~100 calls per instance, plus refunds).
      expect((await scripts()) - before).toBeLessThan(40);
    } finally {
      client.disconnect();
      await Promise.all([a.stop(), b.stop()]);
      await own.stop();
    }
  });

  it("admits requests (fail open) while Redis is unreachable", async () => {
    const own = await startRedis();
    const s = await startConfiguredServer({ organizations: [{ id: "org-default", rate_limits: { requests_per_minute: 1 } }] }, { ATRIUM_REDIS_URL: own.url });
    try {
      expect((await api(s.baseURL, "/models")).status).toBe(200);
      expect((await api(s.baseURL, "/models")).status).toBe(429);
      await own.stop();
      const res = await api(s.baseURL, "/models");
      expect(res.status).toBe(200);
      // The headers are the defaults: the limit's state is unknown.
      expect(res.headers.get("x-ratelimit-limit-requests")).toBe("10000");
    } finally {
      await s.stop();
    }
  });

  it("a Redis that cannot be reached at start-up fails the start", async () => {
    await expect(RedisLimitStore.open("redis://127.0.0.1:1")).rejects.toThrow(/cannot connect to Redis at redis:\/\/127\.0\.0\.1:1/);
  });
});

// Several instances on the shared engines (docs/scale-out.md): N=4 instances started at once on
// an empty database migrate once and bootstrap exactly one admin key; a key revoked or a project
// archived through the config of instance A is refused by instance B within 5 s; the rate limits
// are one allowance for both instances, not one each; uploads racing on both instances for the
// last bytes of a project's storage cap leave its Files within it. Each test gets its own database and Redis
// key prefix (test/shared/scaled.ts); no blob is stored, so blobs stay on each instance's disk.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { writeFileSync } from "node:fs";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import type { RunningServer } from "../src/server.js";
import { configFromEnv } from "../src/config.js";
import { areaConfigSections } from "../src/services/index.js";
import { api } from "./shared/rest.js";
import { hasPostgres, POSTGRES_INSTALL_HINT } from "./shared/postgres.js";
import { scaledEngines, type ScaledEngines } from "./shared/scaled.js";
import { startRoundRobinProxy } from "./shared/round-robin.js";
import { completeUploadsAtOnce, createFilesAtOnce, deleteAllFiles, expectWithinCap } from "./shared/storage-cap.js";
import { API_KEY, startTestInstance, tempDir, type TestServerOptions } from "./shared/server.js";

const available = hasPostgres();
if (!available) console.warn(`test/scale-out.test.ts skipped: ${POSTGRES_INSTALL_HINT}`);

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** `n` instances on `engines`, started together, each with a data dir of its own. */
async function startInstances(n: number, engines: ScaledEngines, opts: TestServerOptions = {}): Promise<Array<RunningServer & { dataDir: string }>> {
  const dirs = Array.from({ length: n }, () => tempDir());
  cleanups.push(async () => {
    await engines.dispose();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const settled = await Promise.allSettled(dirs.map((d) => startTestInstance(opts, d, engines.env)));
  const started = settled.flatMap((s, i) => (s.status === "fulfilled" ? [Object.assign(s.value, { dataDir: dirs[i] })] : []));
  cleanups.push(async () => {
    await Promise.all(started.map((s) => s.close()));
  });
  const failed = settled.find((s) => s.status === "rejected");
  if (failed) throw (failed as PromiseRejectedResult).reason;
  return started;
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(sql)).rows;
  } finally {
    await c.end();
  }
}

const status = async (baseURL: string, key: string, headers: Record<string, string> = {}) => {
  const res = await api(baseURL, "/models", { key, headers });
  const body = await res.json();
  return res.status === 200 ? 200 : `${res.status} ${body.error.code}`;
};

/** Polls `f` every 100 ms until it gives `want` or `ms` pass; returns the last answer. */
async function within<T>(ms: number, f: () => Promise<T>, want: T): Promise<T> {
  const deadline = Date.now() + ms;
  let last = await f();
  while (last !== want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    last = await f();
  }
  return last;
}

describe.skipIf(!available)("scale-out", () => {
  it("N=4 instances started at once on an empty database migrate once and bootstrap one admin key", async () => {
    const engines = await scaledEngines({ migrated: false, s3: false });
    // No key anywhere: the first start generates one admin key.
    const noKeys = { config: {}, env: { ATRIUM_API_KEY: "", ATRIUM_ADMIN_KEY: "" } };
    const servers = await startInstances(4, engines, noKeys);
    const generated = servers.map((s) => s.generatedAdminKey).filter((k): k is string => k !== undefined);
    expect(generated).toHaveLength(1);
    for (const s of servers) expect(await status(`${s.url}/v1`, generated[0])).toBe(200);
    const keys = await query<{ n: string }>(engines.databaseUrl, "SELECT count(*) AS n FROM records WHERE kind = 'api_key'");
    expect(Number(keys[0].n)).toBe(1);
    // Each migration is recorded once, and every instance found the schema complete.
    const migrations = await query<{ id: string; n: string }>(engines.databaseUrl, "SELECT id, count(*) AS n FROM schema_migrations GROUP BY id");
    expect(migrations.length).toBeGreaterThan(0);
    expect(migrations.filter((m) => Number(m.n) !== 1)).toEqual([]);
  });

  it("a key revoked and a project archived through A's config are refused by B within 5 s", async () => {
    const engines = await scaledEngines({ s3: false });
    const revocable = "sk-atrium-scale-revocable-key-01";
    const archivable = "sk-atrium-scale-archivable-key01";
    const file = (o: { revoked?: boolean; archived?: boolean }) => ({
      organizations: [{ id: "org-default", projects: [{ id: "proj_default" }, { id: "proj_arch", archived: o.archived ?? false }] }],
      keys: [
        { key: revocable, organization: "org-default", projects: ["proj_default"], revoked: o.revoked ?? false },
        { key: archivable, organization: "org-default", projects: ["proj_arch"] },
      ],
    });
    const [a, b] = await startInstances(2, engines, { config: file({}) });
    // B has both keys in its cache, live.
    expect(await status(`${b.url}/v1`, revocable)).toBe(200);
    expect(await status(`${b.url}/v1`, archivable)).toBe(200);

    const reloadA = async (doc: object) => {
      const path = join(a.dataDir, "atrium.json");
      writeFileSync(path, JSON.stringify(doc));
      await a.reloadConfig(configFromEnv({ ...engines.env, ATRIUM_DATA_DIR: a.dataDir, ATRIUM_CONFIG: path }, areaConfigSections()));
    };
    await reloadA(file({ revoked: true }));
    expect(await within(5000, () => status(`${b.url}/v1`, revocable), "401 invalid_api_key")).toBe("401 invalid_api_key");
    expect(await status(`${b.url}/v1`, API_KEY)).toBe(200);

    await reloadA(file({ revoked: true, archived: true }));
    expect(await within(5000, () => status(`${b.url}/v1`, archivable), "401 project_archived")).toBe("401 project_archived");
    // B's own (older) file does not bring either back when B reloads it.
    await b.reloadConfig(configFromEnv({ ...engines.env, ATRIUM_DATA_DIR: b.dataDir, ATRIUM_CONFIG: join(b.dataDir, "atrium.json") }, areaConfigSections()));
    expect(await status(`${a.url}/v1`, revocable)).toBe("401 invalid_api_key");
    expect(await status(`${a.url}/v1`, archivable)).toBe("401 project_archived");
  });

  it("the rate limits are one allowance for both instances, not one each", async () => {
    const engines = await scaledEngines({ s3: false });
    const config = { organizations: [{ id: "org-default", rate_limits: { requests_per_minute: 6 }, projects: [{ id: "proj_default" }] }] };
    const [a, b] = await startInstances(2, engines, { config });
    const proxy = await startRoundRobinProxy([a.url, b.url]);
    cleanups.push(() => proxy.close());
    const seen: Array<number | string> = [];
    for (let i = 0; i < 10; i++) seen.push(await status(`${proxy.url}/v1`, API_KEY));
    expect(seen).toEqual([...Array(6).fill(200), ...Array(4).fill("429 rate_limit_exceeded")]);
    expect(proxy.counts).toEqual([5, 5]);
  });

  it("uploads racing on both instances for the last bytes of the storage cap leave the project's Files within it", async () => {
    // Blobs on each instance's disk: every upload runs on one instance from start to end.
    const engines = await scaledEngines({ s3: false });
    const [a, b] = await startInstances(2, engines, { env: { ATRIUM_STORAGE_LIMIT_BYTES: "10000" } });
    const instances = [a!, b!].map((s) => ({ baseURL: `${s.url}/v1`, dataDir: s.dataDir }));
    // All 12 passed the early checks while the project was empty: the cap holds at commit.
    expect(await expectWithinCap(instances, await completeUploadsAtOnce(instances, 12, 3000), 10_000, "part_ids")).toEqual({ won: 3, refused: 9 });
    const [{ total }] = await query<{ total: string }>(engines.databaseUrl, "SELECT total FROM record_totals WHERE name = 'file_bytes'");
    expect(Number(total)).toBe(9000);

    await deleteAllFiles(instances);
    expect(await expectWithinCap(instances, await createFilesAtOnce(instances, 12, 3000), 10_000, "file")).toEqual({ won: 3, refused: 9 });
  });
});

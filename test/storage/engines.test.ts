// openStorage's choice of engines (src/storage/index.ts): each engine on its own, so every
// combination of records (SQLite | PostgreSQL) and blobs (disk | S3) opens, stores a record, a job
// and a blob, and finds its search index. No variable set is the embedded default.
import { rmSync } from "node:fs";
import { Readable } from "node:stream";
import { afterAll, describe, expect, it } from "vitest";
import { openStorage, searchIndexFor, type StorageConfig } from "../../src/storage/index.js";
import { hasPostgres, POSTGRES_INSTALL_HINT } from "../shared/postgres.js";
import { scaledEngines, type ScaledEngines } from "../shared/scaled.js";
import { tempDir } from "../shared/server.js";

const available = hasPostgres();
if (!available) console.warn(`test/storage/engines.test.ts skipped: ${POSTGRES_INSTALL_HINT}`);

const dirs: string[] = [];
const engines: ScaledEngines[] = [];
afterAll(async () => {
  for (const e of engines) await e.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function text(s: Readable): Promise<string> {
  let out = "";
  for await (const c of s) out += Buffer.from(c).toString("utf8");
  return out;
}

async function roundTrip(cfg: StorageConfig) {
  const storage = await openStorage(cfg);
  try {
    const scope = { projectId: "proj_engines" };
    await storage.records.collection<{ n: number }>("probe").insert(scope, { id: "p1", createdAt: 1, data: { n: 1 } });
    expect((await storage.records.collection<{ n: number }>("probe").get(scope, "p1"))?.data).toEqual({ n: 1 });
    const [job] = await storage.jobs.enqueue([{ id: "job_probe", kind: "probe.run", scope, payload: {}, runAfter: 0 }], Date.now());
    expect(job.state).toBe("queued");
    await storage.blobs.put("probe-blob", Readable.from([Buffer.from("hello engines")]));
    expect(await text(storage.blobs.get("probe-blob"))).toBe("hello engines");
    expect(await text(storage.blobs.get("probe-blob", { start: 6, end: 12 }))).toBe("engines");
    const index = searchIndexFor(storage.records);
    expect(index).toBeDefined();
    return storage.engines;
  } finally {
    await storage.close();
  }
}

describe.skipIf(!available)("openStorage: every combination of engines", () => {
  const dir = () => {
    const d = tempDir();
    dirs.push(d);
    return d;
  };
  const shared = async (s3 = true) => {
    const e = await scaledEngines({ s3 });
    engines.push(e);
    return e;
  };

  it("SQLite + disk (no variable: the embedded default)", async () => {
    expect(await roundTrip({ dataDir: dir() })).toEqual({ records: "sqlite", blobs: "disk" });
  });

  it("PostgreSQL + disk", async () => {
    const e = await shared(false);
    expect(await roundTrip({ dataDir: dir(), databaseUrl: e.databaseUrl })).toEqual({ records: "postgres", blobs: "disk" });
  });

  it("SQLite + S3", async () => {
    const e = await shared();
    expect(await roundTrip({ dataDir: dir(), blobUrl: e.env.ATRIUM_BLOB_URL, env: e.env })).toEqual({ records: "sqlite", blobs: "s3" });
  });

  it("PostgreSQL + S3", async () => {
    const e = await shared();
    expect(await roundTrip({ dataDir: dir(), databaseUrl: e.databaseUrl, blobUrl: e.env.ATRIUM_BLOB_URL, env: e.env })).toEqual({ records: "postgres", blobs: "s3" });
  });
});

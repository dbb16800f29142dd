// A data directory whose vector store jobs and timers carry the kinds `vector_store.ingest` and
// `timer:vector_store_expiry` has them renamed at start-up (the area's migrations), so the work
// is still picked up under the <area>.<verb> names.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { JOBS_MIGRATION } from "../../../src/jobs/sqlite-job-store.js";
import { vectorStoresArea } from "../../../src/services/vector_stores/index.js";
import { openSqliteRecordStore } from "../../../src/storage/sqlite-records.js";

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-vs-kinds-"));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("vector store job and timer kinds", () => {
  it("an ingestion job and an expiry timer under the earlier kinds are renamed; other kinds are left alone", async () => {
    const file = path.join(dir, "atrium.db");
    const before = openSqliteRecordStore(file, { migrations: [JOBS_MIGRATION] }); // the jobs table, as the server has it
    const job = before.db.prepare(`INSERT INTO jobs (id, kind, project_id, payload, state, run_after, created_at, updated_at) VALUES (?, ?, 'proj', '{}', 'queued', 0, 0, 0)`);
    job.run("vs_ingest:vs_1:file-1:a", "vector_store.ingest");
    job.run("batches.run:batch_1", "batches.run");
    const timer = before.db.prepare(`INSERT INTO records (kind, id, project_id, created_at, expires_at, data) VALUES (?, ?, 'proj', 0, 10, '{}')`);
    timer.run("timer:vector_store_expiry", "vs_1:10");
    timer.run("timer:videos.expire_assets", "video_1");
    await before.close();

    const after = openSqliteRecordStore(file, { migrations: [JOBS_MIGRATION, ...(vectorStoresArea.migrations ?? [])] });
    try {
      expect(after.db.prepare(`SELECT id, kind FROM jobs ORDER BY seq`).all()).toEqual([
        { id: "vs_ingest:vs_1:file-1:a", kind: "vector_stores.ingest" },
        { id: "batches.run:batch_1", kind: "batches.run" },
      ]);
      expect(after.db.prepare(`SELECT id, kind FROM records ORDER BY seq`).all()).toEqual([
        { id: "vs_1:10", kind: "timer:vector_stores.expire" },
        { id: "video_1", kind: "timer:videos.expire_assets" },
      ]);
    } finally {
      await after.close();
    }
  });
});

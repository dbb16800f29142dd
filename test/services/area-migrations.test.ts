// ApiArea.migrations: an area that keeps a table beside the records declares its schema there;
// the server applies it once, with the core schema, before any area is set up.
import { describe, expect, it } from "vitest";
import type { ApiArea } from "../../src/services/area.js";
import { filesArea } from "../../src/services/files/index.js";
import type { SqliteRecordStore } from "../../src/storage/index.js";
import { startTestServer, tempDir } from "../shared/server.js";

describe("ApiArea.migrations", () => {
  it("are applied once, in order, before the area's setup, and survive a restart", async () => {
    const seenAtSetup: string[][] = [];
    const counterArea: ApiArea = {
      name: "migration_probe",
      migrations: [
        { id: "migration_probe/0001_counters", sql: "CREATE TABLE probe_counters (name TEXT PRIMARY KEY, n INTEGER NOT NULL)" },
        { id: "migration_probe/0002_seed", sql: "INSERT INTO probe_counters (name, n) VALUES ('starts', 0)" },
      ],
      setup: ({ deps }) => {
        const store = deps.records as SqliteRecordStore;
        seenAtSetup.push(store.appliedMigrations().filter((id) => id.startsWith("migration_probe/")));
        store.db.prepare("UPDATE probe_counters SET n = n + 1 WHERE name = 'starts'").run();
        return { services: [] };
      },
    };
    const dataDir = tempDir();
    for (let start = 1; start <= 2; start++) {
      const server = await startTestServer({ dataDir, areas: [filesArea, counterArea] });
      try {
        const store = server.deps.records as SqliteRecordStore;
        // The seed row is inserted once: a second start does not apply the migrations again.
        expect(store.db.prepare("SELECT n FROM probe_counters WHERE name = 'starts'").pluck().get()).toBe(start);
      } finally {
        // close() keeps the data directory for the second start; stop() removes it after the last.
        if (start === 1) await server.close();
        else await server.stop();
      }
    }
    expect(seenAtSetup).toEqual([
      ["migration_probe/0001_counters", "migration_probe/0002_seed"],
      ["migration_probe/0001_counters", "migration_probe/0002_seed"],
    ]);
  });
});

// First-start bootstrap when several instances start at once on one empty database: none fails,
// and exactly one generates the admin key. On PostgreSQL with 4 pools (the case that needs it),
// and on SQLite across a restart (a database with keys generates none).
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { bootstrap, DEFAULT_PROJECT } from "../../src/auth/bootstrap.js";
import { KeyStore } from "../../src/auth/keys.js";
import { configFromEnv } from "../../src/config.js";
import { openSqliteRecordStore } from "../../src/storage/index.js";
import { openPostgresRecordStore } from "../../src/storage/postgres/index.js";
import { undoAfterEach } from "../shared/cleanup.js";
import { hasPostgres, POSTGRES_INSTALL_HINT, testPostgres } from "../shared/postgres.js";

const { cleanups, tempDir } = undoAfterEach("atrium-bootstrap-");

describe("bootstrap", () => {
  it.skipIf(!hasPostgres())(`4 instances starting together on one PostgreSQL database generate one admin key${hasPostgres() ? "" : ` (${POSTGRES_INSTALL_HINT})`}`, async () => {
    const pgs = await testPostgres();
    const url = await pgs.newDatabase("bootstrap");
    cleanups.push(() => pgs.dropDatabase(url));
    const cfg = configFromEnv({});
    const stores = await Promise.all(
      [1, 2, 3, 4].map(async () => {
        const store = await openPostgresRecordStore(url, { poolSize: 2 });
        cleanups.push(() => store.close());
        return store;
      }),
    );
    const results = await Promise.all(stores.map((s) => bootstrap(new KeyStore(s), cfg)));
    const generated = results.map((r) => r.generatedAdminKey).filter((k) => k !== undefined);
    expect(generated).toHaveLength(1);
    const keys = new KeyStore(stores[0]!);
    expect(await keys.count()).toBe(1);
    expect(await keys.lookup(generated[0]!)).toMatchObject({ kind: "admin", name: "generated admin key" });
    expect(await keys.project(DEFAULT_PROJECT)).toMatchObject({ id: DEFAULT_PROJECT });

    // A configured key (ATRIUM_API_KEY) put by every instance at once: one key, no error.
    const withKey = configFromEnv({ ATRIUM_API_KEY: "sk-atrium-shared-by-all-instances" });
    expect(await Promise.all(stores.map((s) => bootstrap(new KeyStore(s), withKey)))).toEqual([{}, {}, {}, {}]);
    expect(await keys.count()).toBe(2);
    expect(await keys.lookup("sk-atrium-shared-by-all-instances")).toMatchObject({ kind: "standard" });
  });

  it("generates an admin key on the first start only", async () => {
    const file = path.join(tempDir(), "atrium.db");
    const cfg = configFromEnv({});
    let store = openSqliteRecordStore(file);
    const first = await bootstrap(new KeyStore(store), cfg);
    expect(first.generatedAdminKey).toMatch(/^sk-admin-/);
    await store.close();
    store = openSqliteRecordStore(file);
    cleanups.push(() => store.close());
    expect(await bootstrap(new KeyStore(store), cfg)).toEqual({});
    expect(await new KeyStore(store).count()).toBe(1);
  });
});

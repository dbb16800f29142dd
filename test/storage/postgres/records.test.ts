// The PostgreSQL record store under real concurrency: several pools (what several instances are)
// writing one database at once. The single-writer cases are in record-store-contract.test.ts.
import pg from "pg";
import { describe, expect, it } from "vitest";
import { openPostgresRecordStore, type PostgresRecordStore } from "../../../src/storage/postgres/index.js";
import type { Migration, WriteOp } from "../../../src/storage/index.js";
import { undoAfterEach } from "../../shared/cleanup.js";
import { hasPostgres, POSTGRES_INSTALL_HINT, testPostgres } from "../../shared/postgres.js";
import { sleep } from "../../shared/poll.js";

const { cleanups } = undoAfterEach("atrium-pg-records-");
const A = { projectId: "proj_a" };

async function newDatabase(): Promise<string> {
  const pgs = await testPostgres();
  const url = await pgs.newDatabase("records_concurrency");
  cleanups.push(() => pgs.dropDatabase(url));
  return url;
}

async function open(url: string, opts: { migrations?: Migration[]; poolSize?: number } = {}): Promise<PostgresRecordStore> {
  const store = await openPostgresRecordStore(url, { poolSize: 4, ...opts });
  cleanups.push(() => store.close());
  return store;
}

/** Resolves once some session waits for an advisory lock (pg_locks says so, not a timer). */
async function untilAdvisoryWaiter(pool: pg.Pool): Promise<void> {
  for (;;) {
    const { rows } = await pool.query(`SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted`);
    if (rows.length) return;
    await sleep(5);
  }
}

describe.skipIf(!hasPostgres())(`PostgresRecordStore with concurrent writers${hasPostgres() ? "" : ` (${POSTGRES_INSTALL_HINT})`}`, () => {
  it("4 stores opened at once on an empty database apply each migration once, in order", async () => {
    const url = await newDatabase();
    // A migration that counts its own runs: applied twice, it would leave two rows.
    const migrations: Migration[] = [
      { id: "test/0001_runs", sql: "", postgres: "CREATE TABLE migration_runs (n INTEGER); INSERT INTO migration_runs VALUES (1);" },
      { id: "test/0002_sqlite_only", sql: "CREATE TABLE x (y)" },
      { id: "test/0003_again", sql: "", postgres: "INSERT INTO migration_runs VALUES (3);" },
    ];
    const stores = await Promise.all([1, 2, 3, 4].map(() => open(url, { migrations, poolSize: 2 })));
    const { rows } = await stores[0]!.pool.query<{ n: number }>("SELECT n FROM migration_runs ORDER BY n");
    expect(rows.map((r) => r.n)).toEqual([1, 3]);
    expect(await stores[0]!.appliedMigrations()).toEqual(["storage/0001_records", "storage/0002_record_totals", "test/0001_runs", "test/0002_sqlite_only", "test/0003_again"]);
    // A failing migration leaves no trace and fails the open.
    const bad: Migration = { id: "test/0004_bad", sql: "", postgres: "INSERT INTO migration_runs VALUES (4); SELECT * FROM no_such_table;" };
    await expect(openPostgresRecordStore(url, { migrations: [...migrations, bad] })).rejects.toThrow(/test\/0004_bad/);
    expect((await stores[1]!.pool.query("SELECT n FROM migration_runs")).rowCount).toBe(2);
    expect(await stores[1]!.appliedMigrations()).not.toContain("test/0004_bad");
  });

  it("a row that commits late never lands behind a reader's cursor: a second insert into the list waits for the first to commit", async () => {
    const url = await newDatabase();
    const [w1, w2, reader] = await Promise.all([open(url), open(url), open(url)]);
    const items = reader.collection<{ n: number }>("item");
    await items.insert(A, { id: "first", createdAt: 10, data: { n: 0 } });

    // Writer 1 inserts inside an open transaction and holds it.
    let commit!: () => void;
    const held = new Promise<void>((r) => (commit = r));
    let inserted!: () => void;
    const insertedP = new Promise<void>((r) => (inserted = r));
    const tx = w1.transaction(async (c) => {
      await w1.applyWrites(c, [{ op: "insert", kind: "item", scope: A, record: { id: "slow", createdAt: 10, data: { n: 1 } } }]);
      inserted();
      await held;
    });
    await insertedP;
    // Writer 2 inserts into the same list with the same createdAt: it must not commit first.
    const fast = w2.collection<{ n: number }>("item").insert(A, { id: "fast", createdAt: 10, data: { n: 2 } });
    await untilAdvisoryWaiter(reader.pool);
    const page = await items.list(A, { limit: 10, order: "asc" });
    expect(page.records.map((r) => r.id)).toEqual(["first"]);
    commit();
    await tx;
    await fast;
    // Paging on from the reader's cursor finds both, in commit order.
    const next = await items.list(A, { limit: 10, order: "asc", after: "first" });
    expect(next.records.map((r) => r.id)).toEqual(["slow", "fast"]);
  });

  it("a reader paging with cursors while 4 pools insert sees every row exactly once", async () => {
    const url = await newDatabase();
    const writers = await Promise.all([1, 2, 3, 4].map(() => open(url)));
    const reader = await open(url);
    const items = reader.collection<{ w: number; i: number }>("item");
    await items.insert(A, { id: "start", createdAt: 5, data: { w: -1, i: -1 } });
    const PER_WRITER = 60;
    let writing = true;
    const writes = Promise.all(
      writers.map(async (store, w) => {
        const c = store.collection<{ w: number; i: number }>("item");
        for (let i = 0; i < PER_WRITER; i++) {
          // Half single inserts, half batches whose transaction does more work after the insert.
          if (i % 2) await c.insert(A, { id: `w${w}-${i}`, createdAt: 5, data: { w, i } });
          else
            await store.atomically([
              { op: "insert", kind: "item", scope: A, record: { id: `w${w}-${i}`, createdAt: 5, data: { w, i } } },
              { op: "insert", kind: "other", scope: A, record: { id: `o${w}-${i}`, createdAt: 5, data: { w, i } } },
            ]);
        }
      }),
    ).finally(() => (writing = false));
    const seen: string[] = [];
    let cursor = "start";
    for (;;) {
      const done = !writing;
      const page = await items.list(A, { limit: 7, order: "asc", after: cursor });
      for (const r of page.records) seen.push(r.id);
      if (page.records.length) cursor = page.records[page.records.length - 1]!.id;
      if (done && !page.hasMore) break;
    }
    await writes;
    expect(seen).toHaveLength(4 * PER_WRITER);
    expect(new Set(seen).size).toBe(4 * PER_WRITER);
  });

  it("mutate from 4 pools at once loses no update (the conditional write is a compare-and-set)", async () => {
    const url = await newDatabase();
    const stores = await Promise.all([1, 2, 3, 4].map(() => open(url)));
    await stores[0]!.collection<{ n: number }>("counter").insert(A, { id: "c", createdAt: 1, data: { n: 0 } });
    const PER_STORE = 25;
    await Promise.all(
      stores.map(async (s) => {
        const c = s.collection<{ n: number }>("counter");
        for (let i = 0; i < PER_STORE; i++) {
          // Retries past MUTATE_ATTEMPTS under this contention surface as a VersionConflict: count it.
          for (;;) {
            try {
              await c.mutate(A, "c", (cur) => ({ write: "update", data: { n: cur!.data.n + 1 }, result: undefined }));
              break;
            } catch (err) {
              if ((err as Error).constructor.name !== "VersionConflict") throw err;
            }
          }
        }
      }),
    );
    const final = await stores[0]!.collection<{ n: number }>("counter").get(A, "c");
    expect(final).toMatchObject({ data: { n: 4 * PER_STORE }, version: 4 * PER_STORE + 1 });
  });

  it("batches updating the same records in opposite orders from two pools all apply (a deadlock abort is run again)", async () => {
    const url = await newDatabase();
    const [s1, s2] = await Promise.all([open(url), open(url)]);
    const c = s1.collection<{ n: number }>("pair");
    await c.insert(A, { id: "r1", createdAt: 1, data: { n: 0 } });
    await c.insert(A, { id: "r2", createdAt: 1, data: { n: 0 } });
    const update = (id: string): WriteOp => ({ op: "update", kind: "pair", scope: A, id, data: { n: 1 } });
    const ROUNDS = 3;
    for (let i = 0; i < ROUNDS; i++) {
      await Promise.all([s1.atomically([update("r1"), update("r2")]), s2.atomically([update("r2"), update("r1")])]);
    }
    expect((await c.get(A, "r1"))!.version).toBe(1 + 2 * ROUNDS);
    expect((await c.get(A, "r2"))!.version).toBe(1 + 2 * ROUNDS);
  });
});

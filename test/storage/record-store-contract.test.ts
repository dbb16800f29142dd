// The RecordStore contract: the same cases against every store (SQLite, the embedded default;
// PostgreSQL, the scale-out one). A case here states what callers may rely on whatever the engine;
// engine-specific checks (SQLite's pragmas and query plans, PostgreSQL under concurrent writers)
// live beside their store's own tests.
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { ApiError } from "../../src/common/errors.js";
import {
  CursorNotFound,
  DuplicateRecord,
  MUTATE_ATTEMPTS,
  openSqliteRecordStore,
  recordTotalMigration,
  SqliteRecordStore,
  TotalOverCap,
  VersionConflict,
  type Migration,
  type RecordStore,
  type Scope,
  type WriteOp,
} from "../../src/storage/index.js";
import { openPostgresRecordStore, PostgresRecordStore } from "../../src/storage/postgres/index.js";
import { undoAfterEach } from "../shared/cleanup.js";
import { hasPostgres, POSTGRES_INSTALL_HINT, testPostgres } from "../shared/postgres.js";

const { cleanups, tempDir } = undoAfterEach("atrium-contract-");

interface Backend {
  name: string;
  available: boolean;
  open(opts: { now?: () => number; migrations?: Migration[] }): Promise<RecordStore>;
  /** Applies migrations to a store already open (one this backend opened). */
  migrate(store: RecordStore, migrations: Migration[]): Promise<void>;
}

const backends: Backend[] = [
  {
    name: "SQLite",
    available: true,
    async open(opts) {
      const store = openSqliteRecordStore(path.join(tempDir(), "atrium.db"), opts);
      cleanups.push(() => store.close());
      return store;
    },
    async migrate(store, migrations) {
      (store as SqliteRecordStore).applyMigrations(migrations);
    },
  },
  {
    name: "PostgreSQL",
    available: hasPostgres(),
    async open(opts) {
      const pg = await testPostgres();
      const url = await pg.newDatabase("records_contract");
      cleanups.push(() => pg.dropDatabase(url));
      const store = await openPostgresRecordStore(url, { ...opts, poolSize: 4 });
      cleanups.push(() => store.close());
      return store;
    },
    migrate(store, migrations) {
      return (store as PostgresRecordStore).applyMigrations(migrations);
    },
  },
];

// A running total over the `bytes` of records of kind "sized".
const SIZED_BYTES = recordTotalMigration("test/sized_bytes", { name: "sized_bytes", kind: "sized", field: "bytes" });

const A: Scope = { projectId: "proj_a" };
const B: Scope = { projectId: "proj_b" };
const scope = A;
type Doc = { n: number; name?: string };
interface Counter {
  n: number;
}

describe.each(backends)("RecordStore contract on $name", (backend) => {
  if (!backend.available) {
    it.skip(`needs PostgreSQL: ${POSTGRES_INSTALL_HINT}`, () => {});
    return;
  }

  /** A store whose clock the test controls. */
  async function clockedStore(start = 1_000) {
    const clock = { now: start };
    const store = await backend.open({ now: () => clock.now });
    return { store, clock };
  }

  const openStore = () => backend.open({});

  async function counterStore() {
    const store = await openStore();
    const counters = store.collection<Counter>("counter");
    await counters.insert(scope, { id: "c1", createdAt: 1, tag: "new", data: { n: 0 } });
    return { store, counters };
  }

  describe("present", () => {
    it("finds ids and parent ids of a kind in any project, expired records included", async () => {
      const { store, clock } = await clockedStore(1000);
      await store.collection("file").insert({ projectId: "p1" }, { id: "file-a", createdAt: 1, data: {} });
      await store.collection("file").insert({ projectId: "p2" }, { id: "file-b", createdAt: 1, expiresAt: 1500, data: {} });
      await store.collection("share").insert({ projectId: "p1" }, { id: "cfile_x", parentId: "file-c", createdAt: 1, data: {} });
      clock.now = 2000; // file-b is expired, not yet swept: it still holds its bytes

      expect(await store.present("file", ["file-a", "file-b", "file-c", "file-z"])).toEqual(new Set(["file-a", "file-b"]));
      expect(await store.present("share", ["file-a", "file-c"], "parentId")).toEqual(new Set(["file-c"]));
      expect(await store.present("other", ["file-a"])).toEqual(new Set());
      expect(await store.present("file", [])).toEqual(new Set());
      // More ids than one statement binds in SQLite.
      const many = Array.from({ length: 1200 }, (_, i) => `file-n${i}`);
      expect(await store.present("file", [...many, "file-a"])).toEqual(new Set(["file-a"]));
    });
  });

  describe("basic CRUD", () => {
    it("inserts, gets, updates (bumping version) and deletes", async () => {
      const { store } = await clockedStore();
      const files = store.collection<Doc>("file");

      const ins = await files.insert(A, { id: "file-1", createdAt: 100, data: { n: 1, name: "a" } });
      expect(ins).toEqual({
        id: "file-1",
        projectId: "proj_a",
        parentId: "",
        createdAt: 100,
        expiresAt: null,
        tag: null,
        version: 1,
        data: { n: 1, name: "a" },
      });
      expect(await files.get(A, "file-1")).toEqual(ins);
      expect(await files.get(A, "missing")).toBeUndefined();

      const upd = await files.update(A, "file-1", { n: 2 });
      expect(upd).toMatchObject({ version: 2, data: { n: 2 }, createdAt: 100, expiresAt: null, tag: null });
      expect(await files.get(A, "file-1")).toEqual(upd);
      expect((await files.update(A, "file-1", { n: 3 }))!.version).toBe(3);

      expect(await files.update(A, "nope", { n: 0 })).toBeUndefined();
      expect(await files.delete(A, "file-1")).toBe(true);
      expect(await files.get(A, "file-1")).toBeUndefined();
      expect(await files.delete(A, "file-1")).toBe(false);
    });

    it("keeps kinds apart and rejects duplicate ids within a kind", async () => {
      const { store } = await clockedStore();
      await store.collection<Doc>("file").insert(A, { id: "x", createdAt: 1, data: { n: 1 } });
      await store.collection<Doc>("batch").insert(A, { id: "x", createdAt: 1, data: { n: 2 } });
      expect((await store.collection<Doc>("file").get(A, "x"))!.data.n).toBe(1);
      expect((await store.collection<Doc>("batch").get(A, "x"))!.data.n).toBe(2);
      await expect(store.collection<Doc>("file").insert(A, { id: "x", createdAt: 2, data: { n: 3 } })).rejects.toBeInstanceOf(
        DuplicateRecord,
      );
      expect((await store.collection<Doc>("file").get(A, "x"))!.data.n).toBe(1);
    });

    it("update keeps expiresAt/tag when omitted and clears them with null", async () => {
      const { store } = await clockedStore();
      const c = store.collection<Doc>("file");
      await c.insert(A, { id: "f", createdAt: 1, expiresAt: 5_000, tag: "assistants", data: { n: 1 } });
      let r = await c.update(A, "f", { n: 2 });
      expect(r).toMatchObject({ expiresAt: 5_000, tag: "assistants" });
      r = await c.update(A, "f", { n: 3 }, { tag: "batch", expiresAt: 6_000 });
      expect(r).toMatchObject({ expiresAt: 6_000, tag: "batch" });
      r = await c.update(A, "f", { n: 4 }, { tag: null, expiresAt: null });
      expect(r).toMatchObject({ expiresAt: null, tag: null, version: 4 });
      expect(await c.get(A, "f")).toEqual(r);
    });

    it("conditional update and delete throw VersionConflict on a stale version", async () => {
      const { store } = await clockedStore();
      const c = store.collection<Doc>("file");
      await c.insert(A, { id: "f", createdAt: 1, data: { n: 1 } });
      await expect(c.update(A, "f", { n: 9 }, { expectVersion: 2 })).rejects.toBeInstanceOf(VersionConflict);
      expect((await c.get(A, "f"))!).toMatchObject({ version: 1, data: { n: 1 } });
      expect(await c.update(A, "f", { n: 2 }, { expectVersion: 1 })).toMatchObject({ version: 2, data: { n: 2 } });
      await expect(c.delete(A, "f", { expectVersion: 1 })).rejects.toBeInstanceOf(VersionConflict);
      expect(await c.get(A, "f")).toBeDefined();
      expect(await c.delete(A, "f", { expectVersion: 2 })).toBe(true);
      // Absent is not a conflict for the single-record calls.
      expect(await c.update(A, "f", { n: 3 }, { expectVersion: 2 })).toBeUndefined();
      expect(await c.delete(A, "f", { expectVersion: 2 })).toBe(false);
    });

    it("stores and returns metadata", async () => {
      const { store } = await clockedStore();
      expect(await store.getMeta("k")).toBeUndefined();
      await store.setMeta("k", "v1");
      await store.setMeta("k", "v2");
      expect(await store.getMeta("k")).toBe("v2");
    });
  });

  describe("tenants are walls", () => {
    it("never shows, changes or deletes another project's records", async () => {
      const { store } = await clockedStore();
      const c = store.collection<Doc>("file");
      await c.insert(A, { id: "fa", createdAt: 1, data: { n: 1 } });
      await c.insert(B, { id: "fb", createdAt: 1, data: { n: 2 } });

      expect(await c.get(B, "fa")).toBeUndefined();
      expect(await c.update(B, "fa", { n: 99 })).toBeUndefined();
      expect(await c.delete(B, "fa")).toBe(false);
      await expect(c.delete(B, "fa", { expectVersion: 1 })).resolves.toBe(false);
      expect((await c.get(A, "fa"))!).toMatchObject({ version: 1, data: { n: 1 } });

      expect((await c.list(A, { limit: 10, order: "asc" })).records.map((r) => r.id)).toEqual(["fa"]);
      expect((await c.list(B, { limit: 10, order: "asc" })).records.map((r) => r.id)).toEqual(["fb"]);
      expect(await c.count(A)).toBe(1);
      expect(await c.count({ projectId: "proj_c" })).toBe(0);
      // Ids are global per kind: reusing one from another project is still a duplicate.
      await expect(c.insert(B, { id: "fa", createdAt: 1, data: { n: 3 } })).rejects.toBeInstanceOf(DuplicateRecord);
      // A cursor from another project is not a cursor here.
      await expect(c.list(B, { limit: 10, order: "asc", after: "fa" })).rejects.toBeInstanceOf(CursorNotFound);
    });
  });

  describe("expiry", () => {
    it("hides records at or past expiresAt from get, list, count and update", async () => {
      const { store, clock } = await clockedStore(1_000);
      const c = store.collection<Doc>("upload");
      await c.insert(A, { id: "never", createdAt: 1, data: { n: 0 } });
      await c.insert(A, { id: "soon", createdAt: 2, expiresAt: 1_010, data: { n: 1 } });
      await c.insert(A, { id: "later", createdAt: 3, expiresAt: 1_100, data: { n: 2 } });

      expect(await c.get(A, "soon")).toBeDefined();
      expect(await c.count(A)).toBe(3);

      clock.now = 1_010; // expiresAt <= now is expired
      expect(await c.get(A, "soon")).toBeUndefined();
      expect(await c.get(A, "later")).toBeDefined();
      expect((await c.list(A, { limit: 10, order: "asc" })).records.map((r) => r.id)).toEqual(["never", "later"]);
      expect(await c.count(A)).toBe(2);
      expect(await c.update(A, "soon", { n: 5 })).toBeUndefined();

      clock.now = 1_009;
      expect((await c.get(A, "soon"))!.data).toEqual({ n: 1 }); // the failed update changed nothing
    });

    it("expired() lists due records of every kind and project, oldest first, and delete removes them", async () => {
      const { store, clock } = await clockedStore(1_000);
      await store.collection<Doc>("upload").insert(A, { id: "u1", createdAt: 1, expiresAt: 1_050, data: { n: 1 } });
      await store.collection<Doc>("file").insert(B, { id: "f1", createdAt: 1, expiresAt: 1_020, data: { n: 2 } });
      await store.collection<Doc>("file").insert(A, { id: "f2", createdAt: 1, expiresAt: 1_030, data: { n: 3 } });
      await store.collection<Doc>("file").insert(A, { id: "f3", createdAt: 1, expiresAt: 5_000, data: { n: 4 } });
      await store.collection<Doc>("file").insert(A, { id: "f4", createdAt: 1, data: { n: 5 } });

      expect(await store.expired(1_000, 10)).toEqual([]);
      const due = await store.expired(1_050, 10);
      expect(due.map((d) => [d.kind, d.projectId, d.record.id])).toEqual([
        ["file", "proj_b", "f1"],
        ["file", "proj_a", "f2"],
        ["upload", "proj_a", "u1"],
      ]);
      expect(due[0]!.record).toMatchObject({ expiresAt: 1_020, version: 1, data: { n: 2 } });
      expect((await store.expired(1_050, 2)).map((d) => d.record.id)).toEqual(["f1", "f2"]);

      clock.now = 1_060;
      // The sweeper deletes records get() already hides, conditionally on the version it saw.
      await store.atomically(
        due.map((d) => ({ op: "delete" as const, kind: d.kind, scope: { projectId: d.projectId }, id: d.record.id, expectVersion: d.record.version })),
      );
      expect(await store.expired(1_050, 10)).toEqual([]);
      expect(await store.collection("file").delete(A, "f2")).toBe(false);
    });
  });

  describe("lists", () => {
    // 7 records; several share created_at so only insertion order can break the tie.
    const CREATED = [10, 20, 20, 20, 30, 30, 40];
    async function seed(store: RecordStore) {
      const c = store.collection<Doc>("item");
      for (let i = 0; i < CREATED.length; i++) {
        // Ids deliberately sort against insertion order, so an ORDER BY id would show.
        await c.insert(A, { id: `item-${9 - i}`, createdAt: CREATED[i]!, data: { n: i } });
      }
      return c;
    }
    const ids = (page: { records: Array<{ data: Doc }> }) => page.records.map((r) => r.data.n);

    it("orders by (createdAt, insertion order) ascending and descending", async () => {
      const { store } = await clockedStore();
      const c = await seed(store);
      expect(ids(await c.list(A, { limit: 100, order: "asc" }))).toEqual([0, 1, 2, 3, 4, 5, 6]);
      expect(ids(await c.list(A, { limit: 100, order: "desc" }))).toEqual([6, 5, 4, 3, 2, 1, 0]);
      // Insert an older record last: createdAt wins over insertion order.
      await c.insert(A, { id: "late-old", createdAt: 5, data: { n: 7 } });
      expect(ids(await c.list(A, { limit: 100, order: "asc" }))).toEqual([7, 0, 1, 2, 3, 4, 5, 6]);
    });


    it("pages forward with `after` and reports hasMore, in both orders", async () => {
      const { store } = await clockedStore();
      const c = await seed(store);
      for (const order of ["asc", "desc"] as const) {
        const seen: number[] = [];
        const more: boolean[] = [];
        let after: string | undefined;
        for (;;) {
          const page = await c.list(A, { limit: 3, order, after });
          seen.push(...ids(page));
          more.push(page.hasMore);
          if (!page.hasMore) break;
          after = page.records[page.records.length - 1]!.id;
        }
        const all = [0, 1, 2, 3, 4, 5, 6];
        expect(seen).toEqual(order === "asc" ? all : [...all].reverse());
        expect(more).toEqual([true, true, false]);
      }
      // Exactly `limit` remaining: hasMore is false.
      const last3 = await c.list(A, { limit: 3, order: "asc", after: "item-6" /* n=3 */ });
      expect(ids(last3)).toEqual([4, 5, 6]);
      expect(last3.hasMore).toBe(false);
      // After the last record: empty page.
      expect(await c.list(A, { limit: 3, order: "asc", after: "item-3" })).toEqual({ records: [], hasMore: false });
    });

    it("pages backward with `before`: the page right before the cursor, still in the requested order", async () => {
      const { store } = await clockedStore();
      const c = await seed(store);
      // asc order: 0..6. Before n=5 (id item-4), limit 2 → [3, 4], more before it.
      let page = await c.list(A, { limit: 2, order: "asc", before: "item-4" });
      expect(ids(page)).toEqual([3, 4]);
      expect(page.hasMore).toBe(true);
      page = await c.list(A, { limit: 2, order: "asc", before: page.records[0]!.id });
      expect(ids(page)).toEqual([1, 2]);
      expect(page.hasMore).toBe(true);
      page = await c.list(A, { limit: 2, order: "asc", before: page.records[0]!.id });
      expect(ids(page)).toEqual([0]);
      expect(page.hasMore).toBe(false);

      // desc order: 6..0. Before n=1 (id item-8) → the two that precede it in desc order: [3, 2].
      page = await c.list(A, { limit: 2, order: "desc", before: "item-8" });
      expect(ids(page)).toEqual([3, 2]);
      expect(page.hasMore).toBe(true);
      page = await c.list(A, { limit: 10, order: "desc", before: "item-8" });
      expect(ids(page)).toEqual([6, 5, 4, 3, 2]);
      expect(page.hasMore).toBe(false);
      expect(await c.list(A, { limit: 10, order: "desc", before: "item-3" /* n=6, first */ })).toEqual({
        records: [],
        hasMore: false,
      });
    });

    it("combines `after` and `before` into a window", async () => {
      const { store } = await clockedStore();
      const c = await seed(store);
      expect(ids(await c.list(A, { limit: 10, order: "asc", after: "item-8", before: "item-4" }))).toEqual([2, 3, 4]);
      const p = await c.list(A, { limit: 2, order: "desc", after: "item-4", before: "item-8" });
      expect(ids(p)).toEqual([4, 3]);
      expect(p.hasMore).toBe(true);
    });

    it("throws CursorNotFound for an unknown cursor, another kind's id, or a deleted record", async () => {
      const { store } = await clockedStore();
      const c = await seed(store);
      await store.collection<Doc>("other").insert(A, { id: "o-1", createdAt: 1, data: { n: 0 } });
      await expect(c.list(A, { limit: 3, order: "asc", after: "nope" })).rejects.toBeInstanceOf(CursorNotFound);
      await expect(c.list(A, { limit: 3, order: "desc", before: "nope" })).rejects.toBeInstanceOf(CursorNotFound);
      await expect(c.list(A, { limit: 3, order: "asc", after: "o-1" })).rejects.toBeInstanceOf(CursorNotFound);
      await c.delete(A, "item-5");
      const err = await c.list(A, { limit: 3, order: "asc", after: "item-5" }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CursorNotFound);
      expect(err).toMatchObject({ kind: "item", id: "item-5" });
    });

    it("filters by tag and by parent, separately and together, in list and count", async () => {
      const { store } = await clockedStore();
      const c = store.collection<Doc>("vsfile");
      const rows: Array<[string, string, string | null]> = [
        ["f1", "vs_1", "completed"],
        ["f2", "vs_1", "failed"],
        ["f3", "vs_2", "completed"],
        ["f4", "vs_1", "completed"],
        ["f5", "", null],
      ];
      let i = 0;
      for (const [id, parentId, tag] of rows) await c.insert(A, { id, parentId, tag, createdAt: 100 + i, data: { n: i++ } });
      await c.insert(B, { id: "fB", parentId: "vs_1", tag: "completed", createdAt: 1, data: { n: 99 } });

      const list = async (q: { parentId?: string; tag?: string }) =>
        (await c.list(A, { limit: 10, order: "asc", ...q })).records.map((r) => r.id);
      expect(await list({})).toEqual(["f1", "f2", "f3", "f4", "f5"]);
      expect(await list({ parentId: "vs_1" })).toEqual(["f1", "f2", "f4"]);
      expect(await list({ parentId: "" })).toEqual(["f5"]);
      expect(await list({ tag: "completed" })).toEqual(["f1", "f3", "f4"]);
      expect(await list({ parentId: "vs_1", tag: "completed" })).toEqual(["f1", "f4"]);
      expect(await list({ parentId: "vs_3" })).toEqual([]);

      expect(await c.count(A)).toBe(5);
      expect(await c.count(A, { parentId: "vs_1" })).toBe(3);
      expect(await c.count(A, { tag: "completed" })).toBe(3);
      expect(await c.count(A, { parentId: "vs_1", tag: "failed" })).toBe(1);

      // Cursors work inside a filtered list.
      const p = await c.list(A, { limit: 1, order: "asc", parentId: "vs_1", tag: "completed", after: "f1" });
      expect(p.records.map((r) => r.id)).toEqual(["f4"]);
      expect(p.hasMore).toBe(false);
      expect((await c.get(A, "f3"))!).toMatchObject({ parentId: "vs_2", tag: "completed" });
    });
  });

  describe("atomically", () => {
    it("applies every op of a batch", async () => {
      const { store } = await clockedStore();
      const c = store.collection<Doc>("file");
      await c.insert(A, { id: "keep", createdAt: 1, data: { n: 1 } });
      await c.insert(A, { id: "gone", createdAt: 1, data: { n: 2 } });
      await store.atomically([
        { op: "insert", kind: "file", scope: A, record: { id: "new", createdAt: 2, tag: "t", data: { n: 3 } } },
        { op: "update", kind: "file", scope: A, id: "keep", data: { n: 10 }, expectVersion: 1, tag: "x" },
        { op: "delete", kind: "file", scope: A, id: "gone" },
      ]);
      expect((await c.get(A, "new"))!).toMatchObject({ tag: "t", version: 1, data: { n: 3 } });
      expect((await c.get(A, "keep"))!).toMatchObject({ tag: "x", version: 2, data: { n: 10 } });
      expect(await c.get(A, "gone")).toBeUndefined();
    });

    it("rolls back everything on a VersionConflict", async () => {
      const { store } = await clockedStore();
      const c = store.collection<Doc>("file");
      await c.insert(A, { id: "r1", createdAt: 1, data: { n: 1 } });
      await c.insert(A, { id: "r2", createdAt: 1, data: { n: 2 } });
      const batch = store.atomically([
        { op: "insert", kind: "file", scope: A, record: { id: "new", createdAt: 2, data: { n: 3 } } },
        { op: "update", kind: "file", scope: A, id: "r1", data: { n: 10 } },
        { op: "delete", kind: "file", scope: A, id: "r2" },
        { op: "update", kind: "file", scope: A, id: "r1", data: { n: 11 }, expectVersion: 1 }, // now 2
      ]);
      await expect(batch).rejects.toBeInstanceOf(VersionConflict);
      expect(await c.get(A, "new")).toBeUndefined();
      expect((await c.get(A, "r1"))!).toMatchObject({ version: 1, data: { n: 1 } });
      expect(await c.get(A, "r2")).toBeDefined();
      expect(await c.count(A)).toBe(2);
    });

    it("rolls back everything on a DuplicateRecord", async () => {
      const { store } = await clockedStore();
      const c = store.collection<Doc>("file");
      await c.insert(A, { id: "dup", createdAt: 1, data: { n: 1 } });
      await expect(
        store.atomically([
          { op: "insert", kind: "file", scope: A, record: { id: "n1", createdAt: 2, data: { n: 2 } } },
          { op: "update", kind: "file", scope: A, id: "dup", data: { n: 5 } },
          { op: "insert", kind: "file", scope: A, record: { id: "dup", createdAt: 3, data: { n: 3 } } },
        ]),
      ).rejects.toBeInstanceOf(DuplicateRecord);
      expect(await c.get(A, "n1")).toBeUndefined();
      expect((await c.get(A, "dup"))!).toMatchObject({ version: 1, data: { n: 1 } });
      // The connection is usable afterwards (no transaction left open).
      await c.insert(A, { id: "after", createdAt: 4, data: { n: 4 } });
      expect(await c.count(A)).toBe(2);
    });

    it("treats an update of a missing record, or a conditional delete of one, as a conflict", async () => {
      const { store } = await clockedStore();
      const c = store.collection<Doc>("file");
      await expect(
        store.atomically([
          { op: "insert", kind: "file", scope: A, record: { id: "n1", createdAt: 2, data: { n: 2 } } },
          { op: "update", kind: "file", scope: A, id: "missing", data: { n: 5 } },
        ]),
      ).rejects.toBeInstanceOf(VersionConflict);
      await expect(
        store.atomically([
          { op: "insert", kind: "file", scope: A, record: { id: "n1", createdAt: 2, data: { n: 2 } } },
          { op: "delete", kind: "file", scope: A, id: "missing", expectVersion: 1 },
        ]),
      ).rejects.toBeInstanceOf(VersionConflict);
      expect(await c.count(A)).toBe(0);
      // An unconditional delete of a missing record is fine.
      await store.atomically([
        { op: "insert", kind: "file", scope: A, record: { id: "n1", createdAt: 2, data: { n: 2 } } },
        { op: "delete", kind: "file", scope: A, id: "missing" },
      ]);
      expect(await c.count(A)).toBe(1);
    });
  });

  describe("Collection.mutate", () => {
    it("writes what the change decides, conditional on the version it read, and returns its result", async () => {
      const { counters } = await counterStore();
      const result = await counters.mutate(scope, "c1", (cur) => ({ write: "update", data: { n: cur!.data.n + 5 }, tag: "counted", expiresAt: 9_999_999_999, result: cur!.data.n + 5 }));
      expect(result).toBe(5);
      const after = await counters.get(scope, "c1");
      expect(after).toMatchObject({ version: 2, tag: "counted", expiresAt: 9_999_999_999, data: { n: 5 } });
    });

    it("retries from the read after a concurrent change, and the change sees the newer record", async () => {
      const { counters } = await counterStore();
      const seen: Array<{ attempt: number; version: number; n: number }> = [];
      const result = await counters.mutate(scope, "c1", async (cur, attempt) => {
        seen.push({ attempt, version: cur!.version, n: cur!.data.n });
        // Another writer commits between this read and the write, once.
        if (attempt === 0) await counters.update(scope, "c1", { n: 100 });
        return { write: "update", data: { n: cur!.data.n + 1 }, result: cur!.data.n + 1 };
      });
      expect(seen).toEqual([
        { attempt: 0, version: 1, n: 0 },
        { attempt: 1, version: 2, n: 100 },
      ]);
      expect(result).toBe(101);
      expect((await counters.get(scope, "c1"))!.data).toEqual({ n: 101 });
    });

    it(`gives up after MUTATE_ATTEMPTS (${MUTATE_ATTEMPTS}) reads with the last VersionConflict`, async () => {
      const { counters } = await counterStore();
      let calls = 0;
      const run = counters.mutate(scope, "c1", async (cur) => {
        calls++;
        await counters.update(scope, "c1", { n: cur!.data.n + 1000 });
        return { write: "update", data: { n: -1 }, result: null };
      });
      await expect(run).rejects.toBeInstanceOf(VersionConflict);
      expect(calls).toBe(MUTATE_ATTEMPTS);
      // Only the concurrent writer's updates landed.
      expect((await counters.get(scope, "c1"))!.data.n).toBe(MUTATE_ATTEMPTS * 1000);
    });

    it("writes nothing when the change throws, and rethrows its error", async () => {
      const { store, counters } = await counterStore();
      const boom = new ApiError(400, "no", { param: "n" });
      await expect(counters.mutate(scope, "c1", () => {
        throw boom;
      })).rejects.toBe(boom);
      expect(await counters.get(scope, "c1")).toMatchObject({ version: 1, data: { n: 0 } });
      expect(await store.collection("other").count(scope)).toBe(0);
    });

    it("puts `also` ops in the same atomic write: all apply, or none do", async () => {
      const { store, counters } = await counterStore();
      const others = store.collection<{ x: number }>("other");
      await counters.mutate(scope, "c1", () => ({
        write: "update",
        data: { n: 1 },
        also: [{ op: "insert", kind: "other", scope, record: { id: "o1", createdAt: 1, data: { x: 1 } } }],
        result: undefined,
      }));
      expect((await others.get(scope, "o1"))!.data).toEqual({ x: 1 });
      expect((await counters.get(scope, "c1"))!.data).toEqual({ n: 1 });

      // A duplicate insert among the `also` ops fails the whole write: the update does not apply.
      await expect(
        counters.mutate(scope, "c1", () => ({
          write: "update",
          data: { n: 2 },
          also: [{ op: "insert", kind: "other", scope, record: { id: "o1", createdAt: 1, data: { x: 2 } } }],
          result: undefined,
        })),
      ).rejects.toBeInstanceOf(DuplicateRecord);
      expect((await counters.get(scope, "c1"))!.data).toEqual({ n: 1 });
      expect((await others.get(scope, "o1"))!.data).toEqual({ x: 1 });
    });

    it("retries when an `also` op's record changed concurrently", async () => {
      const { store, counters } = await counterStore();
      const others = store.collection<{ x: number }>("other");
      await others.insert(scope, { id: "o1", createdAt: 1, data: { x: 0 } });
      let calls = 0;
      await counters.mutate(scope, "c1", async () => {
        calls++;
        const other = (await others.get(scope, "o1"))!;
        if (calls === 1) await others.update(scope, "o1", { x: 50 });
        return { write: "update", data: { n: other.data.x }, also: [{ op: "update", kind: "other", scope, id: "o1", data: { x: other.data.x + 1 }, expectVersion: other.version }], result: undefined };
      });
      expect(calls).toBe(2);
      expect((await counters.get(scope, "c1"))!.data).toEqual({ n: 50 });
      expect((await others.get(scope, "o1"))!.data).toEqual({ x: 51 });
    });

    it("deletes conditionally on the version read", async () => {
      const { counters } = await counterStore();
      let calls = 0;
      const result = await counters.mutate(scope, "c1", async (cur, attempt) => {
        calls++;
        if (attempt === 0) await counters.update(scope, "c1", { n: 7 });
        return { write: "delete", result: cur!.data.n };
      });
      expect(calls).toBe(2);
      expect(result).toBe(7);
      expect(await counters.get(scope, "c1")).toBeUndefined();
    });

    it("hands an absent (or expired) record to the change as undefined; 'none' writes nothing", async () => {
      const store = await openStore();
      const counters = store.collection<Counter>("counter");
      await counters.insert(scope, { id: "gone", createdAt: 1, expiresAt: 1, data: { n: 3 } });
      const seen: unknown[] = [];
      for (const id of ["absent", "gone"]) {
        const result = await counters.mutate(scope, id, (cur) => {
          seen.push(cur);
          return { write: "none", result: "nothing" };
        });
        expect(result).toBe("nothing");
      }
      expect(seen).toEqual([undefined, undefined]);
      // Another project does not see the record either.
      await counters.insert(scope, { id: "mine", createdAt: 1, data: { n: 1 } });
      await counters.mutate({ projectId: "proj_b" }, "mine", (cur) => {
        expect(cur).toBeUndefined();
        return { write: "none", result: undefined };
      });
      // An absent record can be created through `also` ops.
      const created = await counters.mutate(scope, "absent", (cur) =>
        cur ? { write: "none", result: false } : { write: "delete", also: [{ op: "insert", kind: "counter", scope, record: { id: "absent", createdAt: 2, data: { n: 1 } } }], result: true },
      );
      expect(created).toBe(true);
      expect((await counters.get(scope, "absent"))!.data).toEqual({ n: 1 });
    });

    it("hands the write to `commit` instead of the store, retrying when it reports a conflict", async () => {
      const { store, counters } = await counterStore();
      const committed: WriteOp[][] = [];
      const result = await counters.mutate(
        scope,
        "c1",
        (cur) => ({ write: "update", data: { n: cur!.data.n + 1 }, also: [{ op: "delete", kind: "other", scope, id: "x" }], result: cur!.version }),
        {
          commit: async (ops) => {
            committed.push(ops);
            // The first commit loses a race; the second one writes through the store itself.
            if (committed.length === 1) throw new VersionConflict("counter", "c1");
            await store.atomically(ops);
          },
        },
      );
      expect(result).toBe(1);
      expect(committed).toHaveLength(2);
      expect(committed[1]).toEqual([
        { op: "update", kind: "counter", scope, id: "c1", data: { n: 1 }, expectVersion: 1 },
        { op: "delete", kind: "other", scope, id: "x" },
      ]);
      expect(await counters.get(scope, "c1")).toMatchObject({ version: 2, data: { n: 1 } });

      // A commit that writes elsewhere leaves the store alone.
      await counters.mutate(scope, "c1", () => ({ write: "delete", result: undefined }), { commit: async () => {} });
      expect(await counters.get(scope, "c1")).toMatchObject({ version: 2 });
    });
  });

  describe("Collection.sum", () => {
    it("sums a field over the project's live records, by parent and tag, and refuses a field that is not a plain name", async () => {
      let now = 1000;
      const store = await backend.open({ now: () => now });
      const files = store.collection<{ bytes?: number }>("file");
      const a = { projectId: "proj_a" };
      expect(await files.sum(a, "bytes")).toBe(0);
      await files.insert(a, { id: "f1", createdAt: 1, tag: "batch", data: { bytes: 10 } });
      await files.insert(a, { id: "f2", createdAt: 1, tag: "assistants", parentId: "p", data: { bytes: 5 } });
      await files.insert(a, { id: "f3", createdAt: 1, tag: "batch", expiresAt: 2000, data: { bytes: 100 } });
      await files.insert(a, { id: "f4", createdAt: 1, data: {} });
      await files.insert({ projectId: "proj_b" }, { id: "f5", createdAt: 1, data: { bytes: 1000 } });
      await store.collection<{ bytes: number }>("other").insert(a, { id: "o1", createdAt: 1, data: { bytes: 7 } });
      expect(await files.sum(a, "bytes")).toBe(115);
      expect(await files.sum(a, "bytes", { tag: "batch" })).toBe(110);
      expect(await files.sum(a, "bytes", { parentId: "p" })).toBe(5);
      now = 2000; // f3 has expired
      expect(await files.sum(a, "bytes")).toBe(15);
      await expect(files.sum(a, "bytes') OR 1=1 --")).rejects.toBeInstanceOf(RangeError);
    });
  });

  describe("record totals and the cap op", () => {
    type Sized = { bytes?: unknown; name?: string };
    async function sizedStore(now = () => 1000) {
      const store = await backend.open({ now, migrations: [SIZED_BYTES] });
      return { store, sized: store.collection<Sized>("sized") };
    }
    const total = (store: RecordStore, s: Scope = A) => store.total(s, "sized_bytes");

    it("follows every insert, update and delete of the kind, per project, and nothing else", async () => {
      const { store, sized } = await sizedStore();
      expect(await total(store)).toBe(0);
      await sized.insert(A, { id: "s1", createdAt: 1, data: { bytes: 10 } });
      await sized.insert(A, { id: "s2", createdAt: 1, data: { bytes: 20 } });
      await sized.insert(A, { id: "s3", createdAt: 1, data: { name: "no bytes" } });
      await sized.insert(A, { id: "s4", createdAt: 1, data: { bytes: "12" } }); // not a number: counts 0
      await sized.insert(B, { id: "s5", createdAt: 1, data: { bytes: 1000 } });
      await store.collection("other").insert(A, { id: "o1", createdAt: 1, data: { bytes: 7 } });
      expect(await total(store)).toBe(30);
      expect(await total(store, B)).toBe(1000);

      await sized.update(A, "s2", { bytes: 25 });
      await sized.update(A, "s1", { bytes: 10, name: "same bytes" });
      expect(await total(store)).toBe(35);
      await expect(sized.delete(A, "s1", { expectVersion: 1 })).rejects.toBeInstanceOf(VersionConflict);
      expect(await total(store)).toBe(35);
      expect(await sized.delete(A, "s1")).toBe(true);
      expect(await sized.delete(A, "s1")).toBe(false); // already gone: subtracts nothing
      await store.atomically([{ op: "delete", kind: "sized", scope: A, id: "s2" }, { op: "delete", kind: "sized", scope: A, id: "s2" }]);
      expect(await total(store)).toBe(0);
      expect(await total(store, B)).toBe(1000);
    });

    it("moves only with batches that apply, and stays exact through mutate's retries", async () => {
      const { store, sized } = await sizedStore();
      await sized.insert(A, { id: "s1", createdAt: 1, data: { bytes: 10 } });
      // Rolled back by the duplicate: the first insert's bytes go with it.
      await expect(
        store.atomically([
          { op: "insert", kind: "sized", scope: A, record: { id: "s2", createdAt: 1, data: { bytes: 50 } } },
          { op: "insert", kind: "sized", scope: A, record: { id: "s1", createdAt: 1, data: { bytes: 50 } } },
        ]),
      ).rejects.toBeInstanceOf(DuplicateRecord);
      expect(await total(store)).toBe(10);

      // Another writer changes s1 between mutate's read and write: the retry decides on 15.
      let interfered = false;
      await sized.mutate(A, "s1", async (cur) => {
        if (!interfered) {
          interfered = true;
          await sized.update(A, "s1", { bytes: 15 });
        }
        return { write: "update", data: { bytes: (cur!.data.bytes as number) + 1 }, result: undefined };
      });
      expect((await sized.get(A, "s1"))!.data.bytes).toBe(16);
      expect(await total(store)).toBe(16);
    });

    it("counts an expired record until it is deleted", async () => {
      let now = 1000;
      const { store, sized } = await sizedStore(() => now);
      await sized.insert(A, { id: "s1", createdAt: 1, expiresAt: 1500, data: { bytes: 40 } });
      now = 2000;
      expect(await sized.get(A, "s1")).toBeUndefined();
      expect(await total(store)).toBe(40);
      const [due] = await store.expired(now, 10);
      await store.atomically([{ op: "delete", kind: "sized", scope: A, id: due!.record.id }]);
      expect(await total(store)).toBe(0);
    });

    it("a cap op fails the whole batch when the total, with the batch applied, is over it", async () => {
      const { store, sized } = await sizedStore();
      await sized.insert(A, { id: "s1", createdAt: 1, data: { bytes: 60 } });
      const add = (id: string, bytes: number, max: number): WriteOp[] => [
        { op: "insert", kind: "sized", scope: A, record: { id, createdAt: 1, data: { bytes } } },
        { op: "insert", kind: "other", scope: A, record: { id: `o-${id}`, createdAt: 1, data: {} } },
        { op: "cap", scope: A, total: "sized_bytes", max },
      ];
      await store.atomically(add("s2", 40, 100)); // exactly at the cap
      expect(await total(store)).toBe(100);
      const refused = await store.atomically(add("s3", 1, 100)).catch((e: unknown) => e);
      expect(refused).toBeInstanceOf(TotalOverCap);
      expect(refused).toMatchObject({ total: "sized_bytes", projectId: "proj_a", value: 101, max: 100 });
      expect(await sized.get(A, "s3")).toBeUndefined();
      expect(await store.collection("other").get(A, "o-s3")).toBeUndefined();
      expect(await total(store)).toBe(100);
      // A batch that frees room and adds in one write is judged on the result.
      await store.atomically([{ op: "delete", kind: "sized", scope: A, id: "s1" }, ...add("s3", 50, 100)]);
      expect(await total(store)).toBe(90);
      // Another project's cap is its own.
      await store.atomically([{ op: "insert", kind: "sized", scope: B, record: { id: "b1", createdAt: 1, data: { bytes: 100 } } }, { op: "cap", scope: B, total: "sized_bytes", max: 100 }]);
    });

    it("batches racing for the last room: the total never passes the cap", async () => {
      const { store } = await sizedStore();
      const results = await Promise.allSettled(
        Array.from({ length: 24 }, (_, i) =>
          store.atomically([
            { op: "insert", kind: "sized", scope: A, record: { id: `r${i}`, createdAt: 1, data: { bytes: 10 } } },
            { op: "cap", scope: A, total: "sized_bytes", max: 95 },
          ]),
        ),
      );
      expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(9);
      for (const r of results) if (r.status === "rejected") expect(r.reason).toBeInstanceOf(TotalOverCap);
      expect(await total(store)).toBe(90);
      expect(await store.collection("sized").count(A)).toBe(9);
    });

    it("its migration counts the records already stored", async () => {
      const store = await backend.open({});
      const sized = store.collection<Sized>("sized");
      await sized.insert(A, { id: "s1", createdAt: 1, data: { bytes: 10 } });
      await sized.insert(A, { id: "s2", createdAt: 1, data: { bytes: 5 } });
      await sized.insert(B, { id: "s3", createdAt: 1, data: { bytes: 7 } });
      await backend.migrate(store, [SIZED_BYTES]);
      expect(await total(store)).toBe(15);
      expect(await total(store, B)).toBe(7);
      await sized.delete(A, "s1");
      expect(await total(store)).toBe(5);
    });
  });
});

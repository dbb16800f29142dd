import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  BlobNotFound,
  BlobTooLarge,
  CursorNotFound,
  DiskBlobStore,
  DuplicateRecord,
  InvalidBlobKey,
  openSqliteRecordStore,
  openStorage,
  registerMigration,
  SqliteRecordStore,
  VersionConflict,
  type Scope,
  type SqliteRecordStoreOptions,
} from "../../src/storage/index.js";
import { undoAfterEach } from "../shared/cleanup.js";

const { cleanups, tempDir } = undoAfterEach("atrium-storage-");

function openStore(file: string, opts?: SqliteRecordStoreOptions): SqliteRecordStore {
  const store = openSqliteRecordStore(file, opts);
  cleanups.push(() => store.close());
  return store;
}

/** A store whose clock the test controls. */
function clockedStore(start = 1_000) {
  const clock = { now: start };
  const store = openStore(path.join(tempDir(), "t.db"), { now: () => clock.now });
  return { store, clock };
}

const A: Scope = { projectId: "proj_a" };
const B: Scope = { projectId: "proj_b" };

type Doc = { n: number; name?: string };

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

function md5(buf: Buffer): string {
  return createHash("md5").update(buf).digest("hex");
}

function filesUnder(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return (fs.readdirSync(dir, { recursive: true }) as string[]).filter((f) =>
    fs.statSync(path.join(dir, f)).isFile(),
  );
}

describe("SqliteRecordStore: basic CRUD", () => {
  it("inserts, gets, updates (bumping version) and deletes", async () => {
    const { store } = clockedStore();
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
    const { store } = clockedStore();
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
    const { store } = clockedStore();
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
    const { store } = clockedStore();
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
    const { store } = clockedStore();
    expect(await store.getMeta("k")).toBeUndefined();
    await store.setMeta("k", "v1");
    await store.setMeta("k", "v2");
    expect(await store.getMeta("k")).toBe("v2");
  });
});

describe("SqliteRecordStore: tenants are walls", () => {
  it("never shows, changes or deletes another project's records", async () => {
    const { store } = clockedStore();
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

describe("SqliteRecordStore: expiry", () => {
  it("hides records at or past expiresAt from get, list, count and update", async () => {
    const { store, clock } = clockedStore(1_000);
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
    const { store, clock } = clockedStore(1_000);
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

describe("SqliteRecordStore: lists", () => {
  // 7 records; several share created_at so only insertion order can break the tie.
  const CREATED = [10, 20, 20, 20, 30, 30, 40];
  async function seed(store: SqliteRecordStore) {
    const c = store.collection<Doc>("item");
    for (let i = 0; i < CREATED.length; i++) {
      // Ids deliberately sort against insertion order, so an ORDER BY id would show.
      await c.insert(A, { id: `item-${9 - i}`, createdAt: CREATED[i]!, data: { n: i } });
    }
    return c;
  }
  const ids = (page: { records: Array<{ data: Doc }> }) => page.records.map((r) => r.data.n);

  it("orders by (createdAt, insertion order) ascending and descending", async () => {
    const { store } = clockedStore();
    const c = await seed(store);
    expect(ids(await c.list(A, { limit: 100, order: "asc" }))).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(ids(await c.list(A, { limit: 100, order: "desc" }))).toEqual([6, 5, 4, 3, 2, 1, 0]);
    // Insert an older record last: createdAt wins over insertion order.
    await c.insert(A, { id: "late-old", createdAt: 5, data: { n: 7 } });
    expect(ids(await c.list(A, { limit: 100, order: "asc" }))).toEqual([7, 0, 1, 2, 3, 4, 5, 6]);
  });

  it("keeps insertion order monotonic after the newest record is deleted and the store reopened", async () => {
    const dir = tempDir();
    const file = path.join(dir, "m.db");
    let store = openSqliteRecordStore(file);
    const c = store.collection<Doc>("item");
    await c.insert(A, { id: "a", createdAt: 1, data: { n: 0 } });
    await c.insert(A, { id: "b", createdAt: 1, data: { n: 1 } });
    const seqOf = (db: SqliteRecordStore["db"], id: string) =>
      db.prepare("SELECT seq FROM records WHERE kind = 'item' AND id = ?").pluck().get(id) as number;
    const deletedSeq = seqOf(store.db, "b");
    await c.delete(A, "b");
    await store.close();
    store = openStore(file);
    const c2 = store.collection<Doc>("item");
    await c2.insert(A, { id: "c", createdAt: 1, data: { n: 2 } });
    await c2.insert(A, { id: "d", createdAt: 1, data: { n: 3 } });
    expect((await c2.list(A, { limit: 10, order: "asc" })).records.map((r) => r.id)).toEqual(["a", "c", "d"]);
    expect((await c2.list(A, { limit: 10, order: "desc" })).records.map((r) => r.id)).toEqual(["d", "c", "a"]);
    // Never reused, so seq can also serve as a change cursor.
    expect(seqOf(store.db, "c")).toBeGreaterThan(deletedSeq);
  });

  it("pages forward with `after` and reports hasMore, in both orders", async () => {
    const { store } = clockedStore();
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
    const { store } = clockedStore();
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
    const { store } = clockedStore();
    const c = await seed(store);
    expect(ids(await c.list(A, { limit: 10, order: "asc", after: "item-8", before: "item-4" }))).toEqual([2, 3, 4]);
    const p = await c.list(A, { limit: 2, order: "desc", after: "item-4", before: "item-8" });
    expect(ids(p)).toEqual([4, 3]);
    expect(p.hasMore).toBe(true);
  });

  it("throws CursorNotFound for an unknown cursor, another kind's id, or a deleted record", async () => {
    const { store } = clockedStore();
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
    const { store } = clockedStore();
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

  it("serves every list shape from an index, without sorting", async () => {
    const { store } = clockedStore();
    await seed(store);
    const plan = (sql: string, ...args: unknown[]) =>
      (store.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...args) as Array<{ detail: string }>).map((r) => r.detail).join("; ");
    const base = "SELECT * FROM records WHERE kind = 'item' AND project_id = 'a'";
    for (const filter of ["", " AND parent_id = ''", " AND tag = 't'"]) {
      for (const dir of ["ASC", "DESC"]) {
        const p = plan(`${base}${filter} AND (created_at, seq) > (1, 1) ORDER BY created_at ${dir}, seq ${dir} LIMIT 3`);
        expect(p).toMatch(/USING INDEX records_by/);
        expect(p).not.toMatch(/TEMP B-TREE/);
      }
    }
  });
});

describe("SqliteRecordStore: atomically", () => {
  it("applies every op of a batch", async () => {
    const { store } = clockedStore();
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
    const { store } = clockedStore();
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
    const { store } = clockedStore();
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
    const { store } = clockedStore();
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

describe("SqliteRecordStore: schema and migrations", () => {
  it("opens in WAL mode with synchronous=NORMAL and a busy timeout", () => {
    const store = openStore(path.join(tempDir(), "p.db"));
    expect(store.db.pragma("journal_mode", { simple: true })).toBe("wal");
    expect(store.db.pragma("synchronous", { simple: true })).toBe(1);
    expect(store.db.pragma("busy_timeout", { simple: true })).toBeGreaterThan(0);
  });

  it("applies each migration once, in order, across reopen; records persist", async () => {
    const dir = tempDir();
    const file = path.join(dir, "mig.db");
    const migrations = [
      { id: "test/0001", sql: "CREATE TABLE extra (v INTEGER); INSERT INTO extra VALUES (1);" },
      { id: "test/0002", sql: "INSERT INTO extra VALUES (2);" },
    ];
    let store = openSqliteRecordStore(file, { migrations });
    await store.collection<Doc>("file").insert(A, { id: "f", createdAt: 1, data: { n: 1 } });
    await store.setMeta("boot", "done");
    await store.close();

    store = openSqliteRecordStore(file, { migrations: [...migrations, { id: "test/0003", sql: "INSERT INTO extra VALUES (3);" }] });
    try {
      expect(store.db.prepare("SELECT v FROM extra ORDER BY rowid").pluck().all()).toEqual([1, 2, 3]);
      expect(store.appliedMigrations().filter((id) => id.startsWith("test/"))).toEqual(["test/0001", "test/0002", "test/0003"]);
      expect((await store.collection<Doc>("file").get(A, "f"))!.data).toEqual({ n: 1 });
      expect(await store.getMeta("boot")).toBe("done");

      // Applying at runtime is idempotent too.
      store.applyMigrations(migrations);
      expect(store.db.prepare("SELECT COUNT(*) FROM extra").pluck().get()).toBe(3);
    } finally {
      await store.close();
    }
  });

  it("a failing migration leaves no trace and stops the open", () => {
    const file = path.join(tempDir(), "bad.db");
    expect(() =>
      openSqliteRecordStore(file, {
        migrations: [{ id: "test/bad", sql: "CREATE TABLE half (v INTEGER); INSERT INTO nowhere VALUES (1);" }],
      }),
    ).toThrow();
    const store = openStore(file);
    expect(store.appliedMigrations()).not.toContain("test/bad");
    expect(store.db.prepare("SELECT name FROM sqlite_master WHERE name = 'half'").get()).toBeUndefined();
  });

  it("registerMigration applies to stores opened later, once", async () => {
    registerMigration("test/registered", "CREATE TABLE registered_tbl (v INTEGER); INSERT INTO registered_tbl VALUES (7);");
    registerMigration("test/registered", "CREATE TABLE registered_tbl (v INTEGER); INSERT INTO registered_tbl VALUES (7);");
    expect(() => registerMigration("test/registered", "SELECT 1")).toThrow();
    const file = path.join(tempDir(), "reg.db");
    await openSqliteRecordStore(file).close();
    const store = openStore(file);
    expect(store.db.prepare("SELECT v FROM registered_tbl").pluck().all()).toEqual([7]);
  });
});

describe("DiskBlobStore", () => {
  function blobStore() {
    const root = tempDir();
    return { root, blobs: new DiskBlobStore(root) };
  }

  it("puts, gets, reads ranges, sizes, overwrites and deletes", async () => {
    const { blobs } = blobStore();
    const data = randomBytes(3 * 1024 * 1024 + 123);
    const info = await blobs.put("file-abc", Readable.from([data.subarray(0, 1000), data.subarray(1000)]), { md5: true });
    expect(info).toEqual({ bytes: data.length, md5: md5(data) });
    expect(await blobs.size("file-abc")).toBe(data.length);

    const chunks: Buffer[] = [];
    for await (const c of blobs.get("file-abc")) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
    expect(Math.max(...chunks.map((c) => c.length))).toBe(1024 * 1024); // 1 MiB reads

    expect((await readAll(blobs.get("file-abc", { start: 10, end: 19 }))).equals(data.subarray(10, 20))).toBe(true);
    expect((await readAll(blobs.get("file-abc", { start: 0, end: 0 }))).equals(data.subarray(0, 1))).toBe(true);
    const tail = await readAll(blobs.get("file-abc", { start: data.length - 5, end: data.length + 100 }));
    expect(tail.equals(data.subarray(data.length - 5))).toBe(true);
    expect(() => blobs.get("file-abc", { start: 5, end: 4 })).toThrow(RangeError);

    // An async iterable of Uint8Array works too, and overwrites in place.
    async function* gen() {
      yield new TextEncoder().encode("hello ");
      yield new TextEncoder().encode("world");
    }
    expect(await blobs.put("file-abc", gen(), { md5: true })).toEqual({ bytes: 11, md5: md5(Buffer.from("hello world")) });
    expect((await readAll(blobs.get("file-abc"))).toString()).toBe("hello world");

    // MD5 is opt-in for put (it is half an upload's CPU); without it only the size comes back.
    expect(await blobs.put("empty", Readable.from([]))).toEqual({ bytes: 0 });
    expect(await blobs.size("empty")).toBe(0);

    await blobs.delete("file-abc");
    expect(await blobs.size("file-abc")).toBeUndefined();
    await blobs.delete("file-abc"); // absent is fine
  });

  it("lays blobs out as blobs/<2-char shard>/<key>, spreading common prefixes", async () => {
    const { root, blobs } = blobStore();
    for (let i = 0; i < 20; i++) await blobs.put(`file-${i}`, Readable.from([Buffer.from(String(i))]));
    const files = filesUnder(path.join(root, "blobs"));
    expect(files).toHaveLength(20);
    for (const f of files) expect(f).toMatch(/^[0-9a-f]{2}[\\/]file-\d+$/);
    expect(new Set(files.map((f) => f.slice(0, 2))).size).toBeGreaterThan(5);
    expect(blobs.pathOf("file-3")).toBe(path.join(root, "blobs", files.find((f) => f.endsWith("file-3"))!));
    expect(filesUnder(path.join(root, "tmp"))).toEqual([]);
  });

  it("reports a missing blob as BlobNotFound on the stream, and size() as undefined", async () => {
    const { blobs } = blobStore();
    expect(await blobs.size("nope")).toBeUndefined();
    const stream = blobs.get("nope");
    const err = await readAll(stream).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobNotFound);
    expect(err).toMatchObject({ key: "nope" });
  });

  it("over maxBytes: stops reading, destroys the source, leaves nothing in blobs/ or tmp/", async () => {
    const { root, blobs } = blobStore();
    let produced = 0;
    // Endless source: only an early stop can end this test.
    const source = new Readable({
      read() {
        produced += 64 * 1024;
        this.push(Buffer.alloc(64 * 1024, 1));
      },
    });
    const err = await blobs.put("big", source, { maxBytes: 1_000_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobTooLarge);
    expect((err as BlobTooLarge).limit).toBe(1_000_000);
    expect(source.destroyed).toBe(true);
    expect(produced).toBeLessThan(16 * 1024 * 1024);
    expect(await blobs.size("big")).toBeUndefined();
    expect(filesUnder(path.join(root, "blobs"))).toEqual([]);
    expect(fs.readdirSync(path.join(root, "tmp"))).toEqual([]);

    // Exactly at the limit is allowed.
    const exact = await blobs.put("exact", Readable.from([Buffer.alloc(600_000), Buffer.alloc(400_000)]), { maxBytes: 1_000_000 });
    expect(exact.bytes).toBe(1_000_000);
  });

  it("a source that fails midway leaves nothing behind and keeps the previous content", async () => {
    const { root, blobs } = blobStore();
    await blobs.put("doc", Readable.from([Buffer.from("old content")]));
    async function* failing() {
      yield Buffer.alloc(2 * 1024 * 1024, 7);
      yield Buffer.alloc(1024, 7);
      throw new Error("client went away");
    }
    await expect(blobs.put("doc", failing())).rejects.toThrow("client went away");
    await expect(blobs.put("fresh", failing())).rejects.toThrow("client went away");
    expect((await readAll(blobs.get("doc"))).toString()).toBe("old content");
    expect(await blobs.size("fresh")).toBeUndefined();
    expect(filesUnder(path.join(root, "blobs")).map((f) => path.basename(f))).toEqual(["doc"]);
    expect(fs.readdirSync(path.join(root, "tmp"))).toEqual([]);

    // Same with a Readable that is destroyed with an error.
    const r = new Readable({ read() {} });
    r.push(Buffer.alloc(1000));
    setTimeout(() => r.destroy(new Error("reset")), 10);
    await expect(blobs.put("fresh", r)).rejects.toThrow("reset");
    expect(fs.readdirSync(path.join(root, "tmp"))).toEqual([]);
    expect(await blobs.size("fresh")).toBeUndefined();
  });

  it("concatenates parts in order with the right bytes and md5", async () => {
    const { root, blobs } = blobStore();
    const parts = [randomBytes(1_500_000), randomBytes(10), Buffer.alloc(0), randomBytes(2 * 1024 * 1024 + 1)];
    for (let i = 0; i < parts.length; i++) await blobs.put(`part-${i}`, Readable.from([parts[i]!]));
    const whole = Buffer.concat(parts);
    const info = await blobs.concat("upload-1", ["part-0", "part-1", "part-2", "part-3"]);
    expect(info).toEqual({ bytes: whole.length, md5: md5(whole) });
    expect((await readAll(blobs.get("upload-1"))).equals(whole)).toBe(true);
    // Reordered and repeated parts are honoured.
    const info2 = await blobs.concat("upload-2", ["part-1", "part-0", "part-1"]);
    const whole2 = Buffer.concat([parts[1]!, parts[0]!, parts[1]!]);
    expect(info2).toEqual({ bytes: whole2.length, md5: md5(whole2) });
    expect((await readAll(blobs.get("upload-2"))).equals(whole2)).toBe(true);

    // A missing part fails the whole concat and leaves nothing.
    await expect(blobs.concat("upload-3", ["part-0", "missing"])).rejects.toBeInstanceOf(BlobNotFound);
    expect(await blobs.size("upload-3")).toBeUndefined();
    expect(fs.readdirSync(path.join(root, "tmp"))).toEqual([]);
    expect(await blobs.concat("none", [])).toEqual({ bytes: 0, md5: md5(Buffer.alloc(0)) });
  });

  it("recover() removes leftovers of interrupted writes from tmp/ and keeps blobs", async () => {
    const { root, blobs } = blobStore();
    await blobs.put("kept", Readable.from([Buffer.from("x")]));
    fs.writeFileSync(path.join(root, "tmp", "kept.deadbeef"), "partial");
    fs.mkdirSync(path.join(root, "tmp", "odd-dir"));
    fs.writeFileSync(path.join(root, "tmp", "odd-dir", "f"), "partial");
    await blobs.recover();
    expect(fs.readdirSync(path.join(root, "tmp"))).toEqual([]);
    expect((await readAll(blobs.get("kept"))).toString()).toBe("x");
  });

  it("rejects keys that could escape the blob directory", async () => {
    const { root, blobs } = blobStore();
    const bad = ["", ".", "..", "../x", "a/b", "a\\b", "..\\x", "/etc/passwd", ".hidden", "a..b", "a\0b", "x".repeat(201), "é"];
    for (const key of bad) {
      await expect(blobs.put(key, Readable.from([Buffer.from("x")])), key).rejects.toBeInstanceOf(InvalidBlobKey);
      expect(() => blobs.get(key), key).toThrow(InvalidBlobKey);
      await expect(blobs.size(key), key).rejects.toBeInstanceOf(InvalidBlobKey);
      await expect(blobs.delete(key), key).rejects.toBeInstanceOf(InvalidBlobKey);
    }
    await blobs.put("ok", Readable.from([Buffer.from("x")]));
    await expect(blobs.concat("ok2", ["ok", "../ok"])).rejects.toBeInstanceOf(InvalidBlobKey);
    await expect(blobs.concat("../ok2", ["ok"])).rejects.toBeInstanceOf(InvalidBlobKey);
    expect(filesUnder(root).sort()).toEqual([path.relative(root, blobs.pathOf("ok"))]);
    // Ordinary ids are fine.
    for (const key of ["file-abc", "file_ABC.part.3", "x".repeat(200), "-dash"]) {
      await blobs.put(key, Readable.from([Buffer.from(key)]));
      expect((await readAll(blobs.get(key))).toString()).toBe(key);
    }
  });
});

describe("openStorage", () => {
  it("creates the data directory, database and blob directories, and cleans tmp/", async () => {
    const dir = path.join(tempDir(), "nested", "data");
    let s = await openStorage(dir);
    await s.records.collection<Doc>("file").insert(A, { id: "f", createdAt: 1, data: { n: 1 } });
    await s.blobs.put("file-f", Readable.from([Buffer.from("bytes")]));
    await s.records.close();
    expect(fs.existsSync(path.join(dir, "atrium.db"))).toBe(true);
    expect(fs.statSync(path.join(dir, "blobs")).isDirectory()).toBe(true);
    fs.writeFileSync(path.join(dir, "tmp", "crashed.0001"), "partial");

    s = await openStorage(dir);
    cleanups.push(() => s.records.close());
    expect(fs.readdirSync(path.join(dir, "tmp"))).toEqual([]);
    expect((await s.records.collection<Doc>("file").get(A, "f"))!.data).toEqual({ n: 1 });
    expect((await readAll(s.blobs.get("file-f"))).toString()).toBe("bytes");
  });
});

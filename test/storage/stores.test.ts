import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import {
  BlobNotFound,
  BlobTooLarge,
  DiskBlobStore,
  InvalidBlobKey,
  openSqliteRecordStore,
  openStorage,
  registerMigration,
  SqliteRecordStore,
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

const A: Scope = { projectId: "proj_a" };

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

// The RecordStore cases every store must pass are in record-store-contract.test.ts; these are the
// embedded store's own: SQLite's settings, its rowid sequence and its query plans.
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

  it("serves every list shape from an index, without sorting", async () => {
    const store = openStore(path.join(tempDir(), "t.db"));
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

  // What every blob store does is in blob-store-contract.test.ts; these are the disk store's own.
  it("reads in 1 MiB chunks", async () => {
    const { blobs } = blobStore();
    const data = randomBytes(3 * 1024 * 1024 + 123);
    await blobs.put("file-abc", Readable.from([data]));
    const chunks: Buffer[] = [];
    for await (const c of blobs.get("file-abc")) chunks.push(c as Buffer);
    expect(Buffer.concat(chunks).equals(data)).toBe(true);
    expect(Math.max(...chunks.map((c) => c.length))).toBe(1024 * 1024);
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

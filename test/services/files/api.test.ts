import { pino } from "pino";
// FilesApi: what other areas do with Files, on a real store (SQLite + disk blobs).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Readable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError } from "../../../src/common/errors.js";
import { filesApi, MAX_FILE_BYTES, type FilesApi } from "../../../src/services/files/index.js";
import { openStorage, type Scope, type Storage } from "../../../src/storage/index.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

const scope: Scope = { projectId: "proj_a" };
const other: Scope = { projectId: "proj_b" };

async function setup(): Promise<{ files: FilesApi; storage: Storage; deleted: string[] }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-files-api-"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  const storage = await openStorage(dir);
  cleanups.push(() => storage.records.close());
  const deleted: string[] = [];
  const files = filesApi({
    records: storage.records,
    blobs: storage.blobs,
    clock: { now: () => 1_700_000_000 },
    events: { fileDeleted: async (_s, id) => void deleted.push(id) },
    log: pino({ level: "silent" }),
  });
  return { files, storage, deleted };
}

async function text(stream: Readable): Promise<string> {
  const parts: Buffer[] = [];
  for await (const c of stream) parts.push(c as Buffer);
  return Buffer.concat(parts).toString();
}

describe("FilesApi", () => {
  it("creates a File from bytes and from a stream, and shows it only to its project", async () => {
    const { files } = await setup();
    const a = await files.createFromBytes(scope, { filename: "a.jsonl", purpose: "batch", bytes: Buffer.from("{}\n") });
    expect(a).toMatchObject({ bytes: 3, filename: "a.jsonl", purpose: "batch", mimeType: "application/jsonl", createdAt: 1_700_000_000, expiresAt: null, status: "processed", blobKey: a.id });
    expect(a.id).toMatch(/^file-/);
    const b = await files.createFromStream(scope, { filename: "b.txt", purpose: "assistants", expiresAt: 4_000_000_000, source: Readable.from([Buffer.from("hello "), Buffer.from("world")]) });
    expect(await files.get(scope, b.id)).toEqual(b);
    expect(await files.find(other, b.id)).toBeUndefined();
    await expect(files.get(other, b.id, "input_file_id")).rejects.toMatchObject({ status: 404, param: "input_file_id" });
    const page = await files.list(scope, { limit: 10, order: "asc", tag: "assistants" });
    expect(page.records.map((r) => r.data)).toEqual([b]);
  });

  it("opens a File's bytes (a range too) and reads them whole under a maximum", async () => {
    const { files } = await setup();
    const f = await files.createFromBytes(scope, { filename: "n.txt", purpose: "assistants", bytes: Buffer.from("0123456789") });
    expect(await text(await files.open(scope, f.id))).toBe("0123456789");
    expect(await text(await files.open(scope, f, { start: 2, end: 4 }))).toBe("234");
    expect((await files.readAll(scope, f.id, { maxBytes: 10 })).toString()).toBe("0123456789");
    const tooBig = files.readAll(scope, f, { maxBytes: 9, param: "input_reference.file_id" });
    await expect(tooBig).rejects.toBeInstanceOf(ApiError);
    await expect(tooBig).rejects.toMatchObject({ status: 413, param: "input_reference.file_id", errorCode: "file_too_large" });
    await expect(files.readAll(scope, "file-nope", { maxBytes: 1 })).rejects.toMatchObject({ status: 404 });
  });

  it("prepares a File as ops for the caller's atomic write: it exists only when that write applies", async () => {
    const { files, storage } = await setup();
    const id = files.newId();
    const bytes = await files.writeContent(id, Readable.from([Buffer.from("out\n")]));
    const { file, ops } = files.prepare(scope, id, bytes, { filename: "batch_output.jsonl", purpose: "batch_output", expiresAt: 4_000_000_000 });
    expect(await files.find(scope, id)).toBeUndefined();
    // The caller's write fails (its own record is a duplicate): no File.
    await storage.records.collection("mine").insert(scope, { id: "x", createdAt: 1, data: {} });
    await expect(storage.records.atomically([...ops, { op: "insert", kind: "mine", scope, record: { id: "x", createdAt: 1, data: {} } }])).rejects.toThrow();
    expect(await files.find(scope, id)).toBeUndefined();
    await storage.records.atomically(ops);
    expect(await files.get(scope, id)).toEqual(file);
    expect(file).toMatchObject({ bytes: 4, mimeType: "application/jsonl", expiresAt: 4_000_000_000 });
    expect(await text(await files.open(scope, id))).toBe("out\n");
    // Content written for a File never recorded is discarded by the caller.
    const orphan = files.newId();
    await files.writeContent(orphan, Readable.from([Buffer.from("x")]));
    await files.discardContent(orphan);
    expect(await storage.blobs.size(orphan)).toBeUndefined();
  });

  it("refuses content over its maximum with a 413 and keeps nothing", async () => {
    const { files, storage } = await setup();
    const id = files.newId();
    await expect(files.writeContent(id, Readable.from([Buffer.alloc(11)]), { maxBytes: 10 })).rejects.toMatchObject({ status: 413, param: "file", errorCode: "file_too_large" });
    expect(await storage.blobs.size(id)).toBeUndefined();
    expect(MAX_FILE_BYTES).toBe(512 * 1024 * 1024);
  });

  it("deletes a File (404 when absent), tells the other areas, and frees its bytes only after the last share", async () => {
    const { files, storage, deleted } = await setup();
    const f = await files.createFromBytes(scope, { filename: "s.txt", purpose: "assistants", bytes: Buffer.from("shared") });
    const { ops } = await files.share(scope, f.id, "cfile_1", { containerId: "cntr_1" });
    await storage.records.atomically(ops);
    await files.delete(scope, f.id);
    expect(deleted).toEqual([f.id]);
    expect(await files.find(scope, f.id)).toBeUndefined();
    // The share still holds the bytes.
    expect(await storage.blobs.size(f.blobKey)).toBe(6);
    await storage.records.atomically([files.unshareOp(scope, "cfile_1")]);
    await files.release(scope, f.blobKey);
    expect(await storage.blobs.size(f.blobKey)).toBeUndefined();
    await expect(files.delete(scope, f.id)).rejects.toMatchObject({ status: 404, param: "file_id" });
  });

  it("fails a share write when the File changed or went after share() read it", async () => {
    const { files, storage } = await setup();
    const f = await files.createFromBytes(scope, { filename: "s.txt", purpose: "assistants", bytes: Buffer.from("x") });
    const { ops } = await files.share(scope, f.id, "cfile_2", { containerId: "cntr_1" });
    await files.delete(scope, f.id);
    const write = storage.records.atomically(ops).catch((e: unknown) => e);
    expect(files.fileConflict(await write)).toBe(f.id);
    expect(files.fileConflict(new Error("other"))).toBeUndefined();
    await expect(files.share(scope, f.id, "cfile_3", { containerId: "cntr_1" }, "file_ids[0]")).rejects.toMatchObject({ status: 404, param: "file_ids[0]" });
  });
});

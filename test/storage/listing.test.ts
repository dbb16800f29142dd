// BlobStore.list(prefix) (RecordStore.present is in the record-store contract): what the orphan-blob sweeper
// (src/jobs/orphan-blobs.ts) is built on.
import * as fs from "node:fs";
import * as path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { DiskBlobStore, type BlobEntry } from "../../src/storage/index.js";
import { undoAfterEach } from "../shared/cleanup.js";

const { cleanups, tempDir } = undoAfterEach("atrium-listing-");

async function collect(it: AsyncIterable<BlobEntry>): Promise<BlobEntry[]> {
  const out: BlobEntry[] = [];
  for await (const e of it) out.push(e);
  return out.sort((a, b) => a.key.localeCompare(b.key));
}

describe("DiskBlobStore.list", () => {
  it("lists every blob with its size and write time, by prefix, and never a write in flight", async () => {
    const root = tempDir();
    const blobs = new DiskBlobStore(root);
    expect(await collect(blobs.list())).toEqual([]);
    const before = Date.now();
    for (let i = 0; i < 40; i++) await blobs.put(`file-${i}`, Readable.from([Buffer.alloc(i)]));
    await blobs.put("part_1", Readable.from([Buffer.from("abc")]));
    // A temp file (an upload still streaming) and a stray file in blobs/ are not blobs.
    fs.writeFileSync(path.join(root, "tmp", "file-99.0123abcd"), "partial");
    fs.writeFileSync(path.join(root, "blobs", "stray"), "x");

    const all = await collect(blobs.list());
    expect(all.map((e) => e.key)).toEqual([...Array.from({ length: 40 }, (_, i) => `file-${i}`), "part_1"].sort());
    const f7 = all.find((e) => e.key === "file-7")!;
    expect(f7.bytes).toBe(7);
    expect(f7.modifiedAt).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000);
    expect(f7.modifiedAt).toBeLessThanOrEqual(Date.now());

    const old = new Date(1_600_000_000_000);
    fs.utimesSync(blobs.pathOf("part_1"), old, old);
    expect(await collect(blobs.list("part_"))).toEqual([{ key: "part_1", bytes: 3, modifiedAt: 1_600_000_000_000 }]);
    expect((await collect(blobs.list("file-1"))).map((e) => e.key)).toEqual(["file-1", ...Array.from({ length: 10 }, (_, i) => `file-1${i}`)].sort());
  });

  it("lists nothing (no error) when blobs/ was removed", async () => {
    const root = tempDir();
    const blobs = new DiskBlobStore(root);
    await blobs.put("a", Readable.from([Buffer.from("x")]));
    fs.rmSync(path.join(root, "blobs"), { recursive: true });
    expect(await collect(blobs.list())).toEqual([]);
  });
});


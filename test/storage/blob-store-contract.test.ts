// The BlobStore contract: the same cases against every store (the disk one, the embedded default;
// S3 on a real OpenStack Swift with s3api, the scale-out one). Disk-only checks (shard layout, the
// tmp/ folder) stay in stores.test.ts. `leftovers()` is each store's own view of what a failed
// write could leave behind: temp files on disk, unfinished multipart uploads in S3.
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { ListMultipartUploadsCommand } from "@aws-sdk/client-s3";
import { BlobNotFound, BlobTooLarge, DiskBlobStore, InvalidBlobKey, type BlobEntry, type BlobStore } from "../../src/storage/index.js";
import { openS3BlobStore, parseS3Url, S3BlobStore } from "../../src/storage/s3-blobs.js";
import { undoAfterEach } from "../shared/cleanup.js";
import { hasSwift, SWIFT_INSTALL_HINT, testSwift } from "../shared/swift.js";

const { cleanups, tempDir } = undoAfterEach("atrium-blob-contract-");

interface Backend {
  name: string;
  available: boolean;
  open(): Promise<{ blobs: BlobStore; leftovers(): Promise<string[]> }>;
}

const backends: Backend[] = [
  {
    name: "disk",
    available: true,
    async open() {
      const root = tempDir();
      return { blobs: new DiskBlobStore(root), leftovers: async () => fs.readdirSync(path.join(root, "tmp")) };
    },
  },
  {
    name: "S3 (Swift)",
    available: hasSwift(),
    async open() {
      const swift = await testSwift();
      const bucket = await swift.newBucket("contract");
      const blobs = await openS3BlobStore(`s3://${bucket}/atrium`, swift.s3Env(bucket));
      cleanups.push(() => blobs.close());
      const leftovers = async () => {
        const r = await blobs.client.send(new ListMultipartUploadsCommand({ Bucket: bucket }));
        return (r.Uploads ?? []).map((u) => u.Key!);
      };
      return { blobs, leftovers };
    },
  },
];

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

const md5 = (buf: Buffer) => createHash("md5").update(buf).digest("hex");

async function keys(list: AsyncIterable<BlobEntry>): Promise<string[]> {
  const out: string[] = [];
  for await (const e of list) out.push(e.key);
  return out.sort();
}

describe.each(backends)("BlobStore contract on $name", (backend) => {
  if (!backend.available) {
    it.skip(`needs Swift: ${SWIFT_INSTALL_HINT}`, () => {});
    return;
  }

  it("puts, gets, reads ranges, sizes, overwrites and deletes", async () => {
    const { blobs } = await backend.open();
    const data = randomBytes(3 * 1024 * 1024 + 123);
    const info = await blobs.put("file-abc", Readable.from([data.subarray(0, 1000), data.subarray(1000)]), { md5: true });
    expect(info).toEqual({ bytes: data.length, md5: md5(data) });
    expect(await blobs.size("file-abc")).toBe(data.length);
    expect((await readAll(blobs.get("file-abc"))).equals(data)).toBe(true);

    expect((await readAll(blobs.get("file-abc", { start: 10, end: 19 }))).equals(data.subarray(10, 20))).toBe(true);
    expect((await readAll(blobs.get("file-abc", { start: 0, end: 0 }))).equals(data.subarray(0, 1))).toBe(true);
    // An end past the blob reads to its end (how downloads serve a suffix range).
    const tail = await readAll(blobs.get("file-abc", { start: data.length - 5, end: data.length + 100 }));
    expect(tail.equals(data.subarray(data.length - 5))).toBe(true);
    expect(() => blobs.get("file-abc", { start: 5, end: 4 })).toThrow(RangeError);

    async function* gen() {
      yield new TextEncoder().encode("hello ");
      yield new TextEncoder().encode("world");
    }
    expect(await blobs.put("file-abc", gen(), { md5: true })).toEqual({ bytes: 11, md5: md5(Buffer.from("hello world")) });
    expect((await readAll(blobs.get("file-abc"))).toString()).toBe("hello world");
    expect(await blobs.put("empty", Readable.from([]))).toEqual({ bytes: 0 });
    expect(await blobs.size("empty")).toBe(0);

    await blobs.delete("file-abc");
    expect(await blobs.size("file-abc")).toBeUndefined();
    await blobs.delete("file-abc"); // absent is fine
  });

  it("streams a body larger than several parts, whole and in order", async () => {
    const { blobs, leftovers } = await backend.open();
    const data = randomBytes(21 * 1024 * 1024 + 7);
    let i = 0;
    const source = new Readable({
      read() {
        this.push(i < data.length ? data.subarray(i, (i += 256 * 1024)) : null);
      },
    });
    expect(await blobs.put("big", source, { md5: true })).toEqual({ bytes: data.length, md5: md5(data) });
    expect((await readAll(blobs.get("big"))).equals(data)).toBe(true);
    expect(await leftovers()).toEqual([]);
  });

  it("reports a missing blob as BlobNotFound on the stream, and size() as undefined", async () => {
    const { blobs } = await backend.open();
    expect(await blobs.size("nope")).toBeUndefined();
    const err = await readAll(blobs.get("nope")).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobNotFound);
    expect(err).toMatchObject({ key: "nope" });
  });

  it("over maxBytes: stops reading, leaves nothing; exactly at the limit is allowed", async () => {
    const { blobs, leftovers } = await backend.open();
    let produced = 0;
    const source = new Readable({
      read() {
        produced += 64 * 1024;
        this.push(Buffer.alloc(64 * 1024, 1));
      },
    });
    const err = await blobs.put("big", source, { maxBytes: 12_000_000 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(BlobTooLarge);
    expect(source.destroyed).toBe(true);
    expect(produced).toBeLessThan(64 * 1024 * 1024);
    expect(await blobs.size("big")).toBeUndefined();
    expect(await leftovers()).toEqual([]);
    expect((await blobs.put("exact", Readable.from([Buffer.alloc(600_000), Buffer.alloc(400_000)]), { maxBytes: 1_000_000 })).bytes).toBe(1_000_000);
  });

  it("a source that fails midway leaves nothing behind and keeps the previous content", async () => {
    const { blobs, leftovers } = await backend.open();
    await blobs.put("doc", Readable.from([Buffer.from("old content")]));
    async function* failing(bytes: number) {
      yield Buffer.alloc(bytes, 7);
      throw new Error("client went away");
    }
    await expect(blobs.put("doc", failing(2 * 1024 * 1024))).rejects.toThrow("client went away");
    // Past the first part: a multipart upload was under way in S3, and is aborted.
    await expect(blobs.put("fresh", failing(18 * 1024 * 1024))).rejects.toThrow("client went away");
    expect((await readAll(blobs.get("doc"))).toString()).toBe("old content");
    expect(await blobs.size("fresh")).toBeUndefined();
    expect(await leftovers()).toEqual([]);
  });

  it("concatenates parts of any size in order (small parts before a large one) with the right bytes and md5", async () => {
    const { blobs, leftovers } = await backend.open();
    const parts = [randomBytes(1024 * 1024), randomBytes(1024 * 1024), Buffer.alloc(0), randomBytes(1024 * 1024), randomBytes(6 * 1024 * 1024)];
    for (let i = 0; i < parts.length; i++) await blobs.put(`part-${i}`, Readable.from([parts[i]!]));
    const whole = Buffer.concat(parts);
    expect(await blobs.concat("upload-1", parts.map((_, i) => `part-${i}`))).toEqual({ bytes: whole.length, md5: md5(whole) });
    expect((await readAll(blobs.get("upload-1"))).equals(whole)).toBe(true);
    const whole2 = Buffer.concat([parts[1]!, parts[0]!, parts[1]!]);
    expect(await blobs.concat("upload-2", ["part-1", "part-0", "part-1"])).toEqual({ bytes: whole2.length, md5: md5(whole2) });

    await expect(blobs.concat("upload-3", ["part-0", "missing"])).rejects.toBeInstanceOf(BlobNotFound);
    expect(await blobs.size("upload-3")).toBeUndefined();
    expect(await blobs.concat("none", [])).toEqual({ bytes: 0, md5: md5(Buffer.alloc(0)) });
    expect(await leftovers()).toEqual([]);
  });

  it("lists blobs by prefix with their sizes", async () => {
    const { blobs } = await backend.open();
    for (const k of ["file-1", "file-2", "part_1"]) await blobs.put(k, Readable.from([Buffer.from(k + "!")]));
    expect(await keys(blobs.list("file-"))).toEqual(["file-1", "file-2"]);
    const all: BlobEntry[] = [];
    for await (const e of blobs.list()) all.push(e);
    expect(all.map((e) => [e.key, e.bytes]).sort()).toEqual([["file-1", 7], ["file-2", 7], ["part_1", 7]]);
    for (const e of all) expect(Math.abs(e.modifiedAt - Date.now())).toBeLessThan(10 * 60_000);
  });

  it("refuses keys that are not portable file names", async () => {
    const { blobs } = await backend.open();
    for (const key of ["", "..", "../x", "a/b", ".hidden", "a..b", "x".repeat(201), "é"]) {
      await expect(blobs.put(key, Readable.from([Buffer.from("x")])), key).rejects.toBeInstanceOf(InvalidBlobKey);
      expect(() => blobs.get(key), key).toThrow(InvalidBlobKey);
      await expect(blobs.size(key), key).rejects.toBeInstanceOf(InvalidBlobKey);
    }
  });
});

describe("S3BlobStore configuration", () => {
  it("parses s3://bucket[/prefix] and names what is wrong", () => {
    expect(parseS3Url("s3://my-bucket")).toEqual({ bucket: "my-bucket", prefix: "" });
    expect(parseS3Url("s3://my-bucket/a/b/")).toEqual({ bucket: "my-bucket", prefix: "a/b/" });
    expect(() => parseS3Url("http://x")).toThrow(/s3:\/\/bucket/);
    expect(() => parseS3Url("s3://Bad_Bucket")).toThrow(/invalid bucket/);
  });

  it.skipIf(!hasSwift())("a missing bucket or an unreachable endpoint fails at open, naming it", async () => {
    const swift = await testSwift();
    await expect(openS3BlobStore("s3://no-such-bucket-here", swift.s3Env("x"))).rejects.toThrow(/does not exist: s3:\/\/no-such-bucket-here/);
    const env = { ...swift.s3Env("x"), AWS_ENDPOINT_URL_S3: "http://127.0.0.1:1" };
    await expect(openS3BlobStore("s3://bucket-x", env)).rejects.toThrow(/cannot reach s3:\/\/bucket-x at http:\/\/127\.0\.0\.1:1/);
  });

  it.skipIf(!hasSwift())("recover() aborts multipart uploads a dead process left, and only stale ones", async () => {
    const swift = await testSwift();
    const bucket = await swift.newBucket("recover");
    const store = (await openS3BlobStore(`s3://${bucket}`, swift.s3Env(bucket))) as S3BlobStore;
    cleanups.push(() => store.close());
    const { CreateMultipartUploadCommand } = await import("@aws-sdk/client-s3");
    await store.client.send(new CreateMultipartUploadCommand({ Bucket: bucket, Key: "file-dead" }));
    const pending = async () => ((await store.client.send(new ListMultipartUploadsCommand({ Bucket: bucket }))).Uploads ?? []).length;
    await store.recover();
    expect(await pending()).toBe(1); // young: maybe another instance's upload in progress
    await store.recover(Date.now() + 25 * 60 * 60 * 1000);
    expect(await pending()).toBe(0);
  });
});

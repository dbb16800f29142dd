// Uploads (spec 4.6, 2.7, state table in 3, limits in 8) through the official SDK and raw fetch.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { API_KEY, KEYS, ManualClock, startTestServer, type TestServer } from "../../shared/server.js";
import { api, storedBlobKeys, expectError, filesUnder, generatedMultipart, md5, random, sdk, sdkError, sha256, toFile } from "../../shared/rest.js";

const UPLOAD_KEYS = ["bytes", "created_at", "expires_at", "file", "filename", "id", "object", "purpose", "status"];

let s: TestServer;
let clock: ManualClock;
let client: OpenAI;
/** Whether the blob store holds `id` (a file on disk, or an object in the bucket in the scaled set-up). */
const blobExists = async (id: string) => (await s.deps.blobs.size(id)) !== undefined;
const addPart = async (uploadId: string, data: Uint8Array, c = client) => c.uploads.parts.create(uploadId, { data: await toFile(data, "part") });
const newUpload = (bytes: number, extra: Partial<OpenAI.Uploads.UploadCreateParams> = {}, c = client) =>
  c.uploads.create({ bytes, filename: "data.bin", mime_type: "application/octet-stream", purpose: "assistants", ...extra });

beforeAll(async () => {
  clock = new ManualClock();
  s = await startTestServer({ clock });
  // Expiry runs only when a test asks for a sweep.
  await s.sweeper.stop();
  client = sdk(s.baseURL);
});
afterAll(async () => s?.stop());

describe("uploads: the happy path", () => {
  it("create returns a pending Upload expiring one hour later, with every field", async () => {
    const u = await newUpload(1234, { filename: "report.pdf", mime_type: "application/pdf" });
    expect(u.id).toMatch(/^upload_/);
    expect(Object.keys(u).sort()).toEqual(UPLOAD_KEYS);
    expect(u).toMatchObject({ object: "upload", bytes: 1234, filename: "report.pdf", purpose: "assistants", status: "pending", file: null });
    expect(u.created_at).toBe(clock.now());
    expect(u.expires_at).toBe(u.created_at + 3600);
  });

  it("parts added in parallel, completed in a caller-chosen order with the right md5, give exactly that content", async () => {
    const sizes = [3 * 1024 * 1024 + 7, 1024 * 1024, 17, 2 * 1024 * 1024 + 1, 500_000];
    const chunks = sizes.map((n) => random(n));
    const total = sizes.reduce((a, b) => a + b, 0);
    const u = await newUpload(total, { filename: "big.bin" });
    const parts = await Promise.all(chunks.map((c) => addPart(u.id, c)));
    for (const p of parts) {
      expect(Object.keys(p).sort()).toEqual(["created_at", "id", "object", "upload_id"]);
      expect(p).toMatchObject({ object: "upload.part", upload_id: u.id });
      expect(p.id).toMatch(/^part_/);
    }
    expect(new Set(parts.map((p) => p.id)).size).toBe(parts.length);
    // Not creation order: the caller's order decides the content.
    const order = [3, 0, 4, 2, 1];
    const expected = Buffer.concat(order.map((i) => chunks[i]));
    const done = await client.uploads.complete(u.id, { part_ids: order.map((i) => parts[i].id), md5: md5(expected) });
    expect(done.status).toBe("completed");
    expect(done.id).toBe(u.id);
    const file = done.file!;
    expect(file).toMatchObject({ object: "file", bytes: total, filename: "big.bin", purpose: "assistants" });
    expect(file.id).toMatch(/^file-/);
    // The file is a real File: retrievable, listed, downloadable.
    expect((await client.files.retrieve(file.id)).bytes).toBe(total);
    expect((await client.files.list({ purpose: "assistants" })).data.some((f) => f.id === file.id)).toBe(true);
    const got = Buffer.from(await (await client.files.content(file.id)).arrayBuffer());
    expect(got.length).toBe(total);
    expect(sha256(got)).toBe(sha256(expected));
    // The part blobs are gone once the file exists.
    for (const p of parts) expect((await blobExists(p.id))).toBe(false);
    // Parts or a second completion are refused afterwards.
    const e = await sdkError(addPart(u.id, Buffer.from("late")), 400);
    expect(e.message).toContain("completed");
    await sdkError(client.uploads.complete(u.id, { part_ids: [parts[0].id] }), 400);
    await sdkError(client.uploads.cancel(u.id), 400);
  });

  it("completing without md5 works; an uppercase md5 is accepted", async () => {
    const a = random(1000);
    const u = await newUpload(1000);
    const p = await addPart(u.id, a);
    const done = await client.uploads.complete(u.id, { part_ids: [p.id], md5: md5(a).toUpperCase() });
    expect(done.status).toBe("completed");
    const u2 = await newUpload(10);
    const p2 = await addPart(u2.id, Buffer.from("0123456789"));
    const done2 = await client.uploads.complete(u2.id, { part_ids: [p2.id] });
    expect(Buffer.from(await (await client.files.content(done2.file!.id)).arrayBuffer()).toString()).toBe("0123456789");
  });

  it("expires_after on the upload sets the file's expires_at; batch uploads get the 30-day default", async () => {
    const u = await newUpload(3, { expires_after: { anchor: "created_at", seconds: 7200 } });
    const p = await addPart(u.id, Buffer.from("abc"));
    const f = (await client.uploads.complete(u.id, { part_ids: [p.id] })).file!;
    expect(f.expires_at).toBe(f.created_at + 7200);
    const line = Buffer.from('{"custom_id":"1"}\n');
    const b = await newUpload(line.length, { filename: "in.jsonl", mime_type: "application/jsonl", purpose: "batch" });
    const bp = await addPart(b.id, line);
    const bf = (await client.uploads.complete(b.id, { part_ids: [bp.id] })).file!;
    expect(bf.purpose).toBe("batch");
    expect(bf.expires_at).toBe(bf.created_at + 30 * 24 * 3600);
  });

  it("the SDK has no chunked-upload helper in this version (openai-node); uploads are driven part by part", () => {
    // openai-python has upload_file_chunked; openai-node 6.x exposes only create/parts/complete/cancel.
    expect(typeof (client.uploads as any).upload).toBe("undefined");
    expect(typeof client.uploads.create).toBe("function");
  });
});

describe("uploads: completion errors", () => {
  it("a wrong md5 is a 400 naming md5; the upload stays pending and leaves no file behind", async () => {
    const a = random(4096);
    const u = await newUpload(4096);
    const p = await addPart(u.id, a);
    const blobsBefore = (await storedBlobKeys(s));
    const filesBefore = (await client.files.list()).data.length;
    const e = await sdkError(client.uploads.complete(u.id, { part_ids: [p.id], md5: md5(Buffer.from("something else")) }), 400);
    expect(e.param).toBe("md5");
    expect((await storedBlobKeys(s))).toEqual(blobsBefore);
    expect(filesUnder(join(s.dataDir, "tmp"))).toEqual([]);
    expect((await client.files.list()).data.length).toBe(filesBefore);
    // Malformed md5 too.
    expect((await sdkError(client.uploads.complete(u.id, { part_ids: [p.id], md5: "not-an-md5" }), 400)).param).toBe("md5");
    // Still pending: the right checksum completes it.
    expect((await client.uploads.complete(u.id, { part_ids: [p.id], md5: md5(a) })).status).toBe("completed");
  });

  it("parts that do not add up to bytes are a 400 (too few and too many)", async () => {
    const u = await newUpload(100);
    const p1 = await addPart(u.id, random(60));
    const e = await sdkError(client.uploads.complete(u.id, { part_ids: [p1.id] }), 400);
    expect(e.message).toMatch(/bytes/);
    expect(e.param).not.toBeNull();
    const p2 = await addPart(u.id, random(50));
    await sdkError(client.uploads.complete(u.id, { part_ids: [p1.id, p2.id] }), 400);
  });

  it("missing part_ids, duplicate parts, unknown parts and parts of another upload are 400s naming part_ids", async () => {
    const u = await newUpload(10);
    const other = await newUpload(10);
    const p = await addPart(u.id, random(5));
    const q = await addPart(other.id, random(5));
    await expectError(await api(s.baseURL, `/uploads/${u.id}/complete`, { method: "POST", json: {} }), 400, { param: "part_ids" });
    await expectError(await api(s.baseURL, `/uploads/${u.id}/complete`, { method: "POST", json: { part_ids: [] } }), 400, { param: "part_ids" });
    const dup = await sdkError(client.uploads.complete(u.id, { part_ids: [p.id, p.id] }), 400);
    expect(dup.param).toMatch(/^part_ids/);
    const unknown = await sdkError(client.uploads.complete(u.id, { part_ids: [p.id, "part_nope"] }), 400);
    expect(unknown.param).toMatch(/^part_ids/);
    const foreign = await sdkError(client.uploads.complete(u.id, { part_ids: [p.id, q.id] }), 400);
    expect(foreign.param).toMatch(/^part_ids/);
    await expectError(await api(s.baseURL, `/uploads/${u.id}/complete`, { method: "POST", json: { part_ids: "x" } }), 400, { param: "part_ids" });
  });
});

describe("uploads: concurrency", () => {
  it("two completions racing: exactly one succeeds and exactly one file exists", async () => {
    const data = random(2 * 1024 * 1024);
    const u = await newUpload(data.length, { filename: "race.bin" });
    const p = await addPart(u.id, data);
    const before = new Set((await client.files.list()).data.map((f) => f.id));
    const blobsBefore = (await storedBlobKeys(s)).filter((k) => k !== p.id);
    const results = await Promise.allSettled([0, 1, 2].map(() => client.uploads.complete(u.id, { part_ids: [p.id] })));
    const ok = results.filter((r) => r.status === "fulfilled") as PromiseFulfilledResult<OpenAI.Uploads.Upload>[];
    expect(ok.length).toBe(1);
    for (const r of results) if (r.status === "rejected") expect((r.reason as { status: number }).status).toBe(400);
    const created = (await client.files.list()).data.filter((f) => !before.has(f.id));
    expect(created.map((f) => f.id)).toEqual([ok[0].value.file!.id]);
    // Only the one new file's blob is left (no orphan from the losers, no part blob).
    expect((await storedBlobKeys(s))).toEqual([...blobsBefore, ok[0].value.file!.id].sort());
  });

  it("parts streaming while the upload is cancelled leave no part behind", async () => {
    const u = await newUpload(10 * 1024 * 1024);
    const blobsBefore = (await storedBlobKeys(s));
    const uploads = Array.from({ length: 6 }, () => addPart(u.id, random(1024 * 1024)).then(
      () => "ok",
      (e) => (e as { status: number }).status,
    ));
    await new Promise((r) => setTimeout(r, 5));
    await client.uploads.cancel(u.id);
    const outcomes = await Promise.all(uploads);
    for (const o of outcomes) expect(["ok", 400]).toContain(o);
    const left = await s.deps.records.collection("upload_part").list({ projectId: "proj_default" }, { parentId: u.id, limit: 100, order: "asc" });
    expect(left.records).toEqual([]);
    expect((await storedBlobKeys(s))).toEqual(blobsBefore);
    expect(filesUnder(join(s.dataDir, "tmp"))).toEqual([]);
  });
});

describe("uploads: cancel", () => {
  it("cancel returns status cancelled; parts, completion and a second cancel are refused; part blobs are removed", async () => {
    const u = await newUpload(20);
    const p = await addPart(u.id, random(20));
    expect((await blobExists(p.id))).toBe(true);
    const c = await client.uploads.cancel(u.id);
    expect(c).toMatchObject({ id: u.id, object: "upload", status: "cancelled", file: null });
    const e = await sdkError(addPart(u.id, random(5)), 400);
    expect(e.message).toContain("cancelled");
    await sdkError(client.uploads.complete(u.id, { part_ids: [p.id] }), 400);
    await sdkError(client.uploads.cancel(u.id), 400);
    expect((await blobExists(p.id))).toBe(false);
  });
});

describe("uploads: create validation", () => {
  const create = (body: Record<string, unknown>) => api(s.baseURL, "/uploads", { method: "POST", json: body });
  const base = { bytes: 10, filename: "a.txt", mime_type: "text/plain", purpose: "assistants" };

  it("a bad purpose is a 400 naming purpose", async () => {
    await expectError(await create({ ...base, purpose: "nonsense" }), 400, { param: "purpose" });
    await expectError(await create({ ...base, purpose: "batch_output" }), 400, { param: "purpose" });
    const { purpose: _p, ...noPurpose } = base;
    await expectError(await create(noPurpose), 400, { param: "purpose" });
  });

  it("a mime_type that does not fit the purpose is a 400 naming mime_type", async () => {
    await expectError(await create({ ...base, purpose: "vision", filename: "a.png", mime_type: "text/plain" }), 400, { param: "mime_type" });
    await expectError(await create({ ...base, purpose: "batch", filename: "a.jsonl", mime_type: "image/png" }), 400, { param: "mime_type" });
    await expectError(await create({ ...base, purpose: "fine-tune", filename: "a.jsonl", mime_type: "application/pdf" }), 400, { param: "mime_type" });
    await expectError(await create({ ...base, mime_type: "not a mime type" }), 400, { param: "mime_type" });
    const { mime_type: _m, ...noMime } = base;
    await expectError(await create(noMime), 400, { param: "mime_type" });
    // Fitting ones are accepted.
    expect((await create({ ...base, purpose: "vision", filename: "a.png", mime_type: "image/png" })).status).toBe(200);
    expect((await create({ ...base, purpose: "fine-tune", filename: "a.jsonl", mime_type: "application/jsonl" })).status).toBe(200);
  });

  it("batch and fine-tune uploads need a .jsonl filename", async () => {
    const e = await expectError(await create({ ...base, purpose: "batch", filename: "a.txt", mime_type: "application/jsonl" }), 400);
    expect(e.param).toBe("filename");
  });

  it("bytes over 8 GB, zero, negative, missing or not a number are 400s naming bytes; exactly 8 GB is accepted", async () => {
    const GB8 = 8 * 1024 ** 3;
    await expectError(await create({ ...base, bytes: GB8 + 1 }), 400, { param: "bytes" });
    await expectError(await create({ ...base, bytes: 0 }), 400, { param: "bytes" });
    await expectError(await create({ ...base, bytes: -5 }), 400, { param: "bytes" });
    await expectError(await create({ ...base, bytes: "10" }), 400, { param: "bytes" });
    await expectError(await create({ ...base, bytes: 1.5 }), 400, { param: "bytes" });
    const { bytes: _b, ...noBytes } = base;
    await expectError(await create(noBytes), 400, { param: "bytes" });
    expect((await create({ ...base, bytes: GB8 })).status).toBe(200);
    await sdkError(newUpload(GB8 + 1), 400);
  });

  it("a missing filename and out-of-range expires_after are 400s naming the field", async () => {
    const { filename: _f, ...noName } = base;
    await expectError(await create(noName), 400, { param: "filename" });
    await expectError(await create({ ...base, expires_after: { anchor: "created_at", seconds: 60 } }), 400, { param: "expires_after.seconds" });
    await expectError(await create({ ...base, expires_after: { anchor: "created_at", seconds: 2_592_001 } }), 400, { param: "expires_after.seconds" });
    await expectError(await create({ ...base, expires_after: { anchor: "now", seconds: 3600 } }), 400, { param: "expires_after.anchor" });
  });
});

describe("uploads: caps on strings and lists", () => {
  const create = (body: Record<string, unknown>) => api(s.baseURL, "/uploads", { method: "POST", json: body });
  const base = { bytes: 10, filename: "a.txt", mime_type: "text/plain", purpose: "assistants" };
  const uploadCount = () => s.deps.records.collection("upload").count({ projectId: "proj_default" });

  it("filename 512 and mime_type 255 characters are taken; one over is a 400 naming the field and creates nothing", async () => {
    const atCap = await newUpload(10, { filename: "f".repeat(508) + ".txt", mime_type: "text/plain; x=" + "y".repeat(241) });
    expect(atCap.filename).toBe("f".repeat(508) + ".txt");
    const refused: Array<[Record<string, unknown>, string, RegExp]> = [
      [{ ...base, filename: "f".repeat(509) + ".txt" }, "filename", /at most 512 characters/],
      [{ ...base, filename: "f".repeat(2 * 1024 * 1024) }, "filename", /at most 512 characters/],
      [{ ...base, mime_type: "text/plain; x=" + "y".repeat(242) }, "mime_type", /maximum length 255\b/],
    ];
    const before = await uploadCount();
    for (const [body, param, message] of refused) await expectError(await create(body), 400, { param, code: "string_above_max_length", message });
    expect(await uploadCount()).toBe(before);
  });

  it("part_ids lists at most 10,000 ids of at most 256 characters; over either is a 400 before any part is read", async () => {
    const u = await newUpload(5);
    const p = await addPart(u.id, random(5));
    const complete = (part_ids: string[]) => api(s.baseURL, `/uploads/${u.id}/complete`, { method: "POST", json: { part_ids } });
    await expectError(await complete([p.id, ...Array.from({ length: 10_000 }, (_, i) => `part_${i}`)]), 400, {
      param: "part_ids",
      code: "array_above_max_length",
      message: /maximum length 10000\b/,
    });
    await expectError(await complete([p.id, "p".repeat(257)]), 400, { param: "part_ids[1]", code: "string_above_max_length", message: /maximum length 256\b/ });
    // At the cap the list is read: 9,999 unknown ids after the real part are refused one by one, as before.
    await expectError(await complete([p.id, ...Array.from({ length: 9_999 }, (_, i) => `part_${i}`)]), 400, { param: "part_ids[1]", code: "invalid_part" });
    expect((await client.uploads.complete(u.id, { part_ids: [p.id] })).status).toBe("completed");
  });
});

describe("uploads: part limits", () => {
  it("a part over 64 MiB is a 413, nothing is kept, and the upload still takes parts", async () => {
    const u = await newUpload(100);
    const blobsBefore = (await storedBlobKeys(s));
    const body = generatedMultipart({ fileField: "data", filename: "blob", size: 64 * 1024 * 1024 + 1 });
    const res = await fetch(`${s.baseURL}/uploads/${u.id}/parts`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": body.contentType },
      body: body.stream,
      duplex: "half",
    } as RequestInit);
    await expectError(res, 413, { param: "data" });
    expect((await storedBlobKeys(s))).toEqual(blobsBefore);
    expect(filesUnder(join(s.dataDir, "tmp"))).toEqual([]);
    const p = await addPart(u.id, random(100));
    expect((await client.uploads.complete(u.id, { part_ids: [p.id] })).status).toBe("completed");
  });

  it("a part of exactly 64 MiB is accepted", async () => {
    const size = 64 * 1024 * 1024;
    const u = await newUpload(size);
    const body = generatedMultipart({ fileField: "data", filename: "blob", size });
    const res = await fetch(`${s.baseURL}/uploads/${u.id}/parts`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": body.contentType },
      body: body.stream,
      duplex: "half",
    } as RequestInit);
    expect(res.status).toBe(200);
    const part = await res.json();
    const done = await client.uploads.complete(u.id, { part_ids: [part.id] });
    expect(done.file!.bytes).toBe(size);
    await client.files.delete(done.file!.id);
  });

  it("an empty part, a part without the data field, and a non-multipart body are 4xx with the error body", async () => {
    const u = await newUpload(10);
    const empty = new FormData();
    empty.append("data", new Blob([]), "blob");
    await expectError(await api(s.baseURL, `/uploads/${u.id}/parts`, { method: "POST", body: empty }), 400, { param: "data" });
    const none = new FormData();
    none.append("other", "x");
    const e = await expectError(await api(s.baseURL, `/uploads/${u.id}/parts`, { method: "POST", body: none }), 400);
    expect(e.param).not.toBeNull();
    const json = await api(s.baseURL, `/uploads/${u.id}/parts`, { method: "POST", json: { data: "aGVsbG8=" } });
    expect([400, 415]).toContain(json.status);
    await expectError(json, json.status);
  });
});

describe("uploads: tenancy and unknown ids", () => {
  it("unknown upload ids are 404; another project's upload is 404 for every operation", async () => {
    await sdkError(client.uploads.cancel("upload_nope"), 404);
    await sdkError(client.uploads.complete("upload_nope", { part_ids: ["part_x"] }), 404);
    await sdkError(addPart("upload_nope", random(5)), 404);
    const mine = await newUpload(5);
    const p = await addPart(mine.id, random(5));
    const b = sdk(s.baseURL, KEYS.projectB);
    await sdkError(b.uploads.cancel(mine.id), 404);
    await sdkError(b.uploads.complete(mine.id, { part_ids: [p.id] }), 404);
    await sdkError(addPart(mine.id, random(5), b), 404);
    // Untouched by those attempts.
    expect((await client.uploads.complete(mine.id, { part_ids: [p.id] })).status).toBe("completed");
  });

  it("a reader key cannot create uploads or add parts (403)", async () => {
    const r = sdk(s.baseURL, KEYS.reader);
    await sdkError(newUpload(5, {}, r), 403);
    const u = await newUpload(5);
    await sdkError(addPart(u.id, random(5), r), 403);
  });
});

describe("uploads: expiry after one hour", () => {
  it("a pending upload expires one hour after creation: parts and completion refused, status expired, part blobs swept", async () => {
    const u = await newUpload(10);
    const p = await addPart(u.id, random(6));
    clock.advance(3599);
    await s.sweeper.runOnce();
    const p2 = await addPart(u.id, random(4));
    clock.advance(1);
    // At the deadline, even before a sweep, nothing more is accepted.
    const e = await sdkError(addPart(u.id, random(1)), 400);
    expect(e.message).toContain("expired");
    await sdkError(client.uploads.complete(u.id, { part_ids: [p.id, p2.id] }), 400);
    await s.sweeper.runOnce();
    const rec = await s.deps.records.collection<{ status: string }>("upload").get({ projectId: "proj_default" }, u.id);
    expect(rec?.data.status).toBe("expired");
    const c = await sdkError(client.uploads.cancel(u.id), 400);
    expect(c.message).toContain("expired");
    expect((await blobExists(p.id))).toBe(false);
    expect((await blobExists(p2.id))).toBe(false);
  });

  it("the sweeper alone moves an untouched upload to expired", async () => {
    const u = await newUpload(10);
    const p = await addPart(u.id, random(3));
    clock.advance(3600);
    await s.sweeper.runOnce();
    const rec = await s.deps.records.collection<{ status: string }>("upload").get({ projectId: "proj_default" }, u.id);
    expect(rec?.data.status).toBe("expired");
    expect((await blobExists(p.id))).toBe(false);
  });

  it("a completed upload is not touched by its expiry", async () => {
    const u = await newUpload(3);
    const p = await addPart(u.id, Buffer.from("xyz"));
    const done = await client.uploads.complete(u.id, { part_ids: [p.id] });
    clock.advance(7200);
    await s.sweeper.runOnce();
    const rec = await s.deps.records.collection<{ status: string }>("upload").get({ projectId: "proj_default" }, u.id);
    expect(rec?.data.status).toBe("completed");
    expect(Buffer.from(await (await client.files.content(done.file!.id)).arrayBuffer()).toString()).toBe("xyz");
  });
});

// Files (spec 4.5, 2.6, 8) through the official SDK and raw fetch, as a user drives them.
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { API_KEY, KEYS, ManualClock, SCALED, startTestServer, type TestServer } from "../../shared/server.js";
import { api, blobKeys, storedBlobKeys, expectError, filesUnder, generatedMultipart, random, sdk, sdkError, sha256, toFile } from "../../shared/rest.js";

const DAY = 24 * 3600;
const FILE_KEYS = ["bytes", "created_at", "expires_at", "filename", "id", "object", "purpose", "status", "status_details"];

let s: TestServer;
let clock: ManualClock;
let client: OpenAI;
/** Whether the blob store holds `id` (a file on disk, or an object in the bucket in the scaled set-up). */
const blobExists = async (id: string) => (await s.deps.blobs.size(id)) !== undefined;

beforeAll(async () => {
  clock = new ManualClock();
  s = await startTestServer({ clock });
  client = sdk(s.baseURL);
});
afterAll(async () => s?.stop());

/** Raw multipart upload with FormData (fields in the given order). */
async function rawCreate(fields: Array<[string, string | Blob, string?]>, key = API_KEY): Promise<Response> {
  const form = new FormData();
  for (const [k, v, name] of fields) {
    if (typeof v === "string") form.append(k, v);
    else form.append(k, v, name);
  }
  return api(s.baseURL, "/files", { method: "POST", body: form, key });
}

describe("files: create, retrieve, download, delete a multi-MB binary file", () => {
  const content = random(6 * 1024 * 1024 + 123);
  let file: OpenAI.FileObject;

  it("creates the file with the SDK and returns the File object", async () => {
    file = await client.files.create({ file: await toFile(content, "blob.bin"), purpose: "user_data" });
    expect(file.id).toMatch(/^file-/);
    expect(file).toMatchObject({ object: "file", bytes: content.length, filename: "blob.bin", purpose: "user_data" });
    expect(file.created_at).toBe(clock.now());
    expect(["uploaded", "processed", "error"]).toContain(file.status);
    // Every documented field present; no expiry for a user_data file without expires_after.
    expect(Object.keys(file).sort()).toEqual(FILE_KEYS);
    expect(file.expires_at).toBeNull();
  });

  it("retrieves the same object", async () => {
    expect(await client.files.retrieve(file.id)).toEqual(file);
  });

  it("downloads exactly the uploaded bytes (SDK content → arrayBuffer)", async () => {
    const res = await client.files.content(file.id);
    const got = Buffer.from(await res.arrayBuffer());
    expect(got.length).toBe(content.length);
    expect(sha256(got)).toBe(sha256(content));
    expect(got.equals(content)).toBe(true);
    expect(res.headers.get("content-length")).toBe(String(content.length));
  });

  it("waitForProcessing returns at once (the file is already processed)", async () => {
    const f = await client.files.waitForProcessing(file.id, { pollInterval: 10, maxWait: 5000 });
    expect(f.id).toBe(file.id);
  });

  it("deletes the file: deletion envelope, then 404 everywhere and the blob is gone", async () => {
    expect((await blobExists(file.id))).toBe(true);
    const del = await client.files.delete(file.id);
    expect(del).toEqual({ id: file.id, object: "file", deleted: true });
    await expectError(await api(s.baseURL, `/files/${file.id}`), 404);
    await expectError(await api(s.baseURL, `/files/${file.id}/content`), 404);
    await expectError(await api(s.baseURL, `/files/${file.id}`, { method: "DELETE" }), 404);
    await sdkError(client.files.retrieve(file.id), 404);
    expect((await blobExists(file.id))).toBe(false);
  });
});

describe("files: listing", () => {
  // A project of its own (proj_b) so the list holds exactly what this block created.
  let c: OpenAI;
  const ids: string[] = [];
  const purposeOf = new Map<string, string>();
  beforeAll(async () => {
    c = sdk(s.baseURL, KEYS.projectB);
    const purposes = ["assistants", "user_data", "assistants", "vision", "assistants", "user_data", "assistants"];
    for (const [i, purpose] of purposes.entries()) {
      // Several per second and some a second apart: order must follow creation either way.
      if (i % 3 === 0) clock.advance(1);
      const f = await c.files.create({ file: await toFile(Buffer.from(`file ${i}`), `f${i}.txt`), purpose: purpose as any });
      ids.push(f.id);
      purposeOf.set(f.id, purpose);
    }
  });

  it("lists newest first by default, with the list envelope", async () => {
    const res = await api(s.baseURL, "/files", { key: KEYS.projectB });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(Object.keys(body).sort()).toEqual(["data", "first_id", "has_more", "last_id", "object"]);
    expect(body.object).toBe("list");
    expect(body.has_more).toBe(false);
    const got = body.data.map((f: { id: string }) => f.id);
    expect(got).toEqual([...ids].reverse());
    expect(body.first_id).toBe(got[0]);
    expect(body.last_id).toBe(got[got.length - 1]);
    for (const f of body.data) expect(Object.keys(f).sort()).toEqual(FILE_KEYS);
  });

  it("order=asc and order=desc", async () => {
    const asc = await c.files.list({ order: "asc" });
    expect(asc.data.map((f) => f.id)).toEqual(ids);
    const desc = await c.files.list({ order: "desc" });
    expect(desc.data.map((f) => f.id)).toEqual([...ids].reverse());
    await expectError(await api(s.baseURL, "/files?order=sideways", { key: KEYS.projectB }), 400, { param: "order" });
  });

  it("filters by purpose", async () => {
    const page = await c.files.list({ purpose: "assistants", order: "asc" });
    expect(page.data.map((f) => f.id)).toEqual(ids.filter((id) => purposeOf.get(id) === "assistants"));
    expect(page.data.every((f) => f.purpose === "assistants")).toBe(true);
    expect((await c.files.list({ purpose: "batch" })).data).toEqual([]);
    await expectError(await api(s.baseURL, "/files?purpose=nonsense", { key: KEYS.projectB }), 400, { param: "purpose" });
  });

  it("pages with limit and the after cursor (raw), both orders", async () => {
    for (const order of ["asc", "desc"] as const) {
      const want = order === "asc" ? ids : [...ids].reverse();
      const seen: string[] = [];
      let after: string | undefined;
      for (let pages = 0; ; pages++) {
        expect(pages).toBeLessThan(10);
        const q = new URLSearchParams({ limit: "2", order, ...(after ? { after } : {}) });
        const body = await (await api(s.baseURL, `/files?${q}`, { key: KEYS.projectB })).json();
        expect(body.data.length).toBeLessThanOrEqual(2);
        seen.push(...body.data.map((f: { id: string }) => f.id));
        if (!body.has_more) break;
        expect(body.data.length).toBe(2);
        after = body.last_id;
      }
      expect(seen).toEqual(want);
    }
  });

  it("the SDK's auto-pagination walks every page", async () => {
    const seen: string[] = [];
    for await (const f of c.files.list({ limit: 3, order: "asc" })) seen.push(f.id);
    expect(seen).toEqual(ids);
  });

  it("after combined with the purpose filter", async () => {
    const assistants = ids.filter((id) => purposeOf.get(id) === "assistants");
    const page = await c.files.list({ purpose: "assistants", order: "asc", after: assistants[0], limit: 2 });
    expect(page.data.map((f) => f.id)).toEqual(assistants.slice(1, 3));
    expect(page.has_more).toBe(true);
  });

  it("limit bounds: 1 and 10000 accepted; 0, 10001, -1 and 1.5 are 400 naming limit", async () => {
    expect((await c.files.list({ limit: 1 })).data.length).toBe(1);
    expect((await c.files.list({ limit: 10_000 })).data.length).toBe(ids.length);
    for (const bad of ["0", "10001", "-1", "1.5"])
      await expectError(await api(s.baseURL, `/files?limit=${bad}`, { key: KEYS.projectB }), 400, { param: "limit" });
    await sdkError(c.files.list({ limit: 0 }), 400);
  });

  it("an after cursor that is not in this list is a 400 naming after", async () => {
    await expectError(await api(s.baseURL, "/files?after=file-doesnotexist", { key: KEYS.projectB }), 400, { param: "after" });
  });

  it("another project does not see these files", async () => {
    const other = await client.files.list({ limit: 10_000 });
    const mine = new Set(ids);
    expect(other.data.some((f) => mine.has(f.id))).toBe(false);
  });
});

describe("files: purposes, formats and expiry on create", () => {
  it("batch files expire 30 days after creation by default", async () => {
    const f = await client.files.create({ file: await toFile(Buffer.from('{"a":1}\n'), "in.jsonl"), purpose: "batch" });
    expect(f.purpose).toBe("batch");
    expect(f.expires_at).toBe(f.created_at + 30 * DAY);
  });

  it("expires_after from the SDK (sent as expires_after[anchor] / expires_after[seconds])", async () => {
    const f = await client.files.create({
      file: await toFile(Buffer.from("hello"), "hello.txt"),
      purpose: "user_data",
      expires_after: { anchor: "created_at", seconds: 3600 },
    });
    expect(f.expires_at).toBe(f.created_at + 3600);
    // And it overrides the batch default.
    const b = await client.files.create({
      file: await toFile(Buffer.from("{}\n"), "b.jsonl"),
      purpose: "batch",
      expires_after: { anchor: "created_at", seconds: 2_592_000 },
    });
    expect(b.expires_at).toBe(b.created_at + 2_592_000);
  });

  it("the SDK encodes expires_after as the bracketed form fields expires_after[anchor] / expires_after[seconds]", async () => {
    let sent: Array<[string, string]> = [];
    const spy = sdk(s.baseURL, API_KEY, {
      fetch: async (url: any, init: any) => {
        const body = init?.body;
        if (body instanceof FormData) sent = [...body.entries()].map(([k, v]) => [k, typeof v === "string" ? v : `<file ${(v as File).name}>`]);
        return fetch(url, init);
      },
    });
    const f = await spy.files.create({
      file: await toFile(Buffer.from("wire"), "wire.txt"),
      purpose: "user_data",
      expires_after: { anchor: "created_at", seconds: 4000 },
    });
    expect(sent).toEqual(
      expect.arrayContaining([
        ["file", "<file wire.txt>"],
        ["purpose", "user_data"],
        ["expires_after[anchor]", "created_at"],
        ["expires_after[seconds]", "4000"],
      ]),
    );
    expect(f.expires_at).toBe(f.created_at + 4000);
  });

  it("keeps a non-ASCII filename exactly as sent (UTF-8 in Content-Disposition)", async () => {
    const name = "résumé – 日本語 📄.txt";
    const f = await client.files.create({ file: await toFile(Buffer.from("u"), name), purpose: "user_data" });
    expect(f.filename).toBe(name);
    expect((await client.files.retrieve(f.id)).filename).toBe(name);
  });

  it("a filename of 512 characters is kept; one of 513 is a 400 naming file, and nothing is stored", async () => {
    const ids = async () => (await client.files.list()).data.map((f) => f.id).sort();
    const atCap = "n".repeat(508) + ".txt";
    const f = await client.files.create({ file: await toFile(Buffer.from("x"), atCap), purpose: "user_data" });
    expect(f.filename).toBe(atCap);
    const before = await ids();
    const blobsBefore = await storedBlobKeys(s);
    await expectError(await rawCreate([["purpose", "user_data"], ["file", new Blob(["x"]), "n" + atCap]]), 400, {
      param: "file",
      code: "string_above_max_length",
      message: /at most 512 characters/,
    });
    expect(await ids()).toEqual(before);
    expect(await storedBlobKeys(s)).toEqual(blobsBefore);
    expect(filesUnder(join(s.dataDir, "tmp"))).toEqual([]);
  });

  it("expires_after as raw form fields, before and after the file part", async () => {
    const before = await rawCreate([
      ["purpose", "assistants"],
      ["expires_after[anchor]", "created_at"],
      ["expires_after[seconds]", "7200"],
      ["file", new Blob(["x"]), "x.txt"],
    ]);
    expect(before.status).toBe(200);
    const b = await before.json();
    expect(b.expires_at).toBe(b.created_at + 7200);
    const after = await rawCreate([
      ["file", new Blob(["y"]), "y.txt"],
      ["purpose", "assistants"],
      ["expires_after[anchor]", "created_at"],
      ["expires_after[seconds]", "86400"],
    ]);
    expect(after.status).toBe(200);
    const a = await after.json();
    expect(a.expires_at).toBe(a.created_at + 86400);
  });

  it("expires_after.seconds out of 3600..2592000 is a 400 naming the parameter, and stores nothing", async () => {
    const before = (await storedBlobKeys(s));
    for (const seconds of [3599, 2_592_001, 0]) {
      const e = await sdkError(
        client.files.create({ file: await toFile(Buffer.from("z"), "z.txt"), purpose: "user_data", expires_after: { anchor: "created_at", seconds } }),
        400,
      );
      expect(e.param).toBe("expires_after.seconds");
      expect(e.message).toContain("expires_after");
    }
    const bad = await rawCreate([
      ["file", new Blob(["z"]), "z.txt"],
      ["purpose", "user_data"],
      ["expires_after[anchor]", "created_at"],
      ["expires_after[seconds]", "soon"],
    ]);
    const e = await expectError(bad, 400);
    expect(e.param).toMatch(/^expires_after/);
    const anchor = await rawCreate([
      ["file", new Blob(["z"]), "z.txt"],
      ["purpose", "user_data"],
      ["expires_after[anchor]", "last_active_at"],
      ["expires_after[seconds]", "3600"],
    ]);
    await expectError(anchor, 400, { param: "expires_after.anchor" });
    expect((await storedBlobKeys(s))).toEqual(before);
    expect(filesUnder(join(s.dataDir, "tmp"))).toEqual([]);
  });

  it("a bad or missing purpose is a 400 naming purpose", async () => {
    const e = await sdkError(client.files.create({ file: await toFile(Buffer.from("a"), "a.txt"), purpose: "nonsense" as any }), 400);
    expect(e.param).toBe("purpose");
    expect(e.message).toContain("purpose");
    // The *_output purposes are the platform's own; callers cannot upload with them.
    for (const p of ["batch_output", "fine-tune-results", "assistants_output"])
      expect((await sdkError(client.files.create({ file: await toFile(Buffer.from("a"), "a.jsonl"), purpose: p as any }), 400)).param).toBe("purpose");
    await expectError(await rawCreate([["file", new Blob(["a"]), "a.txt"]]), 400, { param: "purpose" });
  });

  it("a missing or empty file is a 400 naming file", async () => {
    await expectError(await rawCreate([["purpose", "user_data"]]), 400, { param: "file" });
    await expectError(await rawCreate([["purpose", "user_data"], ["file", new Blob([]), "empty.txt"]]), 400, { param: "file" });
  });

  it("batch and fine-tune files must be .jsonl", async () => {
    for (const purpose of ["batch", "fine-tune"] as const) {
      const e = await sdkError(client.files.create({ file: await toFile(Buffer.from('{"a":1}\n'), "data.txt"), purpose }), 400);
      expect(e.param).toBe("file");
      expect(e.message).toMatch(/jsonl/i);
      const ok = await client.files.create({ file: await toFile(Buffer.from('{"a":1}\n'), "data.jsonl"), purpose });
      expect(ok.purpose).toBe(purpose);
    }
  });

  it("a reader key cannot create files (403), a standard key in another org sees none of ours", async () => {
    await sdkError(sdk(s.baseURL, KEYS.reader).files.create({ file: await toFile(Buffer.from("a"), "a.txt"), purpose: "user_data" }), 403);
    const f = await client.files.create({ file: await toFile(Buffer.from("mine"), "mine.txt"), purpose: "user_data" });
    await sdkError(sdk(s.baseURL, KEYS.otherOrg).files.retrieve(f.id), 404);
  });
});

describe("files: Range downloads", () => {
  const size = 256 * 1024 + 17;
  const content = random(size);
  let id: string;
  beforeAll(async () => {
    id = (await client.files.create({ file: await toFile(content, "range.bin"), purpose: "user_data" })).id;
  });
  const get = (range?: string) => api(s.baseURL, `/files/${id}/content`, { headers: range ? { range } : {} });

  it("without Range: 200, the whole body, Accept-Ranges and Content-Length", async () => {
    const r = await get();
    expect(r.status).toBe(200);
    expect(r.headers.get("accept-ranges")).toBe("bytes");
    expect(r.headers.get("content-length")).toBe(String(size));
    expect(r.headers.get("content-range")).toBeNull();
    expect(Buffer.from(await r.arrayBuffer()).equals(content)).toBe(true);
  });

  const cases: Array<[string, number, number]> = [
    ["bytes=0-99", 0, 99],
    ["bytes=100-", 100, size - 1],
    ["bytes=1000-1000", 1000, 1000],
    ["bytes=-500", size - 500, size - 1],
    [`bytes=-${size + 1000}`, 0, size - 1], // suffix longer than the file: the whole file
    [`bytes=${size - 10}-${size + 5000}`, size - 10, size - 1], // end past the file is clamped
    [`bytes=${size - 1}-`, size - 1, size - 1],
  ];
  for (const [range, start, end] of cases) {
    it(`${range} → 206 ${start}-${end}`, async () => {
      const r = await get(range);
      expect(r.status).toBe(206);
      expect(r.headers.get("content-range")).toBe(`bytes ${start}-${end}/${size}`);
      expect(r.headers.get("content-length")).toBe(String(end - start + 1));
      expect(r.headers.get("accept-ranges")).toBe("bytes");
      const body = Buffer.from(await r.arrayBuffer());
      expect(body.equals(content.subarray(start, end + 1))).toBe(true);
    });
  }

  for (const range of [`bytes=${size}-`, `bytes=${size + 100}-${size + 200}`, "bytes=-0"]) {
    it(`${range} → 416 with Content-Range */size and an error body`, async () => {
      const r = await get(range);
      expect(r.headers.get("content-range")).toBe(`bytes */${size}`);
      await expectError(r, 416);
    });
  }

  it("a Range the server does not support (several ranges, other units) serves the whole file", async () => {
    for (const range of ["bytes=0-1,5-6", "items=0-1"]) {
      const r = await get(range);
      expect(r.status).toBe(200);
      expect(Buffer.from(await r.arrayBuffer()).equals(content)).toBe(true);
    }
  });

  it("the SDK download honours a Range header passed through request options", async () => {
    const res = await client.files.content(id, { headers: { range: "bytes=10-19" } });
    expect(res.status).toBe(206);
    expect(Buffer.from(await res.arrayBuffer()).equals(content.subarray(10, 20))).toBe(true);
  });
});

describe("files: expiry via the sweeper", () => {
  // Sweeps happen only when the test says so.
  beforeAll(async () => s.sweeper.stop());

  it("a file past expires_at is gone from retrieve, list and content after a sweep, and its blob is deleted", async () => {
    const f = await client.files.create({
      file: await toFile(random(50_000), "short.bin"),
      purpose: "user_data",
      expires_after: { anchor: "created_at", seconds: 3600 },
    });
    const keep = await client.files.create({ file: await toFile(Buffer.from("keep"), "keep.txt"), purpose: "user_data" });
    expect((await blobExists(f.id))).toBe(true);
    clock.advance(3599);
    await s.sweeper.runOnce();
    expect((await client.files.retrieve(f.id)).id).toBe(f.id);
    clock.advance(1);
    await s.sweeper.runOnce();
    await sdkError(client.files.retrieve(f.id), 404);
    await expectError(await api(s.baseURL, `/files/${f.id}/content`), 404);
    await expectError(await api(s.baseURL, `/files/${f.id}`, { method: "DELETE" }), 404);
    const all = await client.files.list({ limit: 10_000 });
    expect(all.data.some((x) => x.id === f.id)).toBe(false);
    expect(all.data.some((x) => x.id === keep.id)).toBe(true);
    expect((await blobExists(f.id))).toBe(false);
    expect((await blobExists(keep.id))).toBe(true);
  });

  it("a batch file goes after its default 30 days", async () => {
    const f = await client.files.create({ file: await toFile(Buffer.from('{"x":1}\n'), "exp.jsonl"), purpose: "batch" });
    clock.advance(30 * DAY - 1);
    await s.sweeper.runOnce();
    expect((await client.files.retrieve(f.id)).id).toBe(f.id);
    clock.advance(1);
    await s.sweeper.runOnce();
    await sdkError(client.files.retrieve(f.id), 404);
    expect((await blobExists(f.id))).toBe(false);
  });

  // Fails until src/server.ts passes the server clock to openStorage ({ now: () => clock.now() }):
  // the record store filters expired rows by the wall clock, every service by the injected one.
  it("BUG server.ts clock wiring: a file past expires_at is invisible even before the sweeper has run", async () => {
    const f = await client.files.create({
      file: await toFile(Buffer.from("brief"), "brief.txt"),
      purpose: "user_data",
      expires_after: { anchor: "created_at", seconds: 3600 },
    });
    clock.advance(3600);
    // No sweep yet: expires_at has passed by the server's clock, so the file is gone for callers.
    await sdkError(client.files.retrieve(f.id), 404);
    await expectError(await api(s.baseURL, `/files/${f.id}/content`), 404);
    expect((await client.files.list({ limit: 10_000 })).data.some((x) => x.id === f.id)).toBe(false);
    await s.sweeper.runOnce();
  });
});

describe("files: interrupted uploads", () => {
  // It watches the temp file instance A writes: through the proxy the upload may land on B, and
  // the S3 store streams to the bucket with no temp file.
  it.skipIf(SCALED)("a client that aborts mid-upload leaves no temp file, no blob and no listed file behind", async () => {
    const blobsBefore = blobKeys(s.dataDir);
    const listBefore = (await client.files.list({ limit: 10_000 })).data.map((f) => f.id);
    const ac = new AbortController();
    let reached!: () => void;
    const midway = new Promise<void>((r) => (reached = r));
    const body = generatedMultipart({
      fields: [["purpose", "user_data"]],
      fileField: "file",
      filename: "aborted.bin",
      size: 64 * 1024 * 1024,
      chunk: 256 * 1024,
      delayMs: 2,
      onChunk: (n) => n >= 4 * 1024 * 1024 && reached(),
    });
    const req = fetch(`${s.baseURL}/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": body.contentType },
      body: body.stream,
      duplex: "half",
      signal: ac.signal,
    } as RequestInit).catch((e) => e);
    await midway;
    // Wait until the server is really writing the temp file, then cut the connection.
    const tmp = join(s.dataDir, "tmp");
    for (let i = 0; i < 500 && filesUnder(tmp).length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    expect(filesUnder(tmp).length).toBe(1);
    ac.abort();
    expect(await req).toBeInstanceOf(Error);
    // The server notices the aborted request and cleans up promptly (no hang holding the temp file).
    const deadline = Date.now() + 5000;
    while (filesUnder(tmp).length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(filesUnder(tmp)).toEqual([]);
    expect(blobKeys(s.dataDir)).toEqual(blobsBefore);
    expect((await client.files.list({ limit: 10_000 })).data.map((f) => f.id)).toEqual(listBefore);
  });

  it("a multipart body that ends inside the file part is a 400 (not a 500, not a crash) and stores nothing", async () => {
    const blobsBefore = (await storedBlobKeys(s));
    const boundary = "XyZtrunc";
    const body =
      `--${boundary}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\nuser_data\r\n` +
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhalf a fi`;
    const r = await api(s.baseURL, "/files", { method: "POST", body, headers: { "content-type": `multipart/form-data; boundary=${boundary}` } });
    await expectError(r, 400);
    expect((await storedBlobKeys(s))).toEqual(blobsBefore);
    expect(filesUnder(join(s.dataDir, "tmp"))).toEqual([]);
    // Still serving.
    expect((await api(s.baseURL, "/models")).status).toBe(200);
  });
});

describe("files: the 512 MB limit", () => {
  // Half a GiB once per suite run is enough: the limit is the same code on both set-ups.
  it.skipIf(SCALED)("a body slightly over 512 MiB is refused with 413 and leaves nothing in blobs/ or tmp/", async () => {
    const blobsBefore = blobKeys(s.dataDir);
    const listBefore = (await client.files.list({ limit: 10_000 })).data.map((f) => f.id);
    const size = 512 * 1024 * 1024 + 1;
    const body = generatedMultipart({ fields: [["purpose", "user_data"]], fileField: "file", filename: "huge.bin", size });
    const t0 = Date.now();
    const res = await fetch(`${s.baseURL}/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": body.contentType },
      body: body.stream,
      duplex: "half",
    } as RequestInit);
    const e = await expectError(res, 413, { param: "file" });
    expect(e.message).toMatch(/512/);
    const elapsed = Date.now() - t0;
    // Informative: how long the over-limit stream took end to end.
    console.log(`512 MiB + 1 upload rejected in ${elapsed} ms`);
    expect(blobKeys(s.dataDir)).toEqual(blobsBefore);
    expect(filesUnder(join(s.dataDir, "tmp"))).toEqual([]);
    expect((await client.files.list({ limit: 10_000 })).data.map((f) => f.id)).toEqual(listBefore);
  }, 60_000);
});

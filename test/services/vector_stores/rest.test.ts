// Vector stores (spec 4.3, 4.4, 2.3-2.5, 3) through the official SDK and raw fetch: stores,
// files, batches (and their cancel), search with every filter operator, detach vs delete, expiry,
// validation errors and tenancy. One server (the local sentence encoder loads once).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { API_KEY, KEYS, ManualClock, startTestServer, type TestServer } from "../../shared/server.js";
import { api, expectError, sdk, sdkError, toFile } from "../../shared/rest.js";
import { TOPICS, longText, settle, upload } from "../../shared/vector-stores.js";
import { pdf } from "../../fixtures/token-inputs.js";

const DAY = 24 * 3600;
const STORE_KEYS = ["created_at", "expires_after", "expires_at", "file_counts", "id", "last_active_at", "metadata", "name", "object", "status", "usage_bytes"];
const FILE_KEYS = ["attributes", "chunking_strategy", "created_at", "id", "last_error", "object", "status", "usage_bytes", "vector_store_id"];
const BATCH_KEYS = ["created_at", "file_counts", "id", "object", "status", "vector_store_id"];

let s: TestServer;
let clock: ManualClock;
let client: OpenAI;

beforeAll(async () => {
  clock = new ManualClock();
  s = await startTestServer({ clock });
  client = sdk(s.baseURL);
});
afterAll(async () => s?.stop());

const json = (res: Response) => res.json() as Promise<any>;

describe("stores: create, retrieve, list, update, delete", () => {
  it("creates with name, metadata and expires_after; every documented field present", async () => {
    const vs = await client.vectorStores.create({ name: "handbook", metadata: { team: "docs" }, expires_after: { anchor: "last_active_at", days: 7 } });
    expect(vs.id).toMatch(/^vs_[A-Za-z0-9]{24}$/);
    expect(Object.keys(vs).sort()).toEqual(STORE_KEYS);
    expect(vs).toMatchObject({
      object: "vector_store",
      name: "handbook",
      metadata: { team: "docs" },
      status: "completed",
      usage_bytes: 0,
      file_counts: { in_progress: 0, completed: 0, failed: 0, cancelled: 0, total: 0 },
      expires_after: { anchor: "last_active_at", days: 7 },
      created_at: clock.now(),
      last_active_at: clock.now(),
      expires_at: clock.now() + 7 * DAY,
    });
    expect(await client.vectorStores.retrieve(vs.id)).toEqual(vs);

    // Update: name, metadata replaced, expires_after removed with null.
    const up = await client.vectorStores.update(vs.id, { name: "handbook v2", metadata: { team: "eng", tier: "1" }, expires_after: null });
    expect(up).toMatchObject({ id: vs.id, name: "handbook v2", metadata: { team: "eng", tier: "1" }, expires_after: null, expires_at: null });
    // A field left out stays; metadata null clears.
    const up2 = await client.vectorStores.update(vs.id, { metadata: null });
    expect(up2).toMatchObject({ name: "handbook v2", metadata: {} });

    const del = await client.vectorStores.delete(vs.id);
    expect(del).toEqual({ id: vs.id, object: "vector_store.deleted", deleted: true });
    await sdkError(client.vectorStores.retrieve(vs.id), 404);
    await expectError(await api(s.baseURL, `/vector_stores/${vs.id}`, { method: "DELETE" }), 404, { param: "vector_store_id" });
  });

  it("lists newest first with after/before/limit/order and the SDK's auto-pagination", async () => {
    const c = sdk(s.baseURL, KEYS.projectB); // a project of its own: the list is exactly these
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      if (i % 2) clock.advance(1);
      ids.push((await c.vectorStores.create({ name: `s${i}` })).id);
    }
    const body = await json(await api(s.baseURL, "/vector_stores", { key: KEYS.projectB }));
    expect(Object.keys(body).sort()).toEqual(["data", "first_id", "has_more", "last_id", "object"]);
    expect(body.data.map((v: { id: string }) => v.id)).toEqual([...ids].reverse());
    const asc = await json(await api(s.baseURL, `/vector_stores?order=asc&limit=2&after=${ids[0]}`, { key: KEYS.projectB }));
    expect(asc.data.map((v: { id: string }) => v.id)).toEqual(ids.slice(1, 3));
    expect(asc.has_more).toBe(true);
    const before = await json(await api(s.baseURL, `/vector_stores?order=asc&limit=2&before=${ids[4]}`, { key: KEYS.projectB }));
    expect(before.data.map((v: { id: string }) => v.id)).toEqual(ids.slice(2, 4));
    const all: string[] = [];
    for await (const v of c.vectorStores.list({ limit: 2, order: "asc" })) all.push(v.id);
    expect(all).toEqual(ids);
  });
});

describe("files and batches through the official SDK", () => {
  let store: OpenAI.VectorStores.VectorStore;
  beforeAll(async () => {
    store = await client.vectorStores.create({ name: "sdk" });
  });

  it("fileBatches.uploadAndPoll uploads every file, attaches them in one batch and ends completed; the files are searchable", async () => {
    const own = await client.vectorStores.create({ name: "upload-and-poll" });
    const files = [
      await toFile(Buffer.from("Harbour pilots board every tanker at the outer buoy."), "pilots.txt"),
      await toFile(Buffer.from("The lighthouse lamp turns once every twelve seconds."), "lamp.txt"),
      await toFile(Buffer.from("Ferries leave the north quay on the hour."), "ferries.txt"),
    ];
    const existing = await upload(client, "Tide tables for the northern harbour.", "tides.txt");
    const batch = await client.vectorStores.fileBatches.uploadAndPoll(own.id, { files, fileIds: [existing] }, { pollIntervalMs: 50 });
    expect(batch).toMatchObject({ object: "vector_store.files_batch", vector_store_id: own.id, status: "completed", file_counts: { total: 4, completed: 4, failed: 0, in_progress: 0, cancelled: 0 } });
    const listed = [];
    for await (const f of client.vectorStores.fileBatches.listFiles(batch.id, { vector_store_id: own.id, limit: 2 })) listed.push(f);
    expect(listed.map((f) => f.status)).toEqual(["completed", "completed", "completed", "completed"]);
    expect(new Set(listed.map((f) => f.id))).toContain(existing);
    const hits = await client.vectorStores.search(own.id, { query: "lighthouse lamp seconds" });
    expect(hits.data[0]?.filename).toBe("lamp.txt");
  });

  it("files.uploadAndPoll terminates completed; the file, the store's counts and usage follow", async () => {
    const vf = await client.vectorStores.files.uploadAndPoll(store.id, await toFile(Buffer.from(longText(1, 12)), "notes.txt"), { pollIntervalMs: 50 });
    expect(Object.keys(vf).sort()).toEqual(FILE_KEYS);
    expect(vf).toMatchObject({
      object: "vector_store.file",
      vector_store_id: store.id,
      status: "completed",
      last_error: null,
      attributes: null,
      chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 400 } },
    });
    expect(vf.id).toMatch(/^file-/);
    expect(vf.usage_bytes).toBeGreaterThan(longText(1, 12).length);
    const after = await client.vectorStores.retrieve(store.id);
    expect(after).toMatchObject({ status: "completed", file_counts: { completed: 1, total: 1, in_progress: 0 } });
    expect(after.usage_bytes).toBe(vf.usage_bytes);

    // The parsed content, and attributes updated (and cleared with null).
    const page = await client.vectorStores.files.content(vf.id, { vector_store_id: store.id });
    expect(page.data).toEqual([{ type: "text", text: longText(1, 12) }]);
    const raw = await json(await api(s.baseURL, `/vector_stores/${store.id}/files/${vf.id}/content`));
    expect(raw).toEqual({ object: "vector_store.file_content.page", data: [{ type: "text", text: longText(1, 12) }], has_more: false, next_page: null });
    const upd = await client.vectorStores.files.update(vf.id, { vector_store_id: store.id, attributes: { lang: "en", pages: 3, public: true } });
    expect(upd.attributes).toEqual({ lang: "en", pages: 3, public: true });
    expect((await client.vectorStores.files.update(vf.id, { vector_store_id: store.id, attributes: null })).attributes).toBeNull();
  });

  it("files.createAndPoll with a static chunking strategy; unreadable files end failed with last_error", async () => {
    const id = await upload(client, longText(2, 10), "static.md");
    const vf = await client.vectorStores.files.createAndPoll(store.id, {
      file_id: id,
      attributes: { kind: "guide" },
      chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 120, chunk_overlap_tokens: 20 } },
    }, { pollIntervalMs: 50 });
    expect(vf).toMatchObject({ status: "completed", attributes: { kind: "guide" }, chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 120, chunk_overlap_tokens: 20 } } });

    const png = await upload(client, new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 1, 2]), "photo.png");
    const bad = await client.vectorStores.files.createAndPoll(store.id, { file_id: png }, { pollIntervalMs: 50 });
    expect(bad).toMatchObject({ status: "failed", usage_bytes: 0, last_error: { code: "unsupported_file", message: expect.stringMatching(/png/) } });
    const fakePdf = await upload(client, "this is not a pdf", "report.pdf");
    const bad2 = await client.vectorStores.files.createAndPoll(store.id, { file_id: fakePdf }, { pollIntervalMs: 50 });
    expect(bad2).toMatchObject({ status: "failed", last_error: { code: "invalid_file" } });

    const failed = await client.vectorStores.files.list(store.id, { filter: "failed" });
    expect(failed.data.map((f) => f.id).sort()).toEqual([png, fakePdf].sort());
    expect((await client.vectorStores.files.list(store.id, { filter: "completed" })).data.map((f) => f.id)).toContain(id);
    expect((await client.vectorStores.retrieve(store.id)).file_counts).toMatchObject({ completed: 2, failed: 2, total: 4 });
  });

  it("a PDF is indexed from its text", async () => {
    const id = await upload(client, pdf([{ w: 612, h: 792, text: "The lighthouse keeper logs every passing ship." }]), "log.pdf");
    const vf = await client.vectorStores.files.createAndPoll(store.id, { file_id: id }, { pollIntervalMs: 50 });
    expect(vf.status).toBe("completed");
    const r = await client.vectorStores.search(store.id, { query: "lighthouse keeper ships" });
    expect(r.data[0]).toMatchObject({ file_id: id, filename: "log.pdf" });
  });

  it("fileBatches.createAndPoll terminates completed; batch object, counts, listFiles with filter", async () => {
    const ids = [];
    for (let i = 0; i < 4; i++) ids.push(await upload(client, TOPICS[i]!, `b${i}.txt`));
    const batch = await client.vectorStores.fileBatches.createAndPoll(store.id, { file_ids: ids, attributes: { batch: "one" } }, { pollIntervalMs: 50 });
    expect(Object.keys(batch).sort()).toEqual(BATCH_KEYS);
    expect(batch.id).toMatch(/^vsfb_/);
    expect(batch).toMatchObject({ object: "vector_store.files_batch", vector_store_id: store.id, status: "completed", file_counts: { completed: 4, total: 4, in_progress: 0, failed: 0, cancelled: 0 } });
    const files = await client.vectorStores.fileBatches.listFiles(batch.id, { vector_store_id: store.id, order: "asc" });
    expect(files.data.map((f) => f.id)).toEqual(ids);
    expect(files.data.every((f) => f.status === "completed" && (f.attributes as any)?.batch === "one")).toBe(true);
    expect((await client.vectorStores.fileBatches.listFiles(batch.id, { vector_store_id: store.id, filter: "failed" })).data).toEqual([]);
    // The files_batches spelling reaches the same batch.
    const alt = await json(await api(s.baseURL, `/vector_stores/${store.id}/files_batches/${batch.id}`));
    expect(alt).toEqual(await json(await api(s.baseURL, `/vector_stores/${store.id}/file_batches/${batch.id}`)));
    const altFiles = await json(await api(s.baseURL, `/vector_stores/${store.id}/files_batches/${batch.id}/files?order=asc&limit=2`));
    expect(altFiles.data.map((f: { id: string }) => f.id)).toEqual(ids.slice(0, 2));
    expect(altFiles.has_more).toBe(true);
  });

  it("`files` gives per-file attributes and chunking (the top-level ones are ignored); files_batches creates too", async () => {
    const a = await upload(client, TOPICS[5]!, "castle.txt");
    const b = await upload(client, TOPICS[6]!, "cars.txt");
    const res = await api(s.baseURL, `/vector_stores/${store.id}/files_batches`, {
      method: "POST",
      json: {
        attributes: { ignored: true },
        chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 4096, chunk_overlap_tokens: 0 } },
        files: [
          { file_id: a, attributes: { era: "medieval" } },
          { file_id: b, chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 50 } } },
        ],
      },
    });
    expect(res.status).toBe(200);
    const batch = await json(res);
    expect(batch).toMatchObject({ object: "vector_store.files_batch", status: expect.stringMatching(/in_progress|completed/) });
    const done = await client.vectorStores.fileBatches.poll(store.id, batch.id, { pollIntervalMs: 50 });
    expect(done.status).toBe("completed");
    const fa = await client.vectorStores.files.retrieve(a, { vector_store_id: store.id });
    const fb = await client.vectorStores.files.retrieve(b, { vector_store_id: store.id });
    expect(fa).toMatchObject({ attributes: { era: "medieval" }, chunking_strategy: { static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 400 } } });
    expect(fb).toMatchObject({ attributes: null, chunking_strategy: { static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 50 } } });
  });

  it("cancel: outstanding files stop and end failed (terminal for both SDK pollers); the batch ends cancelled", async () => {
    const big = await client.vectorStores.create({ name: "cancel" });
    const ids = [];
    for (let i = 0; i < 24; i++) ids.push(await upload(client, longText(100 + i, 40), `long${i}.txt`));
    const batch = await client.vectorStores.fileBatches.create(big.id, { file_ids: ids });
    expect(batch.status).toBe("in_progress");
    const cancelled = await client.vectorStores.fileBatches.cancel(batch.id, { vector_store_id: big.id });
    expect(cancelled.status).toBe("cancelled");
    // The SDK's batch poller ends, and so does its file poller on every file. The files settle
    // slowly on a loaded machine (two instances): polls every 250 ms stay under the store's 300
    // requests a minute, and every later call retries a 429 after its retry-after, as the SDK's
    // default client does.
    const patient = sdk(s.baseURL, undefined, { maxRetries: 5 });
    const polled = await patient.vectorStores.fileBatches.poll(big.id, batch.id, { pollIntervalMs: 250 });
    expect(polled.status).toBe("cancelled");
    expect(polled.file_counts.in_progress).toBe(0);
    expect(polled.file_counts.failed).toBeGreaterThan(0);
    expect(polled.file_counts.completed + polled.file_counts.failed).toBe(24);
    for (const id of ids.slice(-3)) {
      const f = await patient.vectorStores.files.poll(big.id, id, { pollIntervalMs: 250 });
      expect(["completed", "failed"]).toContain(f.status);
    }
    const failed = await patient.vectorStores.fileBatches.listFiles(batch.id, { vector_store_id: big.id, filter: "failed", limit: 100 });
    expect(failed.data.length).toBe(polled.file_counts.failed);
    for (const f of failed.data) expect(f).toMatchObject({ usage_bytes: 0, last_error: { code: "server_error", message: expect.stringContaining("cancelled") } });
    // Nothing of a stopped file stays searchable, even once its job has wound down.
    await settle(patient, big.id);
    await new Promise((r) => setTimeout(r, 300));
    const failedIds = new Set(failed.data.map((f) => f.id));
    const hits = await patient.vectorStores.search(big.id, { query: "ledger entry filed section note", max_num_results: 50 });
    expect(hits.data.filter((h) => failedIds.has(h.file_id))).toEqual([]);
    // Cancelling again changes nothing.
    expect((await patient.vectorStores.fileBatches.cancel(batch.id, { vector_store_id: big.id })).status).toBe("cancelled");
    // A failed file can be attached again and then completes.
    const again = await patient.vectorStores.files.createAndPoll(big.id, { file_id: [...failedIds][0]! }, { pollIntervalMs: 50 });
    expect(again).toMatchObject({ status: "completed", last_error: null });
  });

  it("createAndPoll ends after a cancel: the batch poller cancelled mid-poll, the file poller of a member attached again meanwhile", async () => {
    const big = await client.vectorStores.create({ name: "cancel-poll" });
    const ids = [];
    for (let i = 0; i < 16; i++) ids.push(await upload(client, longText(200 + i, 40), `poll${i}.txt`));
    // A client that reports what its create requests returned, while its createAndPoll polls on.
    let created!: (id: string) => void;
    let attached!: () => void;
    const batchId = new Promise<string>((r) => (created = r));
    const reattached = new Promise<void>((r) => (attached = r));
    // Two pollers at 50 ms can reach the store's 300 requests a minute when ingestion is slow (a
    // loaded machine, two instances): this client retries a 429 after its retry-after, as the
    // SDK's default client does.
    const watching = sdk(s.baseURL, undefined, {
      maxRetries: 5,
      fetch: async (url: string | URL | Request, init?: RequestInit) => {
        const res = await fetch(url, init);
        if (init?.method === "POST" && String(url).endsWith(`/vector_stores/${big.id}/file_batches`)) created(((await res.clone().json()) as { id: string }).id);
        if (init?.method === "POST" && String(url).endsWith(`/vector_stores/${big.id}/files`)) attached();
        return res;
      },
    });
    const batchPoll = watching.vectorStores.fileBatches.createAndPoll(big.id, { file_ids: ids }, { pollIntervalMs: 50 });
    const id = await batchId;
    // The last member is attached again on its own: that attachment is not the batch's, so the cancel leaves it be.
    const filePoll = watching.vectorStores.files.createAndPoll(big.id, { file_id: ids[15]! }, { pollIntervalMs: 50 });
    await reattached;
    expect((await client.vectorStores.fileBatches.cancel(id, { vector_store_id: big.id })).status).toBe("cancelled");
    const [batch, file] = await Promise.all([batchPoll, filePoll]);
    expect(batch).toMatchObject({ id, status: "cancelled", file_counts: { in_progress: 0 } });
    expect(file).toMatchObject({ id: ids[15], status: "completed", last_error: null });
    // uploadAndPoll into the same store after the cancel ends too.
    const late = await client.vectorStores.files.uploadAndPoll(big.id, await toFile(Buffer.from(longText(300, 3)), "late.txt"), { pollIntervalMs: 50 });
    expect(late.status).toBe("completed");
  });
});

describe("search", () => {
  let store: OpenAI.VectorStores.VectorStore;
  const byName = new Map<string, string>();
  beforeAll(async () => {
    store = await client.vectorStores.create({ name: "search" });
    const docs: Array<[string, string]> = TOPICS.map((t, i) => [`topic${i}.txt`, t]);
    docs.push(["vault.txt", "Branch security memo. The vault combination for the Kestrel Street branch is 4-8-15-16; change it every quarter."]);
    docs.push(["clinic.txt", "Our physician prescribed an antibiotic for the toddler whose ear infection would not clear up."]);
    for (const [name, text] of docs) byName.set(name, await upload(client, text, name));
    const batch = await client.vectorStores.fileBatches.createAndPoll(store.id, { file_ids: [...byName.values()] }, { pollIntervalMs: 50 });
    expect(batch.file_counts.completed).toBe(docs.length);
  });

  it("finds a planted fact among distractors; the page has the documented shape", async () => {
    const res = await api(s.baseURL, `/vector_stores/${store.id}/search`, { method: "POST", json: { query: "What is the vault combination at the Kestrel Street branch?" } });
    expect(res.status).toBe(200);
    const page = await json(res);
    expect(Object.keys(page).sort()).toEqual(["data", "has_more", "next_page", "object", "search_query"]);
    expect(page).toMatchObject({ object: "vector_store.search_results.page", search_query: ["What is the vault combination at the Kestrel Street branch?"], has_more: false, next_page: null });
    expect(page.data.length).toBeGreaterThan(1);
    expect(page.data.length).toBeLessThanOrEqual(10);
    const top = page.data[0];
    expect(Object.keys(top).sort()).toEqual(["attributes", "content", "file_id", "filename", "score"]);
    expect(top).toMatchObject({ file_id: byName.get("vault.txt"), filename: "vault.txt", attributes: null });
    expect(top.content).toEqual([{ type: "text", text: expect.stringContaining("4-8-15-16") }]);
    for (const h of page.data) expect(h.score).toBeGreaterThanOrEqual(0);
    for (let i = 1; i < page.data.length; i++) expect(page.data[i].score).toBeLessThanOrEqual(page.data[i - 1].score);
    expect(top.score).toBeLessThanOrEqual(1);
  });

  it("a paraphrased question with no shared keywords finds its document through the dense side", async () => {
    const question = "Which medicine did the doctor give the little kid?";
    const doc = "Our physician prescribed an antibiotic for the toddler whose ear infection would not clear up.";
    const words = (t: string) => new Set(t.toLowerCase().match(/[a-z]+/g));
    const stop = new Set(["which", "did", "the", "for", "our", "whose", "would", "not", "up"]);
    expect([...words(question)].filter((w) => !stop.has(w) && words(doc).has(w))).toEqual([]);
    for (const ranker of ["auto", "default-2024-11-15", "none"] as const) {
      const r = await client.vectorStores.search(store.id, { query: question, ranking_options: { ranker } });
      expect(r.data[0]?.filename, ranker).toBe("clinic.txt");
    }
  });

  it("query arrays, rewrite_query, max_num_results and score_threshold", async () => {
    const r = await client.vectorStores.search(store.id, { query: ["Jupiter great red spot", "waggle dance of bees"], max_num_results: 2 });
    expect(r.data.length).toBe(2);
    expect(new Set(r.data.map((d) => d.filename))).toEqual(new Set(["topic2.txt", "topic7.txt"]));
    const rw = await json(await api(s.baseURL, `/vector_stores/${store.id}/search`, { method: "POST", json: { query: "What's the Vault Combination?!", rewrite_query: true } }));
    expect(rw.search_query).toEqual(["whats vault combination"]);
    expect(rw.data[0].filename).toBe("vault.txt");
    const strict = await client.vectorStores.search(store.id, { query: "vault combination Kestrel", ranking_options: { score_threshold: 0.99 } });
    expect(strict.data.every((d) => d.score >= 0.99)).toBe(true);
    expect((await client.vectorStores.search(store.id, { query: "vault combination Kestrel", max_num_results: 1 })).data.length).toBe(1);
  });

  it("a store with no files answers an empty page, every time", async () => {
    const empty = await client.vectorStores.create({ name: "nothing yet" });
    for (let i = 0; i < 3; i++) {
      const r = await json(await api(s.baseURL, `/vector_stores/${empty.id}/search`, { method: "POST", json: { query: `anything at all ${i}` } }));
      expect(r).toMatchObject({ object: "vector_store.search_results.page", search_query: [`anything at all ${i}`], data: [], has_more: false, next_page: null });
    }
  });
});

describe("search filters: every operator and nested compounds return exactly the matching files", () => {
  // Attributes of each file; each file's text shares the query words, so every file is a hit.
  const ATTRS: Array<Record<string, string | number | boolean>> = [
    { region: "eu", year: 2020, draft: false, score: 1.5 },
    { region: "us", year: 2021, draft: true },
    { region: "eu", year: 2022, draft: true, score: 7 },
    { region: "apac", year: 2023 },
    { region: "us", year: 2024, draft: false, score: -2 },
    { year: "2022", draft: false }, // a string year: never a numeric match
    {},
  ];
  let store: OpenAI.VectorStores.VectorStore;
  const ids: string[] = [];
  beforeAll(async () => {
    store = await client.vectorStores.create({ name: "filters" });
    for (const [i] of ATTRS.entries()) ids.push(await upload(client, `Quarterly whale migration survey, report ${i}: humpback whales observed near the coast.`, `survey${i}.txt`));
    const batch = await client.vectorStores.fileBatches.createAndPoll(store.id, { files: ids.map((file_id, i) => ({ file_id, attributes: ATTRS[i] })) }, { pollIntervalMs: 50 });
    expect(batch.file_counts.completed).toBe(ATTRS.length);
  });

  const run = async (filters: unknown) => {
    const res = await api(s.baseURL, `/vector_stores/${store.id}/search`, { method: "POST", json: { query: "whale migration survey humpback", max_num_results: 50, filters } });
    const body = await json(res);
    expect(res.status, JSON.stringify(body)).toBe(200);
    return [...new Set(body.data.map((d: { file_id: string }) => ids.indexOf(d.file_id)))].sort() as number[];
  };

  it.each([
    ["eq string", { type: "eq", key: "region", value: "eu" }, [0, 2]],
    ["eq number", { type: "eq", key: "year", value: 2022 }, [2]],
    ["eq boolean", { type: "eq", key: "draft", value: true }, [1, 2]],
    ["ne (files without the key match)", { type: "ne", key: "region", value: "eu" }, [1, 3, 4, 5, 6]],
    ["gt", { type: "gt", key: "year", value: 2022 }, [3, 4]],
    ["gte", { type: "gte", key: "year", value: 2022 }, [2, 3, 4]],
    ["lt", { type: "lt", key: "year", value: 2021 }, [0]],
    ["lte (decimals, negatives)", { type: "lte", key: "score", value: 1.5 }, [0, 4]],
    ["in", { type: "in", key: "region", value: ["us", "apac"] }, [1, 3, 4]],
    ["in numbers", { type: "in", key: "year", value: [2020, 2024, 1999] }, [0, 4]],
    ["nin", { type: "nin", key: "region", value: ["us", "apac"] }, [0, 2, 5, 6]],
    ["and", { type: "and", filters: [{ type: "eq", key: "region", value: "eu" }, { type: "eq", key: "draft", value: true }] }, [2]],
    ["or", { type: "or", filters: [{ type: "eq", key: "region", value: "apac" }, { type: "lt", key: "score", value: 0 }] }, [3, 4]],
    [
      "nested and(or(...), not-draft)",
      {
        type: "and",
        filters: [
          { type: "or", filters: [{ type: "eq", key: "region", value: "us" }, { type: "gte", key: "score", value: 1 }] },
          { type: "ne", key: "draft", value: true },
        ],
      },
      [0, 4],
    ],
    ["or of ands", { type: "or", filters: [{ type: "and", filters: [{ type: "eq", key: "region", value: "us" }, { type: "eq", key: "draft", value: true }] }, { type: "eq", key: "year", value: "2022" }] }, [1, 5]],
  ])("%s", async (_name, filters, want) => {
    expect(await run(filters)).toEqual(want);
  });

  it("an attributes update is seen by the next search", async () => {
    await client.vectorStores.files.update(ids[6]!, { vector_store_id: store.id, attributes: { region: "eu" } });
    expect(await run({ type: "eq", key: "region", value: "eu" })).toEqual([0, 2, 6]);
  });
});

describe("detach vs delete", () => {
  it("detaching keeps the File; deleting the File removes it from every store", async () => {
    const one = await client.vectorStores.create({ name: "one" });
    const two = await client.vectorStores.create({ name: "two" });
    const keep = await upload(client, "Penguins huddle together to survive the Antarctic winter.", "penguins.txt");
    const gone = await upload(client, "Penguins dive for krill and small fish in icy water.", "krill.txt");
    for (const vs of [one, two]) await client.vectorStores.fileBatches.createAndPoll(vs.id, { file_ids: [keep, gone] }, { pollIntervalMs: 50 });

    const det = await client.vectorStores.files.delete(keep, { vector_store_id: one.id });
    expect(det).toEqual({ id: keep, object: "vector_store.file.deleted", deleted: true });
    expect((await client.files.retrieve(keep)).id).toBe(keep); // the File stays
    await sdkError(client.vectorStores.files.retrieve(keep, { vector_store_id: one.id }), 404);
    expect((await client.vectorStores.files.retrieve(keep, { vector_store_id: two.id })).status).toBe("completed");
    const hits = await client.vectorStores.search(one.id, { query: "penguins" });
    expect(hits.data.map((h) => h.file_id)).toEqual([gone]);

    await client.files.delete(gone);
    for (const vs of [one, two]) {
      await sdkError(client.vectorStores.files.retrieve(gone, { vector_store_id: vs.id }), 404);
      expect((await client.vectorStores.search(vs.id, { query: "penguins krill" })).data.map((h) => h.file_id)).not.toContain(gone);
    }
    expect((await client.vectorStores.retrieve(one.id)).file_counts.total).toBe(0);
    expect((await client.vectorStores.retrieve(two.id)).file_counts).toMatchObject({ total: 1, completed: 1 });

    // Deleting a store keeps its Files too.
    await client.vectorStores.delete(two.id);
    expect((await client.files.retrieve(keep)).id).toBe(keep);
    await expectError(await api(s.baseURL, `/vector_stores/${two.id}/files`), 404, { param: "vector_store_id" });
  });

  it("a File that expires leaves every store it was attached to, and its chunks leave the index", async () => {
    const vs = await client.vectorStores.create({ name: "short-lived file" });
    const file = await client.files.create({
      file: await toFile(Buffer.from("Lighthouse keepers logged every passing ship by lamplight."), "keepers.txt"),
      purpose: "assistants",
      expires_after: { anchor: "created_at", seconds: 3600 },
    });
    await client.vectorStores.files.createAndPoll(vs.id, { file_id: file.id }, { pollIntervalMs: 50 });
    expect((await client.vectorStores.search(vs.id, { query: "lighthouse keepers" })).data.map((h) => h.file_id)).toEqual([file.id]);
    clock.advance(3601);
    await s.sweeper.runOnce();
    await sdkError(client.files.retrieve(file.id), 404);
    await sdkError(client.vectorStores.files.retrieve(file.id, { vector_store_id: vs.id }), 404);
    expect((await client.vectorStores.search(vs.id, { query: "lighthouse keepers" })).data).toEqual([]);
    expect((await client.vectorStores.retrieve(vs.id)).file_counts.total).toBe(0);
  });
});

describe("expiry", () => {
  it("expires_after counts from last_active_at; searches move it; an expired store stays expired and refuses search", async () => {
    const id = await upload(client, "Tide tables for the northern harbour.", "tides.txt");
    const vs = await client.vectorStores.create({ name: "short", file_ids: [id], expires_after: { anchor: "last_active_at", days: 1 } });
    await settle(client, vs.id);
    const t0 = clock.now();
    clock.advance(DAY / 2);
    await client.vectorStores.search(vs.id, { query: "tide tables" }); // last_active_at moves
    expect(await client.vectorStores.retrieve(vs.id)).toMatchObject({ last_active_at: t0 + DAY / 2, expires_at: t0 + DAY + DAY / 2, status: "completed" });
    clock.advance(DAY / 2 + 60); // past the first expires_at, not the moved one
    await s.sweeper.runOnce();
    expect((await client.vectorStores.retrieve(vs.id)).status).toBe("completed");
    clock.advance(DAY);
    await s.sweeper.runOnce();
    const expired = await client.vectorStores.retrieve(vs.id);
    expect(expired.status).toBe("expired");
    const e = await expectError(await api(s.baseURL, `/vector_stores/${vs.id}/search`, { method: "POST", json: { query: "tide" } }), 400, {
      param: "vector_store_id",
      code: "vector_store_expired",
    });
    expect(e.message).toMatch(/expired/);
    await expectError(await api(s.baseURL, `/vector_stores/${vs.id}/files`, { method: "POST", json: { file_id: id } }), 400, { code: "vector_store_expired" });
    // Durable: removing the policy does not bring it back.
    expect((await client.vectorStores.update(vs.id, { expires_after: null })).status).toBe("expired");
    expect((await client.vectorStores.list({ limit: 100 })).data.find((v) => v.id === vs.id)?.status).toBe("expired");
  });
});

describe("last_active_at", () => {
  it("an update is activity: it moves last_active_at and expires_at, and the store outlives its first expires_at", async () => {
    const vs = await client.vectorStores.create({ name: "busy", expires_after: { anchor: "last_active_at", days: 1 } });
    const t0 = clock.now();
    expect(vs).toMatchObject({ last_active_at: t0, expires_at: t0 + DAY });
    clock.advance(DAY / 2);
    const renamed = await client.vectorStores.update(vs.id, { name: "busier" });
    expect(renamed).toMatchObject({ name: "busier", last_active_at: t0 + DAY / 2, expires_at: t0 + DAY + DAY / 2 });
    clock.advance(DAY / 2 + 60); // past the first expires_at, not the moved one
    await s.sweeper.runOnce();
    expect(await client.vectorStores.retrieve(vs.id)).toMatchObject({ status: "completed", last_active_at: t0 + DAY / 2 });
    clock.advance(DAY);
    await s.sweeper.runOnce();
    expect((await client.vectorStores.retrieve(vs.id)).status).toBe("expired");
  });
});

describe("validation errors name the field", () => {
  let vsId: string;
  let fileId: string;
  beforeAll(async () => {
    vsId = (await client.vectorStores.create({ name: "v" })).id;
    fileId = await upload(client, "valid text", "v.txt");
  });
  const post = (path: string, body: unknown) => api(s.baseURL, path, { method: "POST", json: body });
  const metadata17 = Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"]));
  /** `and` filters nested `depth` levels deep around one comparison. */
  const deepFilter = (depth: number): unknown => (depth === 0 ? { type: "eq", key: "a", value: 1 } : { type: "and", filters: [deepFilter(depth - 1)] });

  it.each([
    ["/vector_stores", { expires_after: { anchor: "created_at", days: 1 } }, "expires_after.anchor", "invalid_value"],
    ["/vector_stores", { expires_after: { anchor: "last_active_at" } }, "expires_after.days", "missing_required_parameter"],
    ["/vector_stores", { expires_after: { anchor: "last_active_at", days: 0 } }, "expires_after.days", "integer_out_of_range"],
    ["/vector_stores", { metadata: metadata17 }, "metadata", "object_above_max_properties"],
    ["/vector_stores", { metadata: { k: 1 } }, "metadata.k", "invalid_type"],
    ["/vector_stores", { chunking_strategy: { type: "bogus" } }, "chunking_strategy.type", "invalid_value"],
    ["/vector_stores", { chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 99, chunk_overlap_tokens: 0 } } }, "chunking_strategy.static.max_chunk_size_tokens", "integer_out_of_range"],
    ["/vector_stores", { chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 4097, chunk_overlap_tokens: 0 } } }, "chunking_strategy.static.max_chunk_size_tokens", "integer_out_of_range"],
    ["/vector_stores", { chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 800, chunk_overlap_tokens: 401 } } }, "chunking_strategy.static.chunk_overlap_tokens", "integer_out_of_range"],
    ["/vector_stores", { chunking_strategy: { type: "static" } }, "chunking_strategy.static", "missing_required_parameter"],
    ["/vector_stores", { name: 5 }, "name", "invalid_type"],
    ["/vector_stores", { bogus: 1 }, "bogus", "unknown_parameter"],
  ])("POST %s %j → 400 %s", async (path, body, param, code) => {
    await expectError(await post(path, body), 400, { param, code, type: "invalid_request_error" });
  });

  it("files, batches, search and lists", async () => {
    const cases: Array<[string, unknown, string, string]> = [
      [`/vector_stores/${vsId}/files`, {}, "file_id", "missing_required_parameter"],
      [`/vector_stores/${vsId}/files`, { file_id: fileId, attributes: metadata17 }, "attributes", "object_above_max_properties"],
      [`/vector_stores/${vsId}/files`, { file_id: fileId, attributes: { nested: { a: 1 } } }, "attributes.nested", "invalid_type"],
      [`/vector_stores/${vsId}/files`, { file_id: fileId, attributes: { ["k".repeat(65)]: 1 } }, "attributes", "key_too_long"],
      [`/vector_stores/${vsId}/files`, { file_id: fileId, attributes: { s: "x".repeat(513) } }, "attributes.s", "string_above_max_length"],
      [`/vector_stores/${vsId}/files/${fileId}`, {}, "attributes", "missing_required_parameter"],
      [`/vector_stores/${vsId}/file_batches`, {}, "file_ids", "missing_required_parameter"],
      [`/vector_stores/${vsId}/file_batches`, { file_ids: [fileId], files: [{ file_id: fileId }] }, "files", "mutually_exclusive_parameters"],
      [`/vector_stores/${vsId}/file_batches`, { file_ids: Array.from({ length: 2001 }, () => fileId) }, "file_ids", "array_above_max_length"],
      [`/vector_stores/${vsId}/file_batches`, { files: [{ attributes: {} }] }, "files[0].file_id", "missing_required_parameter"],
      [`/vector_stores/${vsId}/file_batches`, { files: [{ file_id: fileId, chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 50 } } }] }, "files[0].chunking_strategy.static.max_chunk_size_tokens", "integer_out_of_range"],
      [`/vector_stores/${vsId}/search`, {}, "query", "missing_required_parameter"],
      [`/vector_stores/${vsId}/search`, { query: [] }, "query", "empty_array"],
      [`/vector_stores/${vsId}/search`, { query: 5 }, "query", "invalid_type"],
      [`/vector_stores/${vsId}/search`, { query: ["ok", 3] }, "query[1]", "invalid_type"],
      [`/vector_stores/${vsId}/search`, { query: "  " }, "query", "empty_string"],
      [`/vector_stores/${vsId}/search`, { query: "x", max_num_results: 0 }, "max_num_results", "integer_out_of_range"],
      [`/vector_stores/${vsId}/search`, { query: "x", max_num_results: 51 }, "max_num_results", "integer_out_of_range"],
      [`/vector_stores/${vsId}/search`, { query: "x", ranking_options: { ranker: "best" } }, "ranking_options.ranker", "invalid_value"],
      [`/vector_stores/${vsId}/search`, { query: "x", ranking_options: { score_threshold: 1.5 } }, "ranking_options.score_threshold", "number_out_of_range"],
      [`/vector_stores/${vsId}/search`, { query: "x", filters: { type: "like", key: "a", value: 1 } }, "filters.type", "invalid_value"],
      [`/vector_stores/${vsId}/search`, { query: "x", filters: { type: "gt", key: "a", value: "1" } }, "filters.value", "invalid_type"],
      [`/vector_stores/${vsId}/search`, { query: "x", filters: { type: "in", key: "a", value: 3 } }, "filters.value", "invalid_type"],
      [`/vector_stores/${vsId}/search`, { query: "x", filters: { type: "eq", value: 3 } }, "filters.key", "missing_required_parameter"],
      [`/vector_stores/${vsId}/search`, { query: "x", filters: { type: "and", filters: [{ type: "eq", key: "a", value: 1 }, { type: "or", filters: [{ type: "eq", value: 1 }] }] } }, "filters.filters[1].filters[0].key", "missing_required_parameter"],
      [`/vector_stores/${vsId}/search`, { query: "x", rewrite_query: "yes" }, "rewrite_query", "invalid_type"],
      [`/vector_stores/${vsId}/search`, { query: Array.from({ length: 21 }, () => "x") }, "query", "array_above_max_length"],
      // Every query character is work for the shared encoder: a megabyte is refused before any of it.
      [`/vector_stores/${vsId}/search`, { query: "word ".repeat(200_000) }, "query", "string_above_max_length"],
      [`/vector_stores/${vsId}/search`, { query: ["ok", "x".repeat(4097)] }, "query[1]", "string_above_max_length"],
      [`/vector_stores/${vsId}/search`, { query: Array.from({ length: 5 }, () => "y".repeat(4000)) }, "query", "string_above_max_length"],
      [`/vector_stores/${vsId}/search`, { query: "x", filters: { type: "nin", key: "a", value: [{}] } }, "filters.value[0]", "invalid_type"],
      [`/vector_stores/${vsId}/search`, { query: "x", filters: deepFilter(11) }, "filters" + ".filters[0]".repeat(10), "invalid_value"],
      [`/vector_stores/${vsId}/file_batches`, { files: Array.from({ length: 2001 }, () => ({ file_id: fileId })) }, "files", "array_above_max_length"],
      ["/vector_stores", { file_ids: Array.from({ length: 2001 }, () => fileId) }, "file_ids", "array_above_max_length"],
      ["/vector_stores", { expires_after: { anchor: "last_active_at", days: 366 } }, "expires_after.days", "integer_out_of_range"],
      // Modify: each field nullable, each still validated.
      [`/vector_stores/${vsId}`, { name: 5 }, "name", "invalid_type"],
      [`/vector_stores/${vsId}`, { metadata: metadata17 }, "metadata", "object_above_max_properties"],
      [`/vector_stores/${vsId}`, { expires_after: { anchor: "created_at", days: 1 } }, "expires_after.anchor", "invalid_value"],
      [`/vector_stores/${vsId}/files/${fileId}`, { attributes: { b: [1] } }, "attributes.b", "invalid_type"],
    ];
    for (const [path, body, param, code] of cases) {
      const res = await post(path, body);
      await expectError(res, 400, { param, code });
    }
    // At the limits: one query of 4,096 characters, four that make 16,384 together.
    expect((await post(`/vector_stores/${vsId}/search`, { query: "z ".repeat(2048) })).status).toBe(200);
    expect((await post(`/vector_stores/${vsId}/search`, { query: Array.from({ length: 4 }, () => "q ".repeat(2048)) })).status).toBe(200);
    const gets: Array<[string, string, string]> = [
      [`/vector_stores?limit=0`, "limit", "integer_out_of_range"],
      [`/vector_stores?limit=101`, "limit", "integer_out_of_range"],
      [`/vector_stores?order=up`, "order", "invalid_value"],
      [`/vector_stores?after=vs_nope`, "after", "invalid_cursor"],
      [`/vector_stores?after=${"v".repeat(256)}`, "after", "invalid_cursor"],
      [`/vector_stores?after=${"v".repeat(257)}`, "after", "string_above_max_length"],
      [`/vector_stores/${vsId}/files?before=${"f".repeat(257)}`, "before", "string_above_max_length"],
      [`/vector_stores/${vsId}/files?filter=done`, "filter", "invalid_value"],
      [`/vector_stores/${vsId}/files?before=file-nope`, "before", "invalid_cursor"],
      [`/vector_stores/${vsId}/files?bogus=1`, "bogus", "unknown_parameter"],
    ];
    for (const [path, param, code] of gets) await expectError(await api(s.baseURL, path), 400, { param, code });
  });

  it("caps: name 256 and description 512 characters, ids 256; at the cap taken, one over refused and nothing stored", async () => {
    const storeCount = async () => (await json(await api(s.baseURL, "/vector_stores?limit=100"))).data.length;
    const before = await storeCount();
    const atCap = await client.vectorStores.create({ name: "n".repeat(256), description: "d".repeat(512) });
    expect(atCap.name).toBe("n".repeat(256));
    const refused: Array<[string, unknown, string, number]> = [
      ["/vector_stores", { name: "n".repeat(257) }, "name", 256],
      ["/vector_stores", { name: "n".repeat(2 * 1024 * 1024) }, "name", 256],
      ["/vector_stores", { description: "d".repeat(513) }, "description", 512],
      ["/vector_stores", { file_ids: ["f".repeat(257)] }, "file_ids[0]", 256],
      [`/vector_stores/${atCap.id}`, { name: "m".repeat(257) }, "name", 256],
      [`/vector_stores/${atCap.id}/files`, { file_id: "f".repeat(257) }, "file_id", 256],
      [`/vector_stores/${atCap.id}/file_batches`, { file_ids: [fileId, "f".repeat(257)] }, "file_ids[1]", 256],
      [`/vector_stores/${atCap.id}/file_batches`, { files: [{ file_id: "f".repeat(257) }] }, "files[0].file_id", 256],
    ];
    for (const [path, body, param, limit] of refused)
      await expectError(await post(path, body), 400, { param, code: "string_above_max_length", message: new RegExp(`maximum length ${limit}\\b`) });
    expect(await storeCount()).toBe(before + 1);
    const kept = await client.vectorStores.retrieve(atCap.id);
    expect(kept.name).toBe("n".repeat(256));
    expect(kept.file_counts.total).toBe(0);
    expect((await client.vectorStores.update(atCap.id, { name: "m".repeat(256) })).name).toBe("m".repeat(256));
    await client.vectorStores.delete(atCap.id);
  });

  it("unknown ids are 404s naming the parameter", async () => {
    await expectError(await api(s.baseURL, "/vector_stores/vs_nope"), 404, { param: "vector_store_id" });
    await expectError(await post(`/vector_stores/${vsId}/files`, { file_id: "file-nope" }), 404, { param: "file_id" });
    await expectError(await post(`/vector_stores/${vsId}/file_batches`, { file_ids: [fileId, "file-nope"] }), 404, { param: "file_ids[1]" });
    await expectError(await post("/vector_stores", { file_ids: ["file-nope"] }), 404, { param: "file_ids[0]" });
    await expectError(await api(s.baseURL, `/vector_stores/${vsId}/files/file-nope`), 404, { param: "file_id" });
    await expectError(await api(s.baseURL, `/vector_stores/${vsId}/file_batches/vsfb_nope`), 404, { param: "batch_id" });
    await expectError(await post(`/vector_stores/${vsId}/file_batches/vsfb_nope/cancel`, {}), 404, { param: "batch_id" });
    // Nothing was half-written by the refused requests.
    expect((await client.vectorStores.retrieve(vsId)).file_counts.total).toBe(0);
  });
});

describe("tenancy", () => {
  it("another project's store is a 404 everywhere; a reader reads but cannot write", async () => {
    const fileId = await upload(client, "Secret launch plans for the new product line.", "plans.txt");
    const vs = await client.vectorStores.create({ name: "mine", file_ids: [fileId] });
    await settle(client, vs.id);
    for (const key of [KEYS.projectB, KEYS.otherOrg]) {
      const o = { key };
      await expectError(await api(s.baseURL, `/vector_stores/${vs.id}`, o), 404, { param: "vector_store_id" });
      await expectError(await api(s.baseURL, `/vector_stores/${vs.id}/files`, o), 404);
      await expectError(await api(s.baseURL, `/vector_stores/${vs.id}/files/${fileId}`, o), 404);
      await expectError(await api(s.baseURL, `/vector_stores/${vs.id}/search`, { ...o, method: "POST", json: { query: "launch plans" } }), 404);
      await expectError(await api(s.baseURL, `/vector_stores/${vs.id}`, { ...o, method: "DELETE" }), 404);
      await expectError(await api(s.baseURL, `/vector_stores/${vs.id}/files`, { ...o, method: "POST", json: { file_id: fileId } }), 404);
      const list = await json(await api(s.baseURL, "/vector_stores?limit=100", o));
      expect(list.data.map((v: { id: string }) => v.id)).not.toContain(vs.id);
    }
    // Another project's File cannot be attached to a store of this one, nor the reverse.
    const theirs = await upload(sdk(s.baseURL, KEYS.projectB), "their file", "theirs.txt");
    await expectError(await api(s.baseURL, `/vector_stores/${vs.id}/files`, { method: "POST", json: { file_id: theirs } }), 404, { param: "file_id" });

    const reader = { key: KEYS.reader };
    expect((await json(await api(s.baseURL, `/vector_stores/${vs.id}`, reader))).id).toBe(vs.id);
    expect((await api(s.baseURL, `/vector_stores/${vs.id}/search`, { ...reader, method: "POST", json: { query: "launch" } })).status).toBe(200);
    await expectError(await api(s.baseURL, `/vector_stores/${vs.id}`, { ...reader, method: "DELETE" }), 403);
    await expectError(await api(s.baseURL, "/vector_stores", { ...reader, method: "POST", json: {} }), 403);
    expect((await client.vectorStores.retrieve(vs.id)).id).toBe(vs.id);
    expect(API_KEY).toBeTruthy();
  });
});

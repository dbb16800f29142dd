// Batches on worker threads (src/services/batches/worker.ts): the input is read in chunks of
// bytes (requestChunks), checked chunk by chunk (checkChunk, merged by InputCheck), and token
// counting runs on the workers, asking the main thread for Files and fine-tuned models. What a
// batch answers must not depend on where it ran: the same input gives the same output and error
// lines, the same counts and the same errors.data with `batches.workers` 0 (all on the event
// loop) and 2, across chunk and slice boundaries, CRLF, blank and non-ASCII lines.
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import type { Principal } from "../../../src/auth/principal.js";
import { storageLookups, responsesServiceWith } from "../../../src/services/responses/handler.js";
import { countInputTokensCall } from "../../../src/services/batches/endpoints.js";
import { checkChunk, CHUNK_MAX_BYTES, chunkSize, InputCheck, MAX_LISTED_ERRORS, MAX_REQUESTS, requestChunks, requestTexts, subChunk, type RequestChunk } from "../../../src/services/batches/input.js";
import { runRequests } from "../../../src/services/batches/run.js";
import { BatchWorkers } from "../../../src/services/batches/pool.js";
import { runJob } from "../../../src/services/batches/jobs.js";
import type { BlobStore } from "../../../src/storage/types.js";
import { startTestServer, tempDir, testConfig, type TestServer } from "../../shared/server.js";
import { api, fileLines, sdk, toFile } from "../../shared/rest.js";
import { pollUntil } from "../../shared/poll.js";
import { pdf, png } from "../../fixtures/token-inputs.js";

const INPUT_TOKENS = "/v1/responses/input_tokens" as OpenAI.BatchCreateParams["endpoint"];
const FT = "ft:gpt-4o:org-default:mine:w0rk3r";

/** A blob store whose one blob arrives in pieces of `piece` bytes (lines and characters cut anywhere). */
function piecesOf(text: string | Buffer, piece: number): BlobStore {
  const bytes = Buffer.from(text);
  return {
    get: () => Readable.from(Array.from({ length: Math.ceil(bytes.length / piece) }, (_, i) => bytes.subarray(i * piece, (i + 1) * piece))),
  } as unknown as BlobStore;
}

async function chunksOf(blobs: BlobStore, size: number): Promise<RequestChunk[]> {
  const out: RequestChunk[] = [];
  for await (const c of requestChunks(blobs.get("k"), size)) out.push(c);
  return out;
}

const texts = (c: RequestChunk) => Array.from({ length: chunkSize(c) }, (_, i) => requestTexts(c)(i));

describe("requestChunks: the input's requests, in chunks of bytes", () => {
  const file = ['{"a":1}', "", "   ", '{"b":"naïve café 東京 🚀"}\r', "\t", "\u00a0\u3000", '{"c":3}\r', "\r", '{"d":"last, no newline"}'].join("\n");

  for (const piece of [1, 2, 3, 7, 64 * 1024]) {
    it(`pieces of ${piece} bytes: blank lines skipped, CR dropped, multi-byte characters whole, 1-based line numbers`, async () => {
      const chunks = await chunksOf(piecesOf(file, piece), 2);
      expect(chunks.map(chunkSize)).toEqual([2, 2]);
      expect(chunks.flatMap(texts)).toEqual(['{"a":1}', '{"b":"naïve café 東京 🚀"}', '{"c":3}', '{"d":"last, no newline"}']);
      expect(chunks.flatMap((c) => Array.from(c.lines))).toEqual([1, 4, 7, 9]);
    });
  }

  it("a file of blank lines has no chunks; a chunk's buffers are its own (movable to a worker)", async () => {
    expect(await chunksOf(piecesOf("\n \n\r\n\t\n", 3), 10)).toEqual([]);
    const [c] = await chunksOf(piecesOf('{"x":1}\n{"y":2}\n', 4), 10);
    expect(c!.bytes.byteOffset).toBe(0);
    expect(c!.bytes.buffer.byteLength).toBe(c!.bytes.byteLength);
    const sub = subChunk(c!, 1, 2);
    expect(texts(sub)).toEqual(['{"y":2}']);
    expect(Array.from(sub.lines)).toEqual([2]);
    expect(sub.bytes.byteLength).toBe(7);
  });

  it(`a chunk also ends at ${CHUNK_MAX_BYTES / 1024 / 1024} MiB, so a file of long lines is never held whole`, async () => {
    const long = (c: string) => JSON.stringify({ t: c.repeat(3 * 1024 * 1024) });
    const chunks = await chunksOf(piecesOf([long("a"), long("b"), long("c")].join("\n"), 64 * 1024), 512);
    expect(chunks.map(chunkSize)).toEqual([2, 1]);
    expect(chunks.map((c) => c.bytes.byteLength)).toEqual([2 * long("a").length, long("c").length]);
    expect(texts(chunks[1]!)).toEqual([long("c")]);
  });

  it("a chunk with non-ASCII text is cut by bytes, not characters", async () => {
    const [c] = await chunksOf(piecesOf('"é"\n"ü€"\n"x"\n', 5), 10);
    expect(texts(c!)).toEqual(['"é"', '"ü€"', '"x"']);
  });
});

describe("checkChunk and InputCheck: the verdict does not depend on how the file is cut", () => {
  const E = "/v1/embeddings";
  const ok = (id: string) => JSON.stringify({ custom_id: id, method: "POST", url: E, body: { model: "m", input: "x" } });

  async function verdict(lines: string[], size: number) {
    const check = new InputCheck();
    for (const c of await chunksOf(piecesOf(lines.join("\n") + "\n", 1000), size)) {
      check.add(c, checkChunk(c, E));
      if (check.finished) break;
    }
    return check.end();
  }

  it("duplicates across chunks, errors in line order, at most MAX_LISTED_ERRORS, the first model", async () => {
    const lines = Array.from({ length: 400 }, (_, i) => ok(`r${i}`));
    lines[2] = JSON.stringify({ custom_id: "r2", method: "POST", url: E, body: { input: "no model" } });
    lines[3] = "{bad";
    lines[5] = ok("r1"); // duplicate of line 2, after an error in the same chunk
    lines[150] = "{not json";
    lines[151] = JSON.stringify({ custom_id: "x", method: "POST", url: "/v1/moderations", body: {} });
    for (let i = 200; i < 400; i++) lines[i] = JSON.stringify({ custom_id: `g${i}`, method: "GET", url: E, body: {} });
    const whole = await verdict(lines, 100_000);
    for (const size of [1, 7, 64, 512]) expect(await verdict(lines, size)).toEqual(whole);
    expect(whole.total).toBe(400);
    expect(whole.model).toBe("m");
    expect(whole.errors).toHaveLength(MAX_LISTED_ERRORS);
    expect(whole.errors.slice(0, 5).map((e) => [e.line, e.code])).toEqual([
      [4, "invalid_json_line"],
      [6, "duplicate_custom_id"],
      [151, "invalid_json_line"],
      [152, "invalid_url"],
      [201, "invalid_method"],
    ]);
    expect(whole.errors.at(-1)!.line).toBe(201 + MAX_LISTED_ERRORS - 5);
  });

  it(`more than ${MAX_REQUESTS} requests: too_many_requests on the first one too many, whatever the chunking`, async () => {
    const lines = Array.from({ length: MAX_REQUESTS + 5 }, (_, i) => ok(`r${i}`));
    lines.splice(10, 0, ""); // a blank line is not a request: the error names the file's line
    for (const size of [512, 3333]) {
      const v = await verdict(lines, size);
      expect(v.total).toBe(MAX_REQUESTS + 1);
      expect(v.errors).toEqual([{ code: "too_many_requests", line: MAX_REQUESTS + 2, message: expect.stringContaining(`more than ${MAX_REQUESTS}`), param: null }]);
    }
  });

  it("an empty file", async () => {
    expect((await verdict(["", " "], 10)).errors.map((e) => e.code)).toEqual(["empty_file"]);
  });
});

/** Token-counting lines of every kind the counter reads: text, messages, Files (an image, a PDF), fine-tuned models, refusals. */
function countingLines(n: number, files: { png: string; pdf: string }): string {
  const rows: string[] = [];
  for (let i = 0; i < n; i++) {
    let body: unknown;
    switch (i % 13) {
      case 0:
        body = { model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_image", file_id: files.png, detail: "high" }] }] };
        break;
      case 1:
        body = { model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_file", file_id: files.pdf }] }] };
        break;
      case 2:
        body = { model: FT, input: `tuned ${i}` };
        break;
      case 3:
        body = { model: "ft:gpt-4o:org-default:nobody:none", input: "x" }; // 404 model
        break;
      case 4:
        body = { model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_file", file_id: "file-doesnotexist" }] }] }; // 404 file
        break;
      case 5:
        body = { model: "gpt-4o", input: "x", colour: "blue" }; // REST refuses the field: 400
        break;
      case 6:
        body = { model: "gpt-4o", input: `naïve café 東京 🚀 ${i}`, instructions: "Réponds en français." };
        break;
      default:
        body = { model: "gpt-4o", input: [{ role: "user", content: `request ${i}: ${"word ".repeat(i % 40)}` }] };
    }
    rows.push(JSON.stringify({ custom_id: `c${i}`, method: "POST", url: INPUT_TOKENS, body }) + (i % 17 === 0 ? "\r" : ""));
    if (i % 250 === 0) rows.push(i % 500 === 0 ? "" : "  \t");
  }
  return rows.join("\n") + "\n";
}

/** A line of an output or error file without its per-run ids. */
const stable = (l: any) => ({ ...l, id: undefined, response: l.response && { ...l.response, request_id: undefined } });

const ENDED = ["completed", "failed", "cancelled", "expired"];

/** Uploads `text` as a token-counting batch's input, runs it to its end, and reads its files; `afterCreate` acts on it first. */
async function runBatch(c: OpenAI, text: string, opts: { ms?: number; afterCreate?: (id: string) => Promise<unknown> } = {}) {
  const input = await c.files.create({ file: await toFile(Buffer.from(text), "in.jsonl"), purpose: "batch" });
  const b = await c.batches.create({ input_file_id: input.id, endpoint: INPUT_TOKENS, completion_window: "24h" });
  await opts.afterCreate?.(b.id);
  const done = await pollUntil(() => c.batches.retrieve(b.id), (x) => ENDED.includes(x.status), `batch ${b.id}`, { ms: opts.ms ?? 60_000 });
  return { done, out: await fileLines(c, done.output_file_id), errs: await fileLines(c, done.error_file_id) };
}

describe("the same batch on the event loop (workers 0) and on worker threads (workers 2)", () => {
  const servers: Record<"thread" | "pooled", TestServer> = {} as never;
  const clients: Record<string, OpenAI> = {};
  const files: Record<string, { png: string; pdf: string }> = {};

  beforeAll(async () => {
    for (const [name, workers] of [["thread", 0], ["pooled", 2]] as const) {
      const dir = tempDir();
      const path = testConfig(dir);
      // Slices of 700: the second starts in the middle of a chunk of 512.
      writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), batches: { workers, slice_lines: 700 } }));
      const s = await startTestServer({ dataDir: dir, env: { ATRIUM_CONFIG: path } });
      servers[name] = s;
      const c = sdk(s.baseURL);
      clients[name] = c;
      const now = Math.floor(Date.now() / 1000);
      await s.deps.records.collection("fine_tuned_model").insert({ projectId: "proj_default" }, { id: FT, createdAt: now, data: { id: FT, created: now, ownedBy: "org-default" } });
      const image = await c.files.create({ file: await toFile(Buffer.from(png(1024, 1024)), "pic.png"), purpose: "vision" });
      const doc = await c.files.create({ file: await toFile(Buffer.from(pdf([{ w: 612, h: 792, text: "Hello from a PDF page." }])), "doc.pdf"), purpose: "user_data" });
      files[name] = { png: image.id, pdf: doc.id };
    }
  });
  afterAll(async () => {
    await Promise.all(Object.values(servers).map((s) => s?.stop()));
  });

  const run = (name: "thread" | "pooled", text: string) => runBatch(clients[name]!, text);

  it("1,300 token-counting lines: identical output and error lines, counts and usage; each line what POST /v1/responses/input_tokens answers", async () => {
    const n = 1300;
    const thread = await run("thread", countingLines(n, files.thread!));
    const pooled = await run("pooled", countingLines(n, files.pooled!));
    for (const r of [thread, pooled]) {
      expect(r.done.status).toBe("completed");
      expect(r.done.request_counts).toEqual({ total: n, completed: r.out.length, failed: r.errs.length });
      expect([...r.out, ...r.errs].map((l) => l.custom_id).sort()).toEqual(Array.from({ length: n }, (_, i) => `c${i}`).sort());
    }
    expect(pooled.done.request_counts).toEqual(thread.done.request_counts);
    expect(pooled.out.map(stable)).toEqual(thread.out.map(stable));
    expect(pooled.errs.map(stable)).toEqual(thread.errs.map(stable));
    expect(new Set(pooled.out.map((l) => l.id)).size).toBe(pooled.out.length);

    // What failed, and why: the unknown fine-tuned model, the unknown file, the refused field.
    const byCode = (r: typeof pooled) => r.errs.map((l) => `${l.response.status_code} ${l.response.body.error.code ?? l.response.body.error.param}`);
    expect([...new Set(byCode(pooled))].sort()).toEqual(["400 unknown_parameter", "404 input[0].content[0].file_id", "404 model_not_found"]);
    expect(pooled.errs.length).toBe(3 * 100);

    // Each kind of line, against the endpoint itself (on the pooled server, with its own file ids).
    const body = (i: number) => JSON.parse(countingLines(i + 1, files.pooled!).trim().split("\n").filter((l) => l.trim()).at(-1)!).body;
    for (const i of [0, 1, 2, 6, 7, 12]) {
      const direct = await (await api(servers.pooled.baseURL, "/responses/input_tokens", { method: "POST", json: body(i) })).json();
      expect(pooled.out.find((l) => l.custom_id === `c${i}`)!.response.body).toEqual(direct);
    }
  });

  it("an invalid input file gives the same errors.data either way", async () => {
    const good = (i: number) => JSON.stringify({ custom_id: `v${i}`, method: "POST", url: INPUT_TOKENS, body: { model: "gpt-4o", input: "x" } });
    const lines = Array.from({ length: 1300 }, (_, i) => good(i));
    lines[899] = good(2); // a duplicate far from its first use, in another chunk
    lines[599] = "{not json";
    lines[1199] = JSON.stringify({ custom_id: "u", method: "POST", url: "/v1/embeddings", body: {} });
    const thread = await run("thread", lines.join("\n") + "\n");
    const pooled = await run("pooled", lines.join("\n") + "\n");
    expect(pooled.done.status).toBe("failed");
    expect(pooled.done.errors).toEqual(thread.done.errors);
    expect(pooled.done.errors!.data!.map((e) => [e.line, e.code])).toEqual([
      [600, "invalid_json_line"],
      [900, "duplicate_custom_id"],
      [1200, "invalid_url"],
    ]);
    expect(pooled.out).toEqual([]);
    // The first chunk ran ahead of the verdict on the worker threads; none of it counts.
    expect(pooled.done.request_counts).toEqual({ total: 1300, completed: 0, failed: 0 });
    expect(pooled.done.output_file_id).toBeNull();
    expect(pooled.done.error_file_id).toBeNull();
  });
});

describe("an input file over 16 MB", () => {
  it("is read again for the run (validation keeps no chunks), in chunks of at most 4 MiB; every line once, in order", async () => {
    const s = await startTestServer();
    try {
      const c = sdk(s.baseURL);
      const n = 1000;
      const body = (i: number) => ({ model: "gpt-4o", input: `${i}: ${"a long prompt of many words ".repeat(600)}` });
      const text = Array.from({ length: n }, (_, i) => JSON.stringify({ custom_id: `big${i}`, method: "POST", url: INPUT_TOKENS, body: body(i) })).join("\n") + "\n";
      expect(text.length).toBeGreaterThan(16 * 1024 * 1024);
      const { done, out } = await runBatch(c, text, { ms: 120_000 });
      expect(done.request_counts).toEqual({ total: n, completed: n, failed: 0 });
      expect(out.map((l) => l.custom_id)).toEqual(Array.from({ length: n }, (_, i) => `big${i}`));
      for (const i of [0, 499, 999]) {
        const direct = await (await api(s.baseURL, "/responses/input_tokens", { method: "POST", json: body(i) })).json();
        expect(out[i].response.body).toEqual(direct);
      }
    } finally {
      await s.stop();
    }
  });
});

describe("cancelled while its first slice runs ahead of validation", () => {
  it("ends cancelled; what counts is a prefix of the input, in the output once", async () => {
    const s = await startTestServer();
    try {
      const c = sdk(s.baseURL);
      const n = 30_000;
      const text = Array.from({ length: n }, (_, i) => JSON.stringify({ custom_id: `x${i}`, method: "POST", url: INPUT_TOKENS, body: { model: "gpt-4o", input: `cancel me ${i}` } })).join("\n") + "\n";
      let cancelling = "";
      const { done, out } = await runBatch(c, text, { afterCreate: async (id) => (cancelling = (await c.batches.cancel(id)).status) });
      expect(cancelling).toBe("cancelling");
      expect(done.status).toBe("cancelled");
      const completed = done.request_counts!.completed;
      expect(completed).toBeLessThan(n);
      expect(done.request_counts).toEqual({ total: done.request_counts!.total, completed, failed: 0 });
      expect(out.map((l) => l.custom_id)).toEqual(Array.from({ length: completed }, (_, i) => `x${i}`));
    } finally {
      await s.stop();
    }
  });
});

describe("a batch job whose signal fires while its chunks are on the workers", () => {
  it("ends with the signal's reason and leaves no task's rejection unhandled (one would end the process)", async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (e: unknown) => unhandled.push(e);
    process.on("unhandledRejection", onUnhandled);
    const E = "/v1/embeddings";
    const text = Array.from({ length: 6000 }, (_, i) => JSON.stringify({ custom_id: `r${i}`, method: "POST", url: E, body: { model: "m", input: "x".repeat(100) } })).join("\n") + "\n";
    const bytes = Buffer.from(text);
    // The file arrives slowly: the signal fires while validation waits for more input, with checks under way.
    const blobs = {
      size: async () => bytes.length,
      get: () => Readable.from((async function* () { for (let i = 0; i < bytes.length; i += 16384) { await new Promise((r) => setTimeout(r, 5)); yield bytes.subarray(i, i + 16384); } })()),
    };
    const rec = { id: "batch_1", version: 1, data: { id: "batch_1", status: "validating", inputFileId: "f", endpoint: E, principal: { projectId: "p" }, inProgressAt: null } };
    const deps = { records: { collection: () => ({ get: async () => rec }) }, blobs, clock: { now: () => 0 } } as never;
    const files = { find: async () => ({ bytes: bytes.length }), open: async () => blobs.get() };
    const workers = new BatchWorkers(deps, 2, {});
    try {
      const run = runJob({ storage: { ...(deps as object), files } as never, settings: { concurrency: 8, sliceLines: 10_000, sliceMs: 1000, sliceBytes: 8 << 20, sliceIntervalMs: 0, calls: {}, workers } }).handler;
      const stop = new AbortController();
      const ctx = { job: { scope: { projectId: "p" }, payload: { batchId: "batch_1" }, checkpoint: null }, signal: stop.signal, checkpoint: async () => {}, complete: async () => {} } as never;
      setTimeout(() => stop.abort(new Error("shutting down")), 30);
      await expect(run(ctx)).rejects.toThrow("shutting down");
      await new Promise((r) => setTimeout(r, 50));
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", onUnhandled);
      await workers.close();
    }
  });
});

describe("a server stopped while its workers check and run a batch", () => {
  it("stops cleanly (no task left unhandled), and the next server on the same data finishes the batch, every line once", async () => {
    const n = 30_000;
    const text = Array.from({ length: n }, (_, i) => JSON.stringify({ custom_id: `k${i}`, method: "POST", url: INPUT_TOKENS, body: { model: "gpt-4o", input: `line ${i} ${"word ".repeat(i % 30)}` } })).join("\n") + "\n";
    const first = await startTestServer();
    const c1 = sdk(first.baseURL);
    const input = await c1.files.create({ file: await toFile(Buffer.from(text), "in.jsonl"), purpose: "batch" });
    const b = await c1.batches.create({ input_file_id: input.id, endpoint: INPUT_TOKENS, completion_window: "24h" });
    await new Promise((r) => setTimeout(r, 40)); // into validation: chunks under way on the workers
    await first.close(); // the job's signal fires and the pool closes under it

    const second = await startTestServer({ dataDir: first.dataDir });
    try {
      const c2 = sdk(second.baseURL);
      const done = await pollUntil(() => c2.batches.retrieve(b.id), (x) => ENDED.includes(x.status), `batch ${b.id}`, { ms: 60_000 });
      expect(done.status).toBe("completed");
      expect(done.request_counts).toEqual({ total: n, completed: n, failed: 0 });
      const out = await fileLines(c2, done.output_file_id);
      expect(out.map((l) => l.custom_id)).toEqual(Array.from({ length: n }, (_, i) => `k${i}`));
    } finally {
      await second.stop();
    }
  });
});

describe("validation and the first slice in one pass: running ahead reaches nothing outside the server", () => {
  let s: TestServer;
  let images: Server;
  let imageURL = "";
  const hits: string[] = [];
  const picture = png(64, 64);

  beforeAll(async () => {
    images = createServer((req, res) => {
      hits.push(req.url ?? "");
      res.writeHead(200, { "content-type": "image/png", "content-length": picture.length }).end(picture);
    });
    await new Promise<void>((r) => images.listen(0, "127.0.0.1", r));
    imageURL = `http://127.0.0.1:${(images.address() as AddressInfo).port}/img`;
    s = await startTestServer({ env: { ATRIUM_FETCH_ALLOW_PRIVATE: "true" } });
  });
  afterAll(async () => {
    await s?.stop();
    images?.close();
  });

  const rows = (n: number, bad?: number) =>
    Array.from({ length: n }, (_, i) =>
      i === bad
        ? "{not json"
        : JSON.stringify({ custom_id: `a${i}`, method: "POST", url: INPUT_TOKENS, body: { model: "gpt-4o", input: i % 100 === 7 && i >= 1024 ? [{ role: "user", content: [{ type: "input_image", image_url: `${imageURL}/${i}`, detail: "low" }] }] : `text ${i}` } }),
    ).join("\n") + "\n";

  const batch = (text: string) => runBatch(sdk(s.baseURL), text);

  it("a file that fails validation on its last line fetched no image, though its first chunks ran ahead", async () => {
    hits.length = 0;
    // The bad line is in the fourth chunk; the third, with the images, is clean and runs ahead.
    const { done } = await batch(rows(1600, 1599));
    expect(done.status).toBe("failed");
    expect(done.errors!.data!.map((e) => [e.line, e.code])).toEqual([[1600, "invalid_json_line"]]);
    expect(hits).toEqual([]);
  });

  it("a valid file: each image fetched once, after validation, and counted as the endpoint counts it", async () => {
    hits.length = 0;
    const { done, out } = await batch(rows(1500));
    expect(done.status).toBe("completed");
    expect(done.request_counts).toEqual({ total: 1500, completed: 1500, failed: 0 });
    // Lines 1107 … 1407 ask for an image: the chunk that holds them (the third) did not count
    // ahead, but after validation; the first two counted ahead and are used as they are.
    expect(hits.sort()).toEqual(["/img/1107", "/img/1207", "/img/1307", "/img/1407"]);
    for (const i of [7, 600, 1107]) {
      const direct = await (await api(s.baseURL, "/responses/input_tokens", { method: "POST", json: JSON.parse(rows(i + 1).trim().split("\n")[i]!).body })).json();
      expect(out[i]).toMatchObject({ custom_id: `a${i}`, response: { status_code: 200, body: direct } });
    }
    expect(out.map((l) => l.custom_id)).toEqual(Array.from({ length: 1500 }, (_, i) => `a${i}`));
  });
});

describe("BatchWorkers: a chunk on a worker thread gives what it gives on the main thread", () => {
  let s: TestServer;
  let workers: BatchWorkers;
  beforeAll(async () => {
    s = await startTestServer();
    workers = new BatchWorkers(s.deps, 2, {});
  });
  afterAll(async () => {
    await workers?.close();
    await s?.stop();
  });

  it("checks and runs, reading Files through the main thread; a chunk sent to run is moved, not copied", async () => {
    const c = sdk(s.baseURL);
    const image = await c.files.create({ file: await toFile(Buffer.from(png(512, 512)), "pic.png"), purpose: "vision" });
    const doc = await c.files.create({ file: await toFile(Buffer.from(pdf([{ w: 612, h: 792, text: "Worker page." }])), "doc.pdf"), purpose: "user_data" });
    const [chunk] = await chunksOf(piecesOf(countingLines(60, { png: image.id, pdf: doc.id }), 4096), 1000);
    const principal: Principal = { kind: "key", credentialId: "t", organizationId: "org-default", projectId: "proj_default", role: "member", scopes: null };

    expect(await workers.check(chunk!, INPUT_TOKENS)).toEqual(checkChunk(chunk!, INPUT_TOKENS));

    const call = countInputTokensCall(responsesServiceWith(storageLookups(s.deps)));
    const local = await runRequests([{ chunk: chunk!, from: 0, to: chunkSize(chunk!) }], INPUT_TOKENS, call, principal, new AbortController().signal, { concurrency: 4, deadline: Infinity, maxBytes: Infinity, turns: null });
    const sent = subChunk(chunk!, 0, chunkSize(chunk!));
    const remote = await workers.run(sent, "/v1/responses/input_tokens", principal, { concurrency: 4, deadline: Infinity, maxBytes: Infinity });
    expect(sent.bytes.byteLength).toBe(0); // moved to the worker
    const linesOf = (b: Uint8Array) => Buffer.from(b).toString("utf8").trim().split("\n").map((l) => stable(JSON.parse(l)));
    expect(remote.done).toBe(60);
    expect({ ...remote, output: linesOf(remote.output), errors: linesOf(remote.errors) }).toEqual({ ...local, output: linesOf(local.output), errors: linesOf(local.errors) });
    // The image was read: a 512×512 high-detail image is 255 tokens, the message frame 7.
    expect(linesOf(remote.output)[0].response.body.input_tokens).toBe(7 + 255);

    // checkRun: the check, and the run when every line is fine and nothing was fetched.
    const ahead = await workers.checkRun(chunk!, "/v1/responses/input_tokens", principal, 4);
    expect(ahead.check).toEqual(checkChunk(chunk!, INPUT_TOKENS));
    expect(ahead.run && linesOf(ahead.run.output)).toEqual(linesOf(local.output));
    const withLine = async (extra: string) => (await chunksOf(piecesOf(countingLines(3, { png: image.id, pdf: doc.id }) + extra + "\n", 4096), 1000))[0]!;
    const bad = await workers.checkRun(await withLine("{not json"), "/v1/responses/input_tokens", principal, 4);
    expect(bad.run).toBeNull();
    expect(bad.check.errors.map((e) => e.code)).toEqual(["invalid_json_line"]);
    const fetching = JSON.stringify({ custom_id: "u", method: "POST", url: INPUT_TOKENS, body: { model: "gpt-4o", input: [{ role: "user", content: [{ type: "input_image", image_url: "http://127.0.0.1:9/x.png" }] }] } });
    const later = await workers.checkRun(await withLine(fetching), "/v1/responses/input_tokens", principal, 4);
    expect(later.check.errors).toEqual([]);
    expect(later.run).toBeNull();
  });
});

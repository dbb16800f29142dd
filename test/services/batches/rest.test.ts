// Batches (spec 2.13, 4.10) through the official SDK: embeddings and token-counting batches run
// on this server's own services into downloadable output files matching the inputs, failed
// requests in the error file, an invalid input file, creation rules, cancel with partial results,
// SIGKILL mid-run and restart with every request in the output exactly once, and Connect / gRPC.
import { spawn, type ChildProcess } from "node:child_process";
import { createServer } from "node:http";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { BatchesService } from "../../../gen/atrium/v1/batches_pb.js";
import { ADMIN_KEY, API_KEY, KEYS, ManualClock, SCALED, startTestServer, tempDir, testConfig, type TestServer } from "../../shared/server.js";
import { api, expectError, fileLines, sdk, sdkError, toFile } from "../../shared/rest.js";
import { as, expectRpcError } from "../../shared/rpc.js";
import { pollUntil } from "../../shared/poll.js";
import { jsonl } from "../../shared/jsonl.js";

function configWith(dir: string, batches: Record<string, number>): string {
  const path = testConfig(dir);
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), batches }));
  return path;
}

let s: TestServer;
let client: OpenAI;

beforeAll(async () => {
  s = await startTestServer();
  client = sdk(s.baseURL);
});
afterAll(async () => s?.stop());

/** Beyond the SDK's list of batch endpoints; sent as given. */
const INPUT_TOKENS = "/v1/responses/input_tokens" as OpenAI.BatchCreateParams["endpoint"];
const line = (custom_id: string, url: string, body: unknown) => ({ custom_id, method: "POST", url, body });

async function uploadBatch(c: OpenAI, rows: unknown[], name = "batch.jsonl") {
  return c.files.create({ file: await toFile(Buffer.from(jsonl(rows)), name), purpose: "batch" });
}

const waitFor = (c: OpenAI, id: string, until: (b: OpenAI.Batch) => boolean = (b) => ["completed", "failed", "cancelled", "expired"].includes(b.status), ms = 60_000) =>
  pollUntil(() => c.batches.retrieve(id), until, `batch ${id}`, { ms });

describe("an embeddings batch", () => {
  const texts = ["How do I reset my password?", "The weather in Paris is sunny", "Batches run in the background", "A fourth sentence", "And a fifth"];

  it("runs every request locally into an output file matching the inputs; counts, usage and timestamps", async () => {
    const rows = texts.map((t, i) => line(`req-${i}`, "/v1/embeddings", { model: "atrium-embed-use-lite", input: t, encoding_format: "float" }));
    rows.push(line("bad-model", "/v1/embeddings", { model: "no-such-model", input: "x" }));
    const file = await uploadBatch(client, rows);
    const created = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h", metadata: { run: "nightly" } });
    expect(created).toMatchObject({ object: "batch", status: "validating", endpoint: "/v1/embeddings", input_file_id: file.id, completion_window: "24h", metadata: { run: "nightly" }, output_file_id: null, errors: null });
    expect(created.id).toMatch(/^batch_/);
    expect(created.expires_at).toBe(created.created_at + 24 * 3600);

    const done = await waitFor(client, created.id);
    expect(done.status).toBe("completed");
    expect(done.request_counts).toEqual({ total: 6, completed: 5, failed: 1 });
    expect(done.model).toBe("atrium-embed-use-lite");
    for (const t of ["in_progress_at", "finalizing_at", "completed_at"] as const) expect(done[t]).toBeGreaterThanOrEqual(done.created_at);
    expect(done.failed_at).toBeNull();
    expect(done.usage!.input_tokens).toBeGreaterThan(0);
    expect(done.usage!.total_tokens).toBe(done.usage!.input_tokens);

    const out = await fileLines(client, done.output_file_id);
    expect(out.map((l) => l.custom_id)).toEqual(texts.map((_, i) => `req-${i}`));
    const direct = await client.embeddings.create({ model: "atrium-embed-use-lite", input: texts[0]!, encoding_format: "float" });
    for (const l of out) {
      expect(Object.keys(l).sort()).toEqual(["custom_id", "error", "id", "response"]);
      expect(l.id).toMatch(/^batch_req_/);
      expect(l.error).toBeNull();
      expect(l.response.status_code).toBe(200);
      expect(l.response.request_id).toMatch(/^req_/);
      expect(l.response.body.object).toBe("list");
      expect(l.response.body.data[0].embedding).toHaveLength(512);
    }
    expect(out[0].response.body.usage).toEqual(direct.usage);
    expect(out[0].response.body.data[0].embedding[0]).toBeCloseTo(direct.data[0]!.embedding[0]!, 6);

    const errs = await fileLines(client, done.error_file_id);
    expect(errs).toHaveLength(1);
    expect(errs[0]).toMatchObject({ custom_id: "bad-model", error: null, response: { status_code: 404, body: { error: { code: "model_not_found", param: "model" } } } });

    const outFile = await client.files.retrieve(done.output_file_id!);
    expect(outFile).toMatchObject({ purpose: "batch_output", filename: `batch_${done.id}_output.jsonl` });
  });
});

describe("a token-counting batch", () => {
  it("/v1/responses/input_tokens lines give what the endpoint answers", async () => {
    const bodies = [{ model: "gpt-4o", input: "Hello there" }, { model: "gpt-4o", input: [{ role: "user", content: "What is 2 + 2?" }], instructions: "Be brief." }];
    const file = await uploadBatch(client, bodies.map((b, i) => line(`t${i}`, "/v1/responses/input_tokens", b)));
    const done = await waitFor(client, (await client.batches.create({ input_file_id: file.id, endpoint: INPUT_TOKENS, completion_window: "24h" })).id);
    expect(done.status).toBe("completed");
    const out = await fileLines(client, done.output_file_id);
    for (const [i, b] of bodies.entries()) {
      const direct = await (await api(s.baseURL, "/responses/input_tokens", { method: "POST", json: b })).json();
      expect(out[i].response.body).toEqual(direct);
    }
    expect(done.error_file_id).toBeNull();
  });

  it("a body REST refuses (an unknown or mistyped field) gets REST's exact 400 in the error file", async () => {
    const bodies = [{ model: "gpt-4o", input: "Hi", colour: "blue" }, { model: "gpt-4o", input: "Hi", instructions: 42 }];
    const file = await uploadBatch(client, bodies.map((b, i) => line(`bad${i}`, "/v1/responses/input_tokens", b)));
    const done = await waitFor(client, (await client.batches.create({ input_file_id: file.id, endpoint: INPUT_TOKENS, completion_window: "24h" })).id);
    expect(done.request_counts).toMatchObject({ total: 2, completed: 0, failed: 2 });
    const errs = await fileLines(client, done.error_file_id);
    for (const [i, b] of bodies.entries()) {
      const res = await api(s.baseURL, "/responses/input_tokens", { method: "POST", json: b });
      expect(res.status).toBe(400);
      expect(errs[i]).toMatchObject({ custom_id: `bad${i}`, response: { status_code: 400, body: await res.json() } });
    }
    expect(errs[0].response.body.error.param).toBe("colour");
    expect(errs[1].response.body.error.param).toBe("instructions");
  });
});

describe("/v1/chat/completions and /v1/responses batches go to the responses provider", () => {
  it("each body to the upstream as written; usage summed over the requests", async () => {
    const seen: any[] = [];
    const upstream = createServer((req, res) => {
      let raw = "";
      req.on("data", (d) => (raw += d));
      req.on("end", () => {
        const body = JSON.parse(raw);
        seen.push({ url: req.url, body });
        res.writeHead(body.model === "broken" ? 400 : 200, { "content-type": "application/json" });
        if (body.model === "broken") return res.end(JSON.stringify({ error: { message: "bad model", type: "invalid_request_error", param: "model", code: "model_not_found" } }));
        res.end(
          JSON.stringify(
            req.url!.endsWith("/chat/completions")
              ? { id: "chatcmpl-1", object: "chat.completion", model: body.model, choices: [{ index: 0, message: { role: "assistant", content: "hi" }, finish_reason: "stop" }], usage: { prompt_tokens: 10, completion_tokens: 3, total_tokens: 13, prompt_tokens_details: { cached_tokens: 4 }, completion_tokens_details: { reasoning_tokens: 1 } } }
              : { id: "resp_1", object: "response", model: body.model, output: [], usage: { input_tokens: 7, output_tokens: 2, total_tokens: 9, input_tokens_details: { cached_tokens: 0 }, output_tokens_details: { reasoning_tokens: 0 } } },
          ),
        );
      });
    });
    await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
    const dir = tempDir();
    const path = testConfig(dir);
    writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), providers: { responses: { base_url: `http://127.0.0.1:${(upstream.address() as { port: number }).port}/v1` } } }));
    const up = await startTestServer({ env: { ATRIUM_CONFIG: path } });
    try {
      const c = sdk(up.baseURL);
      const chatRows = [0, 1].map((i) => line(`c${i}`, "/v1/chat/completions", { model: "gpt-4o-mini", messages: [{ role: "user", content: `hello ${i}` }] }));
      chatRows.push(line("c-bad", "/v1/chat/completions", { model: "broken", messages: [] }));
      const chat = await waitFor(c, (await c.batches.create({ input_file_id: (await uploadBatch(c, chatRows)).id, endpoint: "/v1/chat/completions", completion_window: "24h" })).id);
      expect(chat.status).toBe("completed");
      expect(chat.request_counts).toEqual({ total: 3, completed: 2, failed: 1 });
      expect(chat.usage).toEqual({ input_tokens: 20, input_tokens_details: { cached_tokens: 8 }, output_tokens: 6, output_tokens_details: { reasoning_tokens: 2 }, total_tokens: 26 });
      expect(seen.filter((x) => x.url === "/v1/chat/completions").map((x) => x.body.messages[0]?.content)).toEqual(expect.arrayContaining(["hello 0", "hello 1"]));
      expect((await fileLines(c, chat.output_file_id))[0].response.body.choices[0].message.content).toBe("hi");
      expect((await fileLines(c, chat.error_file_id))[0]).toMatchObject({ custom_id: "c-bad", response: { status_code: 400, body: { error: { code: "model_not_found" } } } });

      const resp = await waitFor(c, (await c.batches.create({ input_file_id: (await uploadBatch(c, [line("r0", "/v1/responses", { model: "gpt-4o", input: "hi" })])).id, endpoint: "/v1/responses", completion_window: "24h" })).id);
      expect(resp.usage).toMatchObject({ input_tokens: 7, output_tokens: 2, total_tokens: 9 });
    } finally {
      await up.stop();
      await new Promise((r) => upstream.close(r));
    }
  });
});

describe("an invalid input file fails the batch with errors.data naming the lines", () => {
  it("bad JSON, a url that is not the endpoint, a duplicate custom_id, a wrong method", async () => {
    const ok = (id: string) => line(id, "/v1/embeddings", { model: "atrium-embed-use-lite", input: "x" });
    const file = await uploadBatch(client, [ok("a"), "{not json", line("b", "/v1/chat/completions", {}), ok("a"), { ...ok("c"), method: "GET" }]);
    const done = await waitFor(client, (await client.batches.create({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h" })).id);
    expect(done.status).toBe("failed");
    expect(done.failed_at).toBeGreaterThanOrEqual(done.created_at);
    expect(done.in_progress_at).toBeNull();
    expect(done.errors!.object).toBe("list");
    expect(done.errors!.data!.map((e) => [e.line, e.code])).toEqual([
      [2, "invalid_json_line"],
      [3, "invalid_url"],
      [4, "duplicate_custom_id"],
      [5, "invalid_method"],
    ]);
    expect(done.errors!.data![1]!.message).toMatch(/Line 3/);
    expect(done.output_file_id).toBeNull();
  });
});

describe("line errors use the platform's codes", () => {
  it("a line without custom_id is missing_required_parameter, a streaming request fails the file at validation (streaming_unsupported)", async () => {
    const ok = (id: string) => line(id, "/v1/embeddings", { model: "atrium-embed-use-lite", input: "x" });
    const { custom_id: _, ...noId } = ok("gone") as Record<string, unknown>;
    const file = await uploadBatch(client, [ok("a"), noId, line("s", "/v1/embeddings", { model: "atrium-embed-use-lite", input: "x", stream: true }), line("f", "/v1/embeddings", { model: "atrium-embed-use-lite", input: "x", stream: false })]);
    const done = await waitFor(client, (await client.batches.create({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h" })).id);
    expect(done.status).toBe("failed");
    expect(done.errors!.data!.map((e) => [e.line, e.code, e.param])).toEqual([
      [2, "missing_required_parameter", "custom_id"],
      [3, "streaming_unsupported", "body.stream"],
    ]);
    expect(done.output_file_id).toBeNull();
  });
});

describe("creation rules", () => {
  const post = (json: unknown) => api(s.baseURL, "/batches", { method: "POST", json });
  let file: OpenAI.FileObject;
  beforeAll(async () => {
    file = await uploadBatch(client, [line("a", "/v1/embeddings", { model: "atrium-embed-use-lite", input: "x" })]);
  });

  it("400s naming the field; a file of another purpose; unknown file 404", async () => {
    await expectError(await post({ endpoint: "/v1/embeddings", completion_window: "24h" }), 400, { param: "input_file_id" });
    await expectError(await post({ input_file_id: file.id, endpoint: "/v1/images", completion_window: "24h" }), 400, { param: "endpoint", code: "unsupported_endpoint" });
    await expectError(await post({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "48h" }), 400, { param: "completion_window" });
    await expectError(await post({ input_file_id: "file-nope", endpoint: "/v1/embeddings", completion_window: "24h" }), 404, { param: "input_file_id" });
    await expectError(await post({ input_file_id: "f".repeat(257), endpoint: "/v1/embeddings", completion_window: "24h" }), 400, { param: "input_file_id", code: "string_above_max_length", message: /maximum length 256\b/ });
    await expectError(await post({ input_file_id: "f".repeat(256), endpoint: "/v1/embeddings", completion_window: "24h" }), 404, { param: "input_file_id" });
    const other = await client.files.create({ file: await toFile(Buffer.from("{}\n"), "x.jsonl"), purpose: "fine-tune" });
    await expectError(await post({ input_file_id: other.id, endpoint: "/v1/embeddings", completion_window: "24h" }), 400, { param: "input_file_id", code: "invalid_file_purpose" });
    await expectError(await post({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h", output_expires_after: { anchor: "created_at", seconds: 10 } }), 400, { param: "output_expires_after.seconds" });
    await expectError(await post({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h", metadata: { k: 1 } }), 400, { param: "metadata.k" });
  });

  it("/v1/responses and /v1/chat/completions need a responses provider: a 400 that says so", async () => {
    for (const endpoint of ["/v1/responses", "/v1/chat/completions"]) {
      const e = await expectError(await post({ input_file_id: file.id, endpoint, completion_window: "24h" }), 400, { param: "endpoint", code: "endpoint_unavailable" });
      expect(e.message).toMatch(/providers\.responses/);
    }
  });

  it("another project cannot see the batch; list pages with after/limit", async () => {
    const a = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h" });
    const b = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/embeddings", completion_window: "24h" });
    await sdkError(sdk(s.baseURL, KEYS.projectB).batches.retrieve(a.id), 404);
    const first = await client.batches.list({ limit: 1 });
    expect(first.data.map((x) => x.id)).toEqual([b.id]);
    expect(first.has_more).toBe(true);
    const next = await client.batches.list({ limit: 1, after: b.id });
    expect(next.data.map((x) => x.id)).toEqual([a.id]);
    await waitFor(client, a.id);
    await waitFor(client, b.id);
  });
});

describe("cancel", () => {
  let slow: TestServer;
  let c: OpenAI;
  beforeAll(async () => {
    slow = await startTestServer({ env: { ATRIUM_CONFIG: configWith(tempDir(), { slice_lines: 2, slice_interval_ms: 60 }) } });
    c = sdk(slow.baseURL);
  });
  afterAll(async () => slow?.stop());

  it("cancelling → cancelled; the results so far are kept; a finished batch cannot be cancelled", async () => {
    const rows = Array.from({ length: 60 }, (_, i) => line(`r${i}`, "/v1/responses/input_tokens", { model: "gpt-4o", input: `request ${i}` }));
    const batch = await c.batches.create({ input_file_id: (await uploadBatch(c, rows)).id, endpoint: INPUT_TOKENS, completion_window: "24h" });
    await waitFor(c, batch.id, (b) => (b.request_counts?.completed ?? 0) >= 4);
    const cancelling = await c.batches.cancel(batch.id);
    expect(cancelling.status).toBe("cancelling");
    expect(cancelling.cancelling_at).toBeGreaterThanOrEqual(batch.created_at);
    const done = await waitFor(c, batch.id);
    expect(done.status).toBe("cancelled");
    expect(done.cancelled_at).toBeGreaterThanOrEqual(done.cancelling_at!);
    const completed = done.request_counts!.completed;
    expect(completed).toBeGreaterThanOrEqual(4);
    expect(completed).toBeLessThan(60);
    const out = await fileLines(c, done.output_file_id);
    expect(out.map((l) => l.custom_id)).toEqual(Array.from({ length: completed }, (_, i) => `r${i}`));
    const finished = await c.batches.create({ input_file_id: (await uploadBatch(c, rows.slice(0, 1))).id, endpoint: INPUT_TOKENS, completion_window: "24h" });
    await waitFor(c, finished.id);
    const e = await sdkError(c.batches.cancel(finished.id), 400);
    expect(e.code).toBe("invalid_batch_state");
  });
});

describe("slices end at their time limit and their output size too", () => {
  for (const [what, settings] of [
    ["slice_ms 1", { slice_lines: 1000, slice_ms: 1, concurrency: 4 }],
    // About five output lines per slice (each line is some 200 bytes).
    ["slice_bytes 1024", { slice_bytes: 1024, concurrency: 4 }],
  ] as const) {
    // On the event loop the limits end a slice between requests; on worker threads, between
    // chunks of 512 requests (1,100 lines: several chunks, and slices that start inside one).
    for (const [workers, n] of [
      [0, 300],
      [2, 1100],
    ] as const) {
      it(`with ${what} and ${workers} workers every request still runs once, in order`, async () => {
        const quick = await startTestServer({ env: { ATRIUM_CONFIG: configWith(tempDir(), { ...settings, workers }) } });
        try {
          const c = sdk(quick.baseURL);
          const rows = Array.from({ length: n }, (_, i) => line(`s${i}`, "/v1/responses/input_tokens", { model: "gpt-4o", input: `slice ${i}` }));
          const done = await waitFor(c, (await c.batches.create({ input_file_id: (await uploadBatch(c, rows)).id, endpoint: INPUT_TOKENS, completion_window: "24h" })).id);
          expect(done.request_counts).toEqual({ total: n, completed: n, failed: 0 });
          expect((await fileLines(c, done.output_file_id)).map((l) => l.custom_id)).toEqual(rows.map((r) => r.custom_id));
        } finally {
          await quick.stop();
        }
      });
    }
  }
});

describe("expiry", () => {
  it("past expires_at the batch ends expired: results so far in the output, the rest as batch_expired errors", async () => {
    const clock = new ManualClock();
    const slow = await startTestServer({ clock, env: { ATRIUM_CONFIG: configWith(tempDir(), { slice_lines: 2, slice_interval_ms: 60 }) } });
    try {
      const c = sdk(slow.baseURL);
      const rows = Array.from({ length: 40 }, (_, i) => line(`e${i}`, "/v1/responses/input_tokens", { model: "gpt-4o", input: `request ${i}` }));
      const batch = await c.batches.create({ input_file_id: (await uploadBatch(c, rows)).id, endpoint: INPUT_TOKENS, completion_window: "24h" });
      await waitFor(c, batch.id, (b) => (b.request_counts?.completed ?? 0) >= 4);
      clock.advance(24 * 3600 + 1);
      const done = await waitFor(c, batch.id);
      expect(done.status).toBe("expired");
      expect(done.expired_at).toBeGreaterThanOrEqual(done.expires_at!);
      const completed = done.request_counts!.completed;
      expect(completed).toBeLessThan(40);
      expect(done.request_counts).toEqual({ total: 40, completed, failed: 40 - completed });
      const out = await fileLines(c, done.output_file_id);
      const errs = await fileLines(c, done.error_file_id);
      expect([...out, ...errs].map((l) => l.custom_id)).toEqual(rows.map((r) => r.custom_id));
      expect(errs[0]).toMatchObject({ response: null, error: { code: "batch_expired" } });
    } finally {
      await slow.stop();
    }
  });
});

// Its own child server on a data dir (the embedded set-up) in both projects: run once, in the embedded one.
describe.skipIf(SCALED)("SIGKILL mid-run, then restart: every request in the output exactly once", () => {
  const main = fileURLToPath(new URL("../../../src/main.ts", import.meta.url));
  const root = fileURLToPath(new URL("../../..", import.meta.url));

  async function child(dataDir: string, config: string): Promise<{ proc: ChildProcess; baseURL: string; exited: Promise<unknown> }> {
    const proc = spawn(process.execPath, ["--import", "tsx", main], {
      cwd: root,
      env: { ...process.env, ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: API_KEY, ATRIUM_ADMIN_KEY: ADMIN_KEY, ATRIUM_CONFIG: config, ATRIUM_LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    proc.stdout!.on("data", (d) => (out += d));
    proc.stderr!.on("data", (d) => (out += d));
    const exited = new Promise((r) => proc.once("exit", r));
    const deadline = Date.now() + 60_000;
    for (;;) {
      const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out);
      if (m) return { proc, baseURL: `${m[1]}/v1`, exited };
      if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  it("kills the server half-way; the restarted server finishes from the last committed slice", async () => {
    const dataDir = tempDir();
    const config = configWith(dataDir, { slice_lines: 5, slice_interval_ms: 40 });
    let server = await child(dataDir, config);
    const n = 150;
    let c = sdk(server.baseURL);
    const rows = Array.from({ length: n }, (_, i) => line(`k${i}`, "/v1/responses/input_tokens", { model: "gpt-4o", input: `line ${i}` }));
    const batch = await c.batches.create({ input_file_id: (await uploadBatch(c, rows)).id, endpoint: INPUT_TOKENS, completion_window: "24h" });
    const midway = await waitFor(c, batch.id, (b) => (b.request_counts?.completed ?? 0) >= 30);
    expect(midway.status).toBe("in_progress");
    server.proc.kill("SIGKILL");
    await server.exited;

    server = await child(dataDir, config);
    try {
      c = sdk(server.baseURL);
      const done = await waitFor(c, batch.id);
      expect(done.status).toBe("completed");
      expect(done.request_counts).toEqual({ total: n, completed: n, failed: 0 });
      const out = await fileLines(c, done.output_file_id);
      expect(out.map((l) => l.custom_id)).toEqual(rows.map((r) => r.custom_id));
      expect(new Set(out.map((l) => l.id)).size).toBe(n);
    } finally {
      server.proc.kill("SIGKILL");
      await server.exited;
    }
  });
});

describe("over Connect and gRPC", () => {
  for (const [name, transport] of [
    ["Connect", () => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" })],
    ["gRPC", () => createGrpcTransport({ baseUrl: s.url })],
  ] as const) {
    it(`${name}: ListBatches and GetBatch; an unknown batch is NotFound`, async () => {
      const c = createClient(BatchesService, transport());
      const list = await c.listBatches({ limit: 100 }, as(API_KEY));
      expect(list.data.length).toBeGreaterThan(0);
      const one = await c.getBatch({ batchId: list.data[0]!.id }, as(API_KEY));
      expect(one.object).toBe("batch");
      expect(typeof one.requestCounts?.total).toBe("bigint");
      await expectRpcError(() => c.getBatch({ batchId: "batch_nope" }, as(API_KEY)), Code.NotFound, { httpStatus: 404, param: "batch_id" });
    });
  }
});

// The job runner's contract: every job kind declares `settle`, and a job that ends without
// finishing its resource (the runner gave up on it, or it was cancelled) reaches the resource's
// status. Here for each kind that serves a resource: a batch, a fine-tuning job, a vector store
// file and a video. "Gave up" is made the way a crash-looping process makes it: the job's lease
// runs out with its attempts used up, so the next claim ends it failed.
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { startTestServer, testConfig, tempDir, type TestServer } from "../shared/server.js";
import { sdk, toFile } from "../shared/rest.js";
import { pollUntil } from "../shared/poll.js";
import { readFileSync } from "node:fs";

let s: TestServer;
let client: OpenAI;
let db: Database.Database;

beforeAll(async () => {
  const dir = tempDir();
  const base = JSON.parse(readFileSync(testConfig(dir), "utf8"));
  // Batches of one line a slice, a slice at least every 400 ms: two batches fill both run slots.
  // Training steps every 300 ms: a job stays running long enough to be given up on.
  s = await startTestServer({ dataDir: dir, config: { ...base, batches: { slice_lines: 1, slice_interval_ms: 400 }, fine_tuning: { step_interval_ms: 300 } } });
  client = sdk(s.baseURL);
  db = new Database(join(s.dataDir, "atrium.db"));
  db.pragma("busy_timeout = 5000");
});
afterAll(async () => {
  db?.close();
  await s?.stop();
});

const line = (id: string) => ({ custom_id: id, method: "POST", url: "/v1/embeddings", body: { model: "atrium-embed-use-lite", input: `text ${id}` } });
async function batchFile(lines: number) {
  const text = Array.from({ length: lines }, (_, i) => JSON.stringify(line(`r${i}`))).join("\n") + "\n";
  return client.files.create({ file: await toFile(Buffer.from(text), "in.jsonl"), purpose: "batch" });
}
const batchDone = (id: string) => pollUntil(() => client.batches.retrieve(id), (b) => ["completed", "failed", "cancelled", "expired"].includes(b.status), `batch ${id}`, { ms: 60_000 });

/** The first row `sql` finds, waiting (briefly) for it to appear. */
async function jobRow(sql: string, arg: string): Promise<{ id: string }> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const row = db.prepare(sql).get(arg) as { id: string } | undefined;
    if (row) return row;
    expect(Date.now(), sql).toBeLessThan(deadline);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Makes the runner give up on a job: its attempts are used up and its lease (if any) has run out. */
function exhaust(jobId: string) {
  // A running job's lease passes to a runner that is gone: the live run can write nothing more.
  const r = db
    .prepare("UPDATE jobs SET attempts = 1000, lease_expires_at = 0, lease_owner = CASE WHEN state = 'running' THEN 'gone-runner' ELSE lease_owner END WHERE id = ? AND state IN ('queued', 'running')")
    .run(jobId);
  expect(r.changes, `job ${jobId}`).toBe(1);
}

describe("batches", () => {
  it("a batch whose input File is deleted before its run starts ends failed naming the file; a cancel of a batch whose run ended ends cancelled", async () => {
    const slow = [await client.batches.create({ input_file_id: (await batchFile(8)).id, endpoint: "/v1/embeddings", completion_window: "24h" })];
    slow.push(await client.batches.create({ input_file_id: (await batchFile(8)).id, endpoint: "/v1/embeddings", completion_window: "24h" }));
    await pollUntil(() => client.batches.retrieve(slow[1]!.id), (b) => b.status === "in_progress", "second slow batch running", { ms: 30_000 });

    // Both run slots are taken: these wait in the queue.
    const orphanInput = await batchFile(2);
    const orphan = await client.batches.create({ input_file_id: orphanInput.id, endpoint: "/v1/embeddings", completion_window: "24h" });
    await client.files.delete(orphanInput.id);
    const cancelled = await client.batches.create({ input_file_id: (await batchFile(2)).id, endpoint: "/v1/embeddings", completion_window: "24h" });
    expect((await client.batches.cancel(cancelled.id)).status).toBe("cancelling");
    // Its run ends before it ever started (an operator, a crash loop): settle ends the batch as asked.
    await s.jobs.cancel(`batches.run:${cancelled.id}`);

    for (const b of slow) await client.batches.cancel(b.id);
    const failed = await batchDone(orphan.id);
    expect(failed.status).toBe("failed");
    expect(failed.errors?.data?.[0]).toMatchObject({ code: "file_not_found", param: "input_file_id", line: null });
    expect(failed.errors?.data?.[0]?.message).toContain(orphanInput.id);
    expect((await batchDone(cancelled.id)).status).toBe("cancelled");
  });

  it("a batch whose run the runner gives up on ends failed with the run's error", async () => {
    const b = await client.batches.create({ input_file_id: (await batchFile(20)).id, endpoint: "/v1/embeddings", completion_window: "24h" });
    await pollUntil(() => client.batches.retrieve(b.id), (x) => x.status === "in_progress", "batch running", { ms: 30_000 });
    exhaust(`batches.run:${b.id}`);
    const done = await batchDone(b.id);
    expect(done.status).toBe("failed");
    expect(done.errors?.data?.[0]).toMatchObject({ code: "batch_failed", line: null });
    expect(done.errors?.data?.[0]?.message).toMatch(/gave up/);
  });
});

describe("fine-tuning", () => {
  it("a training run the runner gives up on fails the job with an error event", async () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ messages: [{ role: "user", content: `${i}+${i}?` }, { role: "assistant", content: `${2 * i}` }] }));
    const file = await client.files.create({ file: await toFile(Buffer.from(rows.map((r) => JSON.stringify(r)).join("\n") + "\n"), "t.jsonl"), purpose: "fine-tune" });
    const job = await client.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: file.id, method: { type: "supervised", supervised: { hyperparameters: { n_epochs: 10 } } } });
    await pollUntil(() => client.fineTuning.jobs.retrieve(job.id), (j) => j.status === "running", "training", { ms: 30_000 });
    const runId = (db.prepare("SELECT id FROM jobs WHERE kind = 'fine_tuning.train' AND id LIKE ? AND state = 'running'").get(`%${job.id}%`) as { id: string }).id;
    exhaust(runId);
    const done = await pollUntil(() => client.fineTuning.jobs.retrieve(job.id), (j) => ["succeeded", "failed", "cancelled"].includes(j.status), "job end", { ms: 30_000 });
    expect(done.status).toBe("failed");
    expect(done.error).toMatchObject({ code: "training_failed" });
    const events = (await client.fineTuning.jobs.listEvents(job.id, { limit: 100 })).data;
    expect(events.some((e) => e.level === "error" && /Training could not go on/.test(e.message))).toBe(true);
  });
});

describe("vector stores and videos", () => {
  it("an ingestion the runner gives up on ends its file failed with the run's error", async () => {
    const store = await client.vectorStores.create({ name: "given-up" });
    const text = Array.from({ length: 400 }, (_, p) => `Section ${p}. The ledger entry ${p * 7919} was filed on day ${(p % 28) + 1} by the harbour office.`).join("\n\n");
    const file = await client.files.create({ file: await toFile(Buffer.from(text), "ledger.txt"), purpose: "assistants" });
    await client.vectorStores.files.create(store.id, { file_id: file.id, chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 0 } } });
    const { id: jobId } = await jobRow("SELECT id FROM jobs WHERE kind = 'vector_stores.ingest' AND id LIKE ? AND state IN ('queued', 'running')", `%${file.id}%`);
    exhaust(jobId);
    const done = await pollUntil(() => client.vectorStores.files.retrieve(file.id, { vector_store_id: store.id }), (f) => f.status !== "in_progress", "file end", { ms: 30_000 });
    expect(done.status).toBe("failed");
    expect(done.last_error?.message).toMatch(/gave up/);
  });

  it("a render the runner gives up on ends its video failed", async () => {
    // One render at a time: a long one holds the slot, so the next waits queued and is given up on at its claim.
    const busy = await client.videos.create({ prompt: "A long harbour pan", seconds: "12" });
    const v = await client.videos.create({ prompt: "A lighthouse at dusk", seconds: "4" });
    await jobRow("SELECT id FROM jobs WHERE id = ? AND state = 'queued'", `videos.render:${v.id}`);
    exhaust(`videos.render:${v.id}`);
    const done = await pollUntil(() => client.videos.retrieve(v.id), (x) => x.status === "completed" || x.status === "failed", "video end", { ms: 60_000 });
    expect(done.status).toBe("failed");
    expect(done.error).toMatchObject({ code: expect.any(String), message: expect.stringMatching(/gave up|could not/i) });
    await pollUntil(() => client.videos.retrieve(busy.id), (x) => x.status === "completed" || x.status === "failed", "the long render", { ms: 120_000 });
  });
});

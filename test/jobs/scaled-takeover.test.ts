// Two instances on the shared engines (PostgreSQL, Swift through S3, Redis): instance A starts an
// ingestion, a render, a batch and a training job; once each is under way, B starts and A is
// SIGKILLed. B takes every job over when its lease expires and finishes it, and each effect exists
// exactly once: every chunk indexed once, every batch line answered once, every training step
// recorded once, one video whose file is whole. The servers are the built dist/ as child processes.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { ADMIN_KEY, API_KEY, startChildServer, tempDir, type ChildServer } from "../shared/server.js";
import { sdk, toFile } from "../shared/rest.js";
import { pollUntil, sleep } from "../shared/poll.js";
import { jsonl, parseJsonl } from "../shared/jsonl.js";
import { longText, upload } from "../shared/vector-stores.js";
import { untilVideoEnds } from "../shared/videos.js";
import { hasPostgres, POSTGRES_INSTALL_HINT } from "../shared/postgres.js";
import { hasSwift, SWIFT_INSTALL_HINT } from "../shared/swift.js";
import { scaledEngines, type ScaledEngines } from "../shared/scaled.js";

const ready = hasPostgres() && hasSwift();
const dirs: string[] = [];
const children: ChildServer[] = [];
let engines: ScaledEngines | undefined;

afterAll(async () => {
  for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill("SIGKILL");
  await Promise.all(children.map((c) => c.exited));
  await engines?.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** An instance on the shared engines, with short leases so a dead instance's jobs move within seconds. */
async function instance(e: ScaledEngines): Promise<ChildServer> {
  const dir = tempDir("atrium-takeover-");
  dirs.push(dir);
  const config = join(dir, "atrium.json");
  writeFileSync(config, JSON.stringify({ videos: { job_lease_seconds: 3 }, fine_tuning: { step_interval_ms: 60 } }));
  const child = await startChildServer(dir, { ...e.env, ATRIUM_CONFIG: config, ATRIUM_API_KEY: API_KEY, ATRIUM_ADMIN_KEY: ADMIN_KEY });
  children.push(child);
  return child;
}

const chat = (i: number) => ({
  messages: [
    { role: "user", content: `What is ${i} + ${i}?` },
    { role: "assistant", content: `${2 * i}` },
  ],
});

interface Work {
  storeId: string;
  fileBatchId: string;
  fileIds: string[];
  videoId: string;
  batchId: string;
  batchLines: number;
  trainingId: string;
}

async function startWork(a: OpenAI): Promise<Work> {
  const store = await a.vectorStores.create({ name: "takeover" });
  const fileIds: string[] = [];
  for (let i = 0; i < 3; i++) fileIds.push(await upload(a, longText(i, 40), `part${i}.txt`));
  const fileBatch = await a.vectorStores.fileBatches.create(store.id, {
    file_ids: fileIds,
    chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 50 } },
  });

  const video = await a.videos.create({ prompt: "A lighthouse in a storm, taken over" });

  const batchLines = 400;
  const lines = Array.from({ length: batchLines }, (_, i) => ({ custom_id: `line-${i}`, method: "POST", url: "/v1/embeddings", body: { model: "atrium-embed-use-lite", input: `Sentence number ${i} about ledgers and lighthouses.` } }));
  const input = await a.files.create({ file: await toFile(Buffer.from(jsonl(lines)), "batch.jsonl"), purpose: "batch" });
  const batch = await a.batches.create({ input_file_id: input.id, endpoint: "/v1/embeddings", completion_window: "24h" });

  const train = await a.files.create({ file: await toFile(Buffer.from(jsonl(Array.from({ length: 10 }, (_, i) => chat(i)))), "train.jsonl"), purpose: "fine-tune" });
  const job = await a.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: train.id, hyperparameters: { n_epochs: 10, batch_size: 1 } });
  return { storeId: store.id, fileBatchId: fileBatch.id, fileIds, videoId: video.id, batchId: batch.id, batchLines, trainingId: job.id };
}

/** Waits until every piece of work has started on A (and none has finished, or the test proves nothing). */
async function untilUnderWay(a: OpenAI, w: Work): Promise<void> {
  const opts = { ms: 90_000, intervalMs: 250 };
  const fb = await pollUntil(() => a.vectorStores.fileBatches.retrieve(w.fileBatchId, { vector_store_id: w.storeId }), (b) => b.status !== "in_progress" || b.file_counts.completed + b.file_counts.in_progress > 0, "file batch", opts);
  const video = await pollUntil(() => a.videos.retrieve(w.videoId), (v) => v.status !== "queued", "video", opts);
  const batch = await pollUntil(() => a.batches.retrieve(w.batchId), (b) => b.status !== "validating", "batch", opts);
  const job = await pollUntil(() => a.fineTuning.jobs.retrieve(w.trainingId), (j) => j.status !== "validating_files" && j.status !== "queued", "training", opts);
  expect([fb.status, video.status, batch.status, job.status], "the work finished before the crash could be staged").toEqual(["in_progress", "in_progress", "in_progress", "running"]);
}

async function checkExactlyOnce(b: OpenAI, w: Work): Promise<void> {
  // Ingestion: every file completed; a search for each file's sentences finds no chunk twice.
  const fb = await b.vectorStores.fileBatches.poll(w.storeId, w.fileBatchId, { pollIntervalMs: 250 });
  expect(fb).toMatchObject({ status: "completed", file_counts: { completed: 3, failed: 0, in_progress: 0, total: 3 } });
  const hits = await b.vectorStores.search(w.storeId, { query: "ledger entry filed", max_num_results: 50 });
  const texts = hits.data.map((h) => `${h.file_id}:${h.content.map((c) => c.text).join("")}`);
  expect(texts.length).toBeGreaterThan(5);
  expect(new Set(texts).size).toBe(texts.length);

  // Render: completed once, and the file is an MP4 whose length the download states.
  const video = await untilVideoEnds(b, w.videoId);
  expect(video.status, JSON.stringify(video.error)).toBe("completed");
  const bytes = Buffer.from(await (await b.videos.downloadContent(w.videoId)).arrayBuffer());
  expect(bytes.subarray(4, 8).toString("latin1")).toBe("ftyp");

  // Batch: every line answered exactly once.
  const batch = await pollUntil(() => b.batches.retrieve(w.batchId), (x) => ["completed", "failed", "expired", "cancelled"].includes(x.status), "batch", { ms: 120_000, intervalMs: 250 });
  expect(batch.status).toBe("completed");
  expect(batch.request_counts).toEqual({ total: w.batchLines, completed: w.batchLines, failed: 0 });
  const out = parseJsonl(await (await b.files.content(batch.output_file_id!)).text());
  const ids = out.map((l) => l.custom_id as string);
  expect(ids.length).toBe(w.batchLines);
  expect(new Set(ids).size).toBe(w.batchLines);

  // Training: succeeded, each step's metrics recorded once, one model.
  const job = await pollUntil(() => b.fineTuning.jobs.retrieve(w.trainingId), (j) => ["succeeded", "failed", "cancelled"].includes(j.status), "training", { ms: 120_000, intervalMs: 250 });
  expect(job.status, JSON.stringify(job.error)).toBe("succeeded");
  const steps: number[] = [];
  for await (const e of b.fineTuning.jobs.listEvents(w.trainingId, { limit: 100 })) if (e.type === "metrics") steps.push((e.data as { step: number }).step);
  expect(steps.length).toBe(100);
  expect(new Set(steps).size).toBe(100);
  const models = await b.models.list();
  expect(models.data.filter((m) => m.id === job.fine_tuned_model)).toHaveLength(1);
}

const title = "scale-out: SIGKILL one instance mid-work, the other finishes it exactly once";
describe.skipIf(!ready)(ready ? title : `${title} (needs PostgreSQL and Swift: ${POSTGRES_INSTALL_HINT}; ${SWIFT_INSTALL_HINT})`, () => {
  it("an ingestion, a render, a batch and a training job move from A to B", async () => {
    engines = await scaledEngines();
    const a = await instance(engines);
    const work = await startWork(sdk(a.baseURL));
    await untilUnderWay(sdk(a.baseURL), work);

    const b = await instance(engines);
    a.proc.kill("SIGKILL");
    await a.exited;
    await sleep(100);
    await checkExactlyOnce(sdk(b.baseURL), work);
  }, 300_000);
});

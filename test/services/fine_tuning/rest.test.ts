// Fine-tuning jobs (spec 2.11, 4.10) through the official SDK against the local trainer emulator
// (a few ms per step here): supervised from upload to succeeded with events, checkpoints and the
// fine-tuned model in /v1/models (deletable only by an Owner); DPO; reinforcement with a grader;
// cancel; pause/resume; bad training files; creation rules; checkpoint permissions with admin,
// standard and no key; a restart mid-training; and a few calls over Connect and gRPC.
import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import OpenAI from "openai";
import pino from "pino";
import { Code, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { FineTuningService } from "../../../gen/atrium/v1/fine_tuning_pb.js";
import { configFromEnv } from "../../../src/config.js";
import { startServer, type RunningServer } from "../../../src/server.js";
import { areaConfigSections } from "../../../src/services/index.js";
import { countTextTokens } from "../../../src/engines/tokenizer/index.js";
import { ADMIN_KEY, API_KEY, KEYS, startTestServer, tempDir, testConfig, type TestServer } from "../../shared/server.js";
import { api, expectError, sdk, sdkError, toFile } from "../../shared/rest.js";
import { as, expectRpcError } from "../../shared/rpc.js";
import { pollUntil } from "../../shared/poll.js";
import { jsonl } from "../../shared/jsonl.js";

/** ATRIUM_CONFIG: the usual organizations and keys, plus the emulator's pace. */
function configWith(dir: string, stepMs: number): string {
  const path = testConfig(dir);
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), fine_tuning: { step_interval_ms: stepMs, python_grader: { timeout_ms: 5000 } } }));
  return path;
}

let s: TestServer;
let client: OpenAI;

beforeAll(async () => {
  s = await startTestServer({ env: { ATRIUM_CONFIG: configWith(tempDir(), 3) } });
  client = sdk(s.baseURL);
});
afterAll(async () => s?.stop());

const chat = (i: number) => ({
  messages: [
    { role: "system", content: "You are terse." },
    { role: "user", content: `What is ${i} + ${i}?` },
    { role: "assistant", content: `${2 * i}` },
  ],
});

async function upload(c: OpenAI, rows: unknown[] | string, name = "train.jsonl", purpose: "fine-tune" | "batch" = "fine-tune") {
  const text = typeof rows === "string" ? rows : jsonl(rows);
  return c.files.create({ file: await toFile(Buffer.from(text), name), purpose });
}

const TERMINAL = ["succeeded", "failed", "cancelled"];

const waitFor = (c: OpenAI, id: string, until: (j: OpenAI.FineTuning.FineTuningJob) => boolean = (j) => TERMINAL.includes(j.status), ms = 30_000) =>
  pollUntil(() => c.fineTuning.jobs.retrieve(id), until, `job ${id}`, { ms });

async function allEvents(c: OpenAI, id: string) {
  const out: OpenAI.FineTuning.FineTuningJobEvent[] = [];
  for await (const e of c.fineTuning.jobs.listEvents(id, { limit: 100 })) out.push(e);
  return out;
}

/** The chat-format token count the emulator uses: 3 per message + role + content, +3 priming. */
function exampleTokens(model: string, ex: ReturnType<typeof chat>) {
  return 3 + ex.messages.reduce((n, m) => n + 3 + countTextTokens(model, m.role) + countTextTokens(model, m.content), 0);
}

let supervised: OpenAI.FineTuning.FineTuningJob;

describe("a supervised job from upload to succeeded", () => {
  const rows = Array.from({ length: 10 }, (_, i) => chat(i));

  it("validates, trains with metrics events and checkpoints, and registers ft:<base>:<org>:<suffix>:<job>", async () => {
    const file = await upload(client, rows);
    const created = await client.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: file.id, suffix: "arith", metadata: { team: "math" } });
    expect(created).toMatchObject({
      object: "fine_tuning.job",
      model: "gpt-4o-mini",
      status: "validating_files",
      training_file: file.id,
      validation_file: null,
      fine_tuned_model: null,
      finished_at: null,
      trained_tokens: null,
      error: null,
      organization_id: "org-default",
      result_files: [],
      metadata: { team: "math" },
      hyperparameters: { batch_size: "auto", learning_rate_multiplier: "auto", n_epochs: "auto" },
      method: { type: "supervised", supervised: { hyperparameters: { batch_size: "auto", learning_rate_multiplier: "auto", n_epochs: "auto" } } },
    });
    expect(created.id).toMatch(/^ftjob-/);
    expect(Number.isInteger(created.seed)).toBe(true);

    supervised = await waitFor(client, created.id);
    const short = created.id.replace(/^ftjob-/, "");
    expect(supervised.status).toBe("succeeded");
    expect(supervised.fine_tuned_model).toBe(`ft:gpt-4o-mini:org-default:arith:${short}`);
    // auto, as the platform documents it: 10 examples → 10 epochs (at least 100 seen), batch 1.
    expect(supervised.hyperparameters).toEqual({ batch_size: 1, learning_rate_multiplier: 2, n_epochs: 10 });
    expect(supervised.trained_tokens).toBe(rows.reduce((n, r) => n + exampleTokens("gpt-4o-mini", r), 0) * 10);
    expect(supervised.finished_at).toBeGreaterThanOrEqual(supervised.created_at);
    expect(supervised.result_files).toHaveLength(1);
    const csv = await (await client.files.content(supervised.result_files[0]!)).text();
    expect(csv.split("\n")[0]).toBe("step,train_loss,train_accuracy,valid_loss,valid_mean_token_accuracy");
    expect(csv.trim().split("\n")).toHaveLength(101);
  });

  it("events: messages and one metrics event per step, newest first", async () => {
    const events = await allEvents(client, supervised.id);
    const metrics = events.filter((e) => e.type === "metrics");
    expect(metrics).toHaveLength(100);
    expect(metrics[0]).toMatchObject({ object: "fine_tuning.job.event", level: "info", data: { step: 100, total_steps: 100 } });
    expect((metrics[0]!.data as any).train_loss).toBeLessThan((metrics[99]!.data as any).train_loss);
    const messages = events.filter((e) => e.type === "message").map((e) => e.message);
    expect(messages[0]).toBe("The job has successfully completed");
    expect(messages).toContain(`New fine-tuned model created: ${supervised.fine_tuned_model}`);
    expect(messages.at(-1)).toBe(`Created fine-tuning job: ${supervised.id}`);
    const page = await client.fineTuning.jobs.listEvents(supervised.id, { limit: 2 });
    expect(page.data).toHaveLength(2);
    expect(page.has_more).toBe(true);
  });

  it("checkpoints: the last three epochs, ftckpt_ ids, ft:…:ckpt-step-<n>", async () => {
    const page = await client.fineTuning.jobs.checkpoints.list(supervised.id);
    expect(page.data.map((c) => c.step_number)).toEqual([100, 90, 80]);
    for (const c of page.data) {
      expect(c).toMatchObject({ object: "fine_tuning.job.checkpoint", fine_tuning_job_id: supervised.id, fine_tuned_model_checkpoint: `${supervised.fine_tuned_model}:ckpt-step-${c.step_number}` });
      expect(c.id).toMatch(/^ftckpt_/);
      expect(c.metrics).toMatchObject({ step: c.step_number, train_loss: expect.any(Number), train_mean_token_accuracy: expect.any(Number) });
    }
  });

  it("the fine-tuned model is in /v1/models, owned by the organization; only an Owner may delete it", async () => {
    const model = await client.models.retrieve(supervised.fine_tuned_model!);
    expect(model).toMatchObject({ id: supervised.fine_tuned_model, object: "model", owned_by: "org-default" });
    expect((await client.models.list()).data.map((m) => m.id)).toContain(supervised.fine_tuned_model);
    // Another project does not see it.
    await sdkError(sdk(s.baseURL, KEYS.projectB).models.retrieve(supervised.fine_tuned_model!), 404);
    await sdkError(client.models.delete(supervised.fine_tuned_model!), 403);
    await sdkError(sdk(s.baseURL, KEYS.reader).models.delete(supervised.fine_tuned_model!), 403);
    expect(await sdk(s.baseURL, KEYS.owner).models.delete(supervised.fine_tuned_model!)).toEqual({ id: supervised.fine_tuned_model, object: "model", deleted: true });
    await sdkError(client.models.retrieve(supervised.fine_tuned_model!), 404);
  });

  it("list: newest first, after/limit, the metadata filter", async () => {
    const page = await client.fineTuning.jobs.list({ limit: 100 });
    expect(page.data[0]!.created_at).toBeGreaterThanOrEqual(page.data.at(-1)!.created_at);
    expect(page.data.map((j) => j.id)).toContain(supervised.id);
    // The SDK sends the filter as metadata[team]=math.
    expect((await client.fineTuning.jobs.list({ metadata: { team: "math" } })).data.map((j) => j.id)).toEqual([supervised.id]);
    expect((await client.fineTuning.jobs.list({ metadata: { team: "nobody" } })).data).toEqual([]);
    await expectError(await api(s.baseURL, "/fine_tuning/jobs?metadata=x"), 400, { param: "metadata", code: "unknown_parameter" });
    await expectError(await api(s.baseURL, "/fine_tuning/jobs?limit[x]=1"), 400, { param: "limit[x]", code: "unknown_parameter" });
    await expectError(await api(s.baseURL, "/fine_tuning/jobs?after=ftjob-nope"), 400, { param: "after", code: "invalid_cursor" });
  });
});

describe("DPO and reinforcement", () => {
  it("a DPO job: preference pairs validated, beta resolved, succeeded", async () => {
    const rows = Array.from({ length: 12 }, (_, i) => ({
      input: { messages: [{ role: "user", content: `Say hi ${i}` }] },
      preferred_output: [{ role: "assistant", content: `Hi ${i}!` }],
      non_preferred_output: [{ role: "assistant", content: "Go away." }],
    }));
    const file = await upload(client, rows, "dpo.jsonl");
    const job = await client.fineTuning.jobs.create({ model: "gpt-4.1-mini", training_file: file.id, method: { type: "dpo", dpo: { hyperparameters: { n_epochs: 2 } } } });
    const done = await waitFor(client, job.id);
    expect(done.status).toBe("succeeded");
    expect(done.method).toMatchObject({ type: "dpo", dpo: { hyperparameters: { n_epochs: 2, batch_size: 1, beta: 0.1 } } });
    expect(done.fine_tuned_model).toMatch(/^ft:gpt-4\.1-mini:org-default::/);
  });

  it("a reinforcement job runs its grader on the training items (train_reward_mean in the metrics)", async () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ messages: [{ role: "user", content: `Is ${i} even?` }], even: i % 2 === 0 }));
    const file = await upload(client, rows, "rl.jsonl");
    const grader = { type: "python", name: "even", source: "def grade(sample, item):\n    return 1.0 if item['even'] else 0.0\n" };
    const job = await client.fineTuning.jobs.create({
      model: "o4-mini",
      training_file: file.id,
      method: { type: "reinforcement", reinforcement: { grader: grader as any, hyperparameters: { n_epochs: 1, batch_size: 2, reasoning_effort: "low" } } },
    });
    const done = await waitFor(client, job.id);
    expect(done.status).toBe("succeeded");
    expect(done.method?.reinforcement?.grader).toEqual(grader);
    const rewards = (await allEvents(client, job.id)).filter((e) => e.type === "metrics").map((e) => (e.data as any).train_reward_mean);
    expect(rewards).toHaveLength(5);
    expect(rewards.every((r) => r === 0.5)).toBe(true);
  });

  it("a reinforcement grader reading a field the items lack fails the job (invalid_grader)", async () => {
    const rows = Array.from({ length: 10 }, (_, i) => ({ messages: [{ role: "user", content: `q${i}` }] }));
    const file = await upload(client, rows, "rl2.jsonl");
    const grader = { type: "string_check", name: "g", input: "{{sample.output_text}}", reference: "{{item.answer}}", operation: "eq" };
    const job = await client.fineTuning.jobs.create({ model: "o4-mini", training_file: file.id, method: { type: "reinforcement", reinforcement: { grader: grader as any } } });
    const done = await waitFor(client, job.id);
    expect(done.status).toBe("failed");
    expect(done.error).toMatchObject({ code: "invalid_grader", param: "method.reinforcement.grader" });
  });
});

describe("bad training files fail the job with error.code, a message naming the line, and param", () => {
  const cases: Array<[string, string, RegExp]> = [
    ["a line that is not JSON", jsonl(Array.from({ length: 3 }, (_, i) => chat(i))) + "{oops\n" + jsonl(Array.from({ length: 10 }, (_, i) => chat(i))), /line 4: not valid JSON/],
    ["a message with a bad role", jsonl([...Array.from({ length: 10 }, (_, i) => chat(i)), { messages: [{ role: "robot", content: "x" }, { role: "assistant", content: "y" }] }]), /line 11: messages\[0\]\.role/],
    ["no assistant message", jsonl([...Array.from({ length: 10 }, (_, i) => chat(i)), { messages: [{ role: "user", content: "x" }] }]), /line 11: the example has no assistant message/],
    ["fewer than 10 examples", jsonl(Array.from({ length: 9 }, (_, i) => chat(i))), /9 example\(s\); at least 10/],
  ];
  for (const [what, text, message] of cases) {
    it(what, async () => {
      const file = await upload(client, text);
      const done = await waitFor(client, (await client.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: file.id })).id);
      expect(done.status).toBe("failed");
      expect(done.error).toEqual({ code: "invalid_training_file", message: expect.stringMatching(message), param: "training_file" });
      expect(done.fine_tuned_model).toBeNull();
      expect((await allEvents(client, done.id)).filter((e) => e.type === "metrics")).toEqual([]);
    });
  }

  it("a bad validation file fails with param validation_file", async () => {
    const train = await upload(client, Array.from({ length: 10 }, (_, i) => chat(i)));
    const valid = await upload(client, "not json\n", "valid.jsonl");
    const done = await waitFor(client, (await client.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: train.id, validation_file: valid.id })).id);
    expect(done.error).toMatchObject({ code: "invalid_validation_file", param: "validation_file" });
  });
});

describe("creation rules (400s naming the field)", () => {
  let train: OpenAI.FileObject;
  beforeAll(async () => {
    train = await upload(client, Array.from({ length: 10 }, (_, i) => chat(i)));
  });
  const post = (json: unknown) => api(s.baseURL, "/fine_tuning/jobs", { method: "POST", json });

  it("model, files, suffix, method, hyperparameters, seed", async () => {
    await expectError(await post({ training_file: train.id }), 400, { param: "model" });
    await expectError(await post({ model: "text-embedding-3-small", training_file: train.id }), 400, { param: "model", code: "model_not_available" });
    await expectError(await post({ model: "no-such-model", training_file: train.id }), 404, { param: "model" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: "file-nope" }), 404, { param: "training_file" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, validation_file: train.id }), 400, { param: "validation_file" });
    const batchFile = await upload(client, Array.from({ length: 10 }, (_, i) => chat(i)), "b.jsonl", "batch");
    await expectError(await post({ model: "gpt-4o-mini", training_file: batchFile.id }), 400, { param: "training_file", code: "invalid_file_purpose" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, suffix: "x".repeat(65) }), 400, { param: "suffix" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, method: { type: "reinforcement", reinforcement: {} } }), 400, { param: "method.type" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, method: { type: "supervised", supervised: { hyperparameters: { n_epochs: 0 } } } }), 400, { param: "method.supervised.hyperparameters.n_epochs" });
    await expectError(await post({ model: "o4-mini", training_file: train.id, method: { type: "reinforcement", reinforcement: { grader: { type: "string_check", name: "g" } } } }), 400, { param: "method.reinforcement.grader.input" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, seed: -1 }), 400, { param: "seed" });
    const ok = await client.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: train.id, suffix: "x".repeat(64), seed: 42 });
    expect(ok.seed).toBe(42);
    await client.fineTuning.jobs.cancel(ok.id);
  });

  it("integrations in the official SDK's form and the spec's, echoed back in the form they came in; errors name fields the server accepts", async () => {
    const wandb = { project: "ft-runs", entity: "acme", name: "try-1", tags: ["a", "b"] };
    const official = await client.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: train.id, integrations: [{ type: "wandb", wandb }] });
    expect(official.integrations).toEqual([{ type: "wandb", wandb }]);
    expect((await client.fineTuning.jobs.retrieve(official.id)).integrations).toEqual([{ type: "wandb", wandb }]);
    await client.fineTuning.jobs.cancel(official.id);

    const specForm = (await (await post({ model: "gpt-4o-mini", training_file: train.id, integrations: [{ type: "tracker", tracker: { project: "p" } }] })).json()) as any;
    expect(specForm.integrations).toEqual([{ type: "tracker", tracker: { project: "p", entity: null, name: null, tags: [] } }]);
    await client.fineTuning.jobs.cancel(specForm.id);

    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, integrations: [{ type: "wandb" }] }), 400, { param: "integrations[0].wandb" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, integrations: [{ type: "wandb", wandb: { entity: "x" } }] }), 400, { param: "integrations[0].wandb.project" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, integrations: [{ type: "tracker", tracker: {} }] }), 400, { param: "integrations[0].tracker.project" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, integrations: [{ type: "mlflow", mlflow: {} }] }), 400, { param: "integrations[0].mlflow" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, integrations: [{ type: "neptune", tracker: { project: "p" } }] }), 400, { param: "integrations[0].type" });
    await expectError(await post({ model: "gpt-4o-mini", training_file: train.id, integrations: [{ wandb }] }), 400, { param: "integrations[0].type" });
  });

  it("caps: ids 256, integrations 10 with names 128 and 50 tags of 64; at the caps a job is made, one over is a 400 naming the field and makes none", async () => {
    const jobCount = async () => (await client.fineTuning.jobs.list({ limit: 100 })).data.length;
    const tags = Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(64, "t"));
    const atCap = { project: "p".repeat(128), entity: "e".repeat(128), name: "n".repeat(128), tags };
    const made = await client.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: train.id, integrations: Array.from({ length: 10 }, () => ({ type: "wandb" as const, wandb: atCap })) });
    expect(made.integrations).toHaveLength(10);
    await client.fineTuning.jobs.cancel(made.id);
    const before = await jobCount();
    const one = (wandb: Record<string, unknown>) => ({ model: "gpt-4o-mini", training_file: train.id, integrations: [{ type: "wandb", wandb: { ...atCap, ...wandb } }] });
    const refused: Array<[unknown, string, string, number]> = [
      [{ model: "m".repeat(257), training_file: train.id }, "model", "string_above_max_length", 256],
      [{ model: "gpt-4o-mini", training_file: "f".repeat(257) }, "training_file", "string_above_max_length", 256],
      [{ model: "gpt-4o-mini", training_file: train.id, validation_file: "f".repeat(257) }, "validation_file", "string_above_max_length", 256],
      [{ model: "gpt-4o-mini", training_file: train.id, integrations: Array.from({ length: 11 }, () => ({ type: "wandb", wandb: atCap })) }, "integrations", "array_above_max_length", 10],
      [one({ project: "p".repeat(129) }), "integrations[0].wandb.project", "string_above_max_length", 128],
      [one({ entity: "e".repeat(129) }), "integrations[0].wandb.entity", "string_above_max_length", 128],
      [one({ name: "n".repeat(129) }), "integrations[0].wandb.name", "string_above_max_length", 128],
      [one({ tags: [...tags, "x"] }), "integrations[0].wandb.tags", "array_above_max_length", 50],
      [one({ tags: ["t".repeat(65)] }), "integrations[0].wandb.tags[0]", "string_above_max_length", 64],
    ];
    for (const [body, param, code, limit] of refused) await expectError(await post(body), 400, { param, code, message: new RegExp(`maximum length ${limit}\\b`) });
    expect(await jobCount()).toBe(before);
    // The list's metadata filter follows the metadata rules.
    await expectError(await api(s.baseURL, `/fine_tuning/jobs?metadata[k]=${"v".repeat(513)}`), 400, { param: "metadata.k", code: "string_above_max_length" });
    expect((await api(s.baseURL, `/fine_tuning/jobs?metadata[k]=${"v".repeat(512)}`)).status).toBe(200);
  });

  it("model_limits: one entry per fine-tunable model", async () => {
    const res = (await (await api(s.baseURL, "/fine_tuning/model_limits")).json()) as any;
    expect(res.object).toBe("fine_tuning.model_limits");
    expect(res.organization_id).toBe("org-default");
    expect(res.data.find((d: any) => d.model === "o4-mini")).toMatchObject({ methods: ["reinforcement"], min_examples: 10 });
  });
});

describe("cancel, pause and resume", () => {
  let slow: TestServer;
  let c: OpenAI;
  beforeAll(async () => {
    slow = await startTestServer({ env: { ATRIUM_CONFIG: configWith(tempDir(), 50) } });
    c = sdk(slow.baseURL);
  });
  afterAll(async () => slow?.stop());

  it("cancel stops promptly: no further events or checkpoints; a finished job cannot be cancelled", async () => {
    const file = await upload(c, Array.from({ length: 10 }, (_, i) => chat(i)));
    const job = await c.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: file.id });
    await waitFor(c, job.id, (j) => j.status === "running");
    await new Promise((r) => setTimeout(r, 200));
    const cancelled = await c.fineTuning.jobs.cancel(job.id);
    expect(cancelled.status).toBe("cancelled");
    expect(cancelled.finished_at).not.toBeNull();
    const before = await allEvents(c, job.id);
    await new Promise((r) => setTimeout(r, 400));
    const after = await allEvents(c, job.id);
    expect(after.map((e) => e.id)).toEqual(before.map((e) => e.id));
    expect(after[0]!.message).toBe("Fine-tuning job cancelled");
    expect((await c.fineTuning.jobs.retrieve(job.id)).status).toBe("cancelled");
    const e = await sdkError(c.fineTuning.jobs.cancel(job.id), 400);
    expect(e.code).toBe("invalid_job_state");
  });

  it("pause holds the job at its step; resume goes on from there to succeeded", async () => {
    const file = await upload(c, Array.from({ length: 10 }, (_, i) => chat(i)));
    const job = await c.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: file.id, method: { type: "supervised", supervised: { hyperparameters: { n_epochs: 2 } } } });
    await waitFor(c, job.id, (j) => j.status === "running");
    await new Promise((r) => setTimeout(r, 150));
    expect((await c.fineTuning.jobs.pause(job.id)).status).toBe("paused");
    const steps = async () => (await allEvents(c, job.id)).filter((e) => e.type === "metrics").length;
    const atPause = await steps();
    await new Promise((r) => setTimeout(r, 300));
    expect(await steps()).toBe(atPause);
    expect(atPause).toBeLessThan(20);
    await sdkError(c.fineTuning.jobs.pause(job.id), 400);
    expect((await c.fineTuning.jobs.resume(job.id)).status).toBe("running");
    const done = await waitFor(c, job.id);
    expect(done.status).toBe("succeeded");
    expect(await steps()).toBe(20);
  });
});

describe("durable: a restart mid-training resumes the job", () => {
  it("stops the server half-way; a new server on the same data dir finishes it, each step once", async () => {
    const dataDir = tempDir();
    const env = { ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: API_KEY, ATRIUM_ADMIN_KEY: ADMIN_KEY, ATRIUM_CONFIG: configWith(dataDir, 40) };
    const boot = () => startServer(configFromEnv(env, areaConfigSections()), { logger: pino({ level: "silent" }) });
    let server: RunningServer = await boot();
    let c = sdk(`${server.url}/v1`);
    const file = await upload(c, Array.from({ length: 10 }, (_, i) => chat(i)));
    const job = await c.fineTuning.jobs.create({ model: "gpt-4o-mini", training_file: file.id, method: { type: "supervised", supervised: { hyperparameters: { n_epochs: 2 } } } });
    await waitFor(c, job.id, (j) => j.status === "running");
    await new Promise((r) => setTimeout(r, 300));
    await server.close();
    server = await boot();
    c = sdk(`${server.url}/v1`);
    try {
      const done = await waitFor(c, job.id);
      expect(done.status).toBe("succeeded");
      const steps = (await allEvents(c, job.id)).filter((e) => e.type === "metrics").map((e) => (e.data as any).step);
      expect(steps.sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    } finally {
      await server.close();
    }
  });
});

describe("checkpoint permissions (admin key only)", () => {
  let checkpoint: string;
  let admin: OpenAI;
  beforeAll(async () => {
    checkpoint = (await client.fineTuning.jobs.checkpoints.list(supervised.id)).data[0]!.fine_tuned_model_checkpoint;
    admin = new OpenAI({ adminAPIKey: ADMIN_KEY, baseURL: s.baseURL, maxRetries: 0 });
  });
  const path = (ck: string) => `/fine_tuning/checkpoints/${encodeURIComponent(ck)}/permissions`;

  it("create, list (order, project_id, after/limit), delete; a granted project sees the checkpoint as a model", async () => {
    await sdkError(sdk(s.baseURL, KEYS.projectB).models.retrieve(checkpoint), 404);
    const created = await admin.fineTuning.checkpoints.permissions.create(checkpoint, { project_ids: ["proj_b", "proj_default"] });
    expect(created.data.map((p) => p.project_id)).toEqual(["proj_b", "proj_default"]);
    for (const p of created.data) expect(p).toMatchObject({ object: "checkpoint.permission", id: expect.stringMatching(/^cp_/), created_at: expect.any(Number) });
    expect(await sdk(s.baseURL, KEYS.projectB).models.retrieve(checkpoint)).toMatchObject({ id: checkpoint, owned_by: "org-default" });

    const asc = await admin.fineTuning.checkpoints.permissions.retrieve(checkpoint, { order: "ascending" });
    expect(asc.data.map((p) => p.project_id)).toEqual(["proj_b", "proj_default"]);
    expect(asc).toMatchObject({ object: "list", has_more: false, first_id: asc.data[0]!.id, last_id: asc.data[1]!.id });
    const desc = await admin.fineTuning.checkpoints.permissions.retrieve(checkpoint, { order: "descending", limit: 1 });
    expect(desc.data.map((p) => p.project_id)).toEqual(["proj_default"]);
    expect(desc.has_more).toBe(true);
    const onlyB = await admin.fineTuning.checkpoints.permissions.retrieve(checkpoint, { project_id: "proj_b" });
    expect(onlyB.data.map((p) => p.id)).toEqual([created.data[0]!.id]);

    // Granting again is idempotent.
    const again = await admin.fineTuning.checkpoints.permissions.create(checkpoint, { project_ids: ["proj_b"] });
    expect(again.data[0]!.id).toBe(created.data[0]!.id);

    const deleted = await admin.fineTuning.checkpoints.permissions.delete(created.data[0]!.id, { fine_tuned_model_checkpoint: checkpoint });
    expect(deleted).toEqual({ id: created.data[0]!.id, object: "checkpoint.permission", deleted: true });
    await sdkError(sdk(s.baseURL, KEYS.projectB).models.retrieve(checkpoint), 404);
    await sdkError(admin.fineTuning.checkpoints.permissions.delete(created.data[0]!.id, { fine_tuned_model_checkpoint: checkpoint }), 404);
  });

  it("permissions.list pages with the SDK's auto-pager (after = the page's last_id), in both orders", async () => {
    const created = await admin.fineTuning.checkpoints.permissions.create(checkpoint, { project_ids: ["proj_b", "proj_default"] });
    const byProject = new Map(created.data.map((p) => [p.project_id, p.id]));
    const ascending = [];
    for await (const p of admin.fineTuning.checkpoints.permissions.list(checkpoint, { limit: 1, order: "ascending" })) ascending.push(p);
    const descending = [];
    for await (const p of admin.fineTuning.checkpoints.permissions.list(checkpoint, { limit: 1, order: "descending" })) descending.push(p);
    const ids = ascending.map((p) => p.id);
    expect(new Set(ids)).toEqual(new Set(byProject.values()));
    expect(ids).toHaveLength(2);
    expect(descending.map((p) => p.id)).toEqual([...ids].reverse());
    const firstPage = await admin.fineTuning.checkpoints.permissions.list(checkpoint, { limit: 1, order: "ascending" });
    expect(firstPage.has_more).toBe(true);
    expect(firstPage.hasNextPage()).toBe(true);
    await admin.fineTuning.checkpoints.permissions.delete(byProject.get("proj_b")!, { fine_tuned_model_checkpoint: checkpoint });
  });

  it("a standard key is refused (403), no key is 401, and nothing changes", async () => {
    const before = await admin.fineTuning.checkpoints.permissions.retrieve(checkpoint);
    for (const key of [API_KEY, KEYS.owner]) {
      const standard = new OpenAI({ adminAPIKey: key, baseURL: s.baseURL, maxRetries: 0 });
      const e = await sdkError(standard.fineTuning.checkpoints.permissions.create(checkpoint, { project_ids: ["proj_b"] }), 403);
      expect(e.code).toBe("admin_key_required");
      await sdkError(standard.fineTuning.checkpoints.permissions.retrieve(checkpoint), 403);
    }
    await expectError(await api(s.baseURL, path(checkpoint), { method: "POST", key: null, json: { project_ids: ["proj_b"] } }), 401);
    await expectError(await api(s.baseURL, path(checkpoint), { key: null }), 401);
    expect((await admin.fineTuning.checkpoints.permissions.retrieve(checkpoint)).data).toEqual(before.data);
  });

  it("an unknown checkpoint is a 404; a project of another organization a 400 naming it", async () => {
    await sdkError(admin.fineTuning.checkpoints.permissions.create("ft:gpt-4o-mini:org-default::nope:ckpt-step-1", { project_ids: ["proj_b"] }), 404);
    await sdkError(admin.fineTuning.checkpoints.permissions.retrieve("ft:gpt-4o-mini:org-default::nope:ckpt-step-1"), 404);
    const e = await sdkError(admin.fineTuning.checkpoints.permissions.create(checkpoint, { project_ids: ["proj_b", "proj_other"] }), 400);
    expect(e.param).toBe("project_ids[1]");
    await expectError(await api(s.baseURL, path(checkpoint), { method: "POST", key: ADMIN_KEY, json: { project_ids: [] } }), 400, { param: "project_ids" });
    await expectError(await api(s.baseURL, `${path(checkpoint)}?order=sideways`, { key: ADMIN_KEY }), 400, { param: "order" });
  });

  it("project_ids: at most 100 ids of at most 256 characters; over either is a 400 and grants nothing", async () => {
    const granted = async () => (await admin.fineTuning.checkpoints.permissions.retrieve(checkpoint, { limit: 100 })).data.length;
    const before = await granted();
    const post = (project_ids: string[]) => api(s.baseURL, path(checkpoint), { method: "POST", key: ADMIN_KEY, json: { project_ids } });
    await expectError(await post(Array.from({ length: 101 }, () => "proj_b")), 400, { param: "project_ids", code: "array_above_max_length", message: /maximum length 100\b/ });
    await expectError(await post(["proj_b", "p".repeat(257)]), 400, { param: "project_ids[1]", code: "string_above_max_length", message: /maximum length 256\b/ });
    // At the cap the list is read (and here refused for the duplicate, as before).
    await expectError(await post(Array.from({ length: 100 }, () => "proj_b")), 400, { param: "project_ids[1]" });
    expect(await granted()).toBe(before);
  });
});

describe("over Connect and gRPC", () => {
  for (const [name, transport] of [
    ["Connect", () => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" })],
    ["gRPC", () => createGrpcTransport({ baseUrl: s.url })],
  ] as const) {
    it(`${name}: GetFineTuningJob, ListFineTuningCheckpoints; an unknown job is NotFound`, async () => {
      const c = createClient(FineTuningService, transport());
      const job = await c.getFineTuningJob({ fineTuningJobId: supervised.id }, as(API_KEY));
      expect(job.status).toBe("succeeded");
      expect(toJson(ValueSchema, job.hyperparameters!.nEpochs!)).toBe(10);
      const cks = await c.listFineTuningCheckpoints({ fineTuningJobId: supervised.id }, as(API_KEY));
      expect(cks.data.map((x) => Number(x.stepNumber))).toEqual([100, 90, 80]);
      await expectRpcError(() => c.getFineTuningJob({ fineTuningJobId: "ftjob-nope" }, as(API_KEY)), Code.NotFound, { httpStatus: 404, param: "fine_tuning_job_id" });
    });
  }
});

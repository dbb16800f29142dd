// Fine-tuning, graders and checkpoint permissions over the typed protocols (a Connect client and
// a gRPC client on the same port), the same calls the SDK tests make over REST: a supervised job
// from a file uploaded through FilesService to succeeded (list with the metadata filter, events,
// checkpoints, the fine-tuned model in ModelsService, deletable only by an Owner), DPO and
// reinforcement jobs, a bad training line, cancel, pause and resume, the model limits, checkpoint
// permissions with an admin, a standard and no key, and graders (multi with calculate_output, the
// python grader's runtime error) — errors as typed codes with the REST ErrorInfo.
import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { CheckpointPermissionsService, FineTuningService, GradersService, type FineTuningJob } from "../../../gen/atrium/v1/fine_tuning_pb.js";
import { FilesService } from "../../../gen/atrium/v1/files_pb.js";
import { ModelsService } from "../../../gen/atrium/v1/models_pb.js";
import { ADMIN_KEY, API_KEY, KEYS, startTestServer, tempDir, testConfig, type TestServer } from "../../shared/server.js";
import { as, expectRpcError, fileMessages } from "../../shared/rpc.js";
import { pollUntil, sleep } from "../../shared/poll.js";
import { jsonl } from "../../shared/jsonl.js";

let s: TestServer;

beforeAll(async () => {
  const dir = tempDir();
  const path = testConfig(dir);
  // The emulator's pace: 15 ms a step, so a running job can be caught, paused and cancelled.
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), fine_tuning: { step_interval_ms: 15, python_grader: { timeout_ms: 5000 } } }));
  s = await startTestServer({ env: { ATRIUM_CONFIG: path } });
});
afterAll(async () => s?.stop());

const value = (v: JsonValue) => fromJson(ValueSchema, v);
const json = (v: Parameters<typeof toJson>[1] | undefined) => (v === undefined ? undefined : toJson(ValueSchema, v as never));
const me = as(API_KEY);

const chat = (i: number) => ({
  messages: [
    { role: "user", content: `What is ${i} + ${i}?` },
    { role: "assistant", content: `${2 * i}` },
  ],
});
const pair = (i: number) => ({
  input: { messages: [{ role: "user", content: `Say ${i}` }] },
  preferred_output: [{ role: "assistant", content: `${i}` }],
  non_preferred_output: [{ role: "assistant", content: `${i + 1}` }],
});

for (const [name, make] of [
  ["Connect", (): Transport => createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" })],
  ["gRPC", (): Transport => createGrpcTransport({ baseUrl: s.url })],
] as const) {
  describe(name, () => {
    let ft: Client<typeof FineTuningService>;
    let files: Client<typeof FilesService>;
    let models: Client<typeof ModelsService>;
    let perms: Client<typeof CheckpointPermissionsService>;
    let graders: Client<typeof GradersService>;
    beforeAll(() => {
      const t = make();
      ft = createClient(FineTuningService, t);
      files = createClient(FilesService, t);
      models = createClient(ModelsService, t);
      perms = createClient(CheckpointPermissionsService, t);
      graders = createClient(GradersService, t);
    });

    const upload = async (text: string) => (await files.createFile(fileMessages({ purpose: "fine-tune", filename: "train.jsonl" }, Buffer.from(text)), me)).id;
    const waitFor = (id: string, until: (j: FineTuningJob) => boolean = (j) => ["succeeded", "failed", "cancelled"].includes(j.status)) =>
      pollUntil(() => ft.getFineTuningJob({ fineTuningJobId: id }, me), until, `job ${id}`, { intervalMs: 25 });
    const metricsEvents = async (id: string) => (await ft.listFineTuningEvents({ fineTuningJobId: id, limit: 100 }, me)).data.filter((e) => e.type === "metrics");

    let done: FineTuningJob;

    it("a supervised job: create, list by metadata, events, checkpoints; the model in ListModels, deletable only by an Owner", async () => {
      const suffix = name.toLowerCase();
      const created = await ft.createFineTuningJob(
        {
          model: "gpt-4o-mini",
          trainingFile: await upload(jsonl(Array.from({ length: 10 }, (_, i) => chat(i)))),
          suffix,
          method: { type: "supervised", supervised: { hyperparameters: { nEpochs: value(2) } } },
          metadata: value({ via: name }),
        },
        me,
      );
      expect(created).toMatchObject({ object: "fine_tuning.job", model: "gpt-4o-mini", status: "validating_files", organizationId: "org-default" });
      expect(created.id).toMatch(/^ftjob-/);
      done = await waitFor(created.id);
      expect(done.status).toBe("succeeded");
      expect(done.fineTunedModel).toBe(`ft:gpt-4o-mini:org-default:${suffix}:${created.id.replace(/^ftjob-/, "")}`);
      expect(json(done.hyperparameters?.nEpochs)).toBe(2);
      expect(json(done.hyperparameters?.batchSize)).toBe(1);
      expect(Number(done.trainedTokens)).toBeGreaterThan(0);

      const mine = await ft.listFineTuningJobs({ metadata: { via: name } }, me);
      expect(mine.data.map((j) => j.id)).toEqual([created.id]);
      expect((await ft.listFineTuningJobs({ metadata: { via: "nobody" } }, me)).data).toEqual([]);

      const metrics = await metricsEvents(created.id);
      expect(metrics).toHaveLength(20);
      expect(json(metrics[0]!.data)).toMatchObject({ step: 20, total_steps: 20 });
      const page = await ft.listFineTuningEvents({ fineTuningJobId: created.id, limit: 2 }, me);
      expect(page.data).toHaveLength(2);
      expect(page.hasMore).toBe(true);

      const cks = await ft.listFineTuningCheckpoints({ fineTuningJobId: created.id }, me);
      expect(cks.data.map((c) => Number(c.stepNumber))).toEqual([20, 10]);
      for (const c of cks.data) {
        expect(c.id).toMatch(/^ftckpt_/);
        expect(c.fineTunedModelCheckpoint).toBe(`${done.fineTunedModel}:ckpt-step-${c.stepNumber}`);
      }

      expect((await models.listModels({}, me)).data.map((m) => m.id)).toContain(done.fineTunedModel);
      expect(await models.getModel({ model: done.fineTunedModel! }, me)).toMatchObject({ id: done.fineTunedModel, ownedBy: "org-default" });
      await expectRpcError(() => models.getModel({ model: done.fineTunedModel! }, as(KEYS.projectB)), Code.NotFound, { httpStatus: 404 });
      await expectRpcError(() => models.deleteModel({ model: done.fineTunedModel! }, me), Code.PermissionDenied, { httpStatus: 403 });
      await expectRpcError(() => ft.getFineTuningJob({ fineTuningJobId: "ftjob-nope" }, me), Code.NotFound, { httpStatus: 404, param: "fine_tuning_job_id" });
    });

    it("DPO and reinforcement jobs succeed; a bad training line fails the job naming the line", async () => {
      const dpo = await ft.createFineTuningJob(
        { model: "gpt-4o-mini", trainingFile: await upload(jsonl(Array.from({ length: 10 }, (_, i) => pair(i)))), method: { type: "dpo", dpo: { hyperparameters: { nEpochs: value(1) } } } },
        me,
      );
      const items = Array.from({ length: 10 }, (_, i) => ({ messages: [{ role: "user", content: `Say ${i}` }], answer: `${i}` }));
      const grader = value({ type: "string_check", name: "exact", input: "{{sample.output_text}}", reference: "{{item.answer}}", operation: "eq" });
      const rft = await ft.createFineTuningJob(
        { model: "o4-mini", trainingFile: await upload(jsonl(items)), method: { type: "reinforcement", reinforcement: { grader, hyperparameters: { nEpochs: value(1) } } } },
        me,
      );
      const bad = await ft.createFineTuningJob({ model: "gpt-4o-mini", trainingFile: await upload(jsonl(Array.from({ length: 3 }, (_, i) => chat(i))) + "{oops\n" + jsonl(Array.from({ length: 10 }, (_, i) => chat(i)))) }, me);

      const dpoDone = await waitFor(dpo.id);
      expect(dpoDone.status).toBe("succeeded");
      expect(dpoDone.method?.type).toBe("dpo");
      expect(json(dpoDone.method?.dpo?.hyperparameters?.beta)).toEqual(expect.any(Number));
      const rftDone = await waitFor(rft.id);
      expect(rftDone.status).toBe("succeeded");
      expect(json((await metricsEvents(rft.id))[0]!.data)).toMatchObject({ train_reward_mean: expect.any(Number) });
      const badDone = await waitFor(bad.id);
      expect(badDone.status).toBe("failed");
      expect(badDone.error).toMatchObject({ code: "invalid_training_file", message: expect.stringMatching(/line 4: not valid JSON/), param: "training_file" });
    });

    it("cancel stops a running job; pause holds one and resume finishes it; a finished job cannot be cancelled", async () => {
      const train = await upload(jsonl(Array.from({ length: 10 }, (_, i) => chat(i))));
      const a = await ft.createFineTuningJob({ model: "gpt-4o-mini", trainingFile: train }, me);
      await waitFor(a.id, (j) => j.status === "running");
      expect((await ft.cancelFineTuningJob({ fineTuningJobId: a.id }, me)).status).toBe("cancelled");
      const before = (await ft.listFineTuningEvents({ fineTuningJobId: a.id, limit: 100 }, me)).data.map((e) => e.id);
      await sleep(150);
      expect((await ft.listFineTuningEvents({ fineTuningJobId: a.id, limit: 100 }, me)).data.map((e) => e.id)).toEqual(before);
      await expectRpcError(() => ft.cancelFineTuningJob({ fineTuningJobId: a.id }, me), Code.InvalidArgument, { httpStatus: 400, code: "invalid_job_state" });

      const b = await ft.createFineTuningJob({ model: "gpt-4o-mini", trainingFile: train, method: { type: "supervised", supervised: { hyperparameters: { nEpochs: value(3) } } } }, me);
      await waitFor(b.id, (j) => j.status === "running");
      expect((await ft.pauseFineTuningJob({ fineTuningJobId: b.id }, me)).status).toBe("paused");
      const atPause = (await metricsEvents(b.id)).length;
      await sleep(150);
      expect((await metricsEvents(b.id)).length).toBe(atPause);
      expect((await ft.resumeFineTuningJob({ fineTuningJobId: b.id }, me)).status).toBe("running");
      expect((await waitFor(b.id)).status).toBe("succeeded");
      expect(await metricsEvents(b.id)).toHaveLength(30);
    });

    it("GetFineTuningModelLimits lists the fine-tunable models", async () => {
      const limits = await ft.getFineTuningModelLimits({}, me);
      expect(limits.data.map((l) => l.model)).toContain("gpt-4o-mini");
      for (const l of limits.data) expect(l.methods.length).toBeGreaterThan(0);
    });

    it("checkpoint permissions: an admin key creates, lists and deletes; a standard key is PermissionDenied, no key Unauthenticated", async () => {
      const checkpoint = (await ft.listFineTuningCheckpoints({ fineTuningJobId: done.id }, me)).data[0]!.fineTunedModelCheckpoint;
      const admin = as(ADMIN_KEY);
      await expectRpcError(() => models.getModel({ model: checkpoint }, as(KEYS.projectB)), Code.NotFound, { httpStatus: 404 });
      const created = await perms.createCheckpointPermission({ fineTunedModelCheckpoint: checkpoint, projectIds: ["proj_b"] }, admin);
      expect(created.data.map((p) => [p.object, p.projectId])).toEqual([["checkpoint.permission", "proj_b"]]);
      expect(created.data[0]!.id).toMatch(/^cp_/);
      expect((await models.getModel({ model: checkpoint }, as(KEYS.projectB))).id).toBe(checkpoint);
      const list = await perms.listCheckpointPermissions({ fineTunedModelCheckpoint: checkpoint, order: "ascending", projectId: "proj_b" }, admin);
      expect(list.data.map((p) => p.id)).toEqual([created.data[0]!.id]);

      for (const key of [API_KEY, KEYS.owner]) {
        await expectRpcError(() => perms.createCheckpointPermission({ fineTunedModelCheckpoint: checkpoint, projectIds: ["proj_default"] }, as(key)), Code.PermissionDenied, {
          httpStatus: 403,
          code: "admin_key_required",
        });
        await expectRpcError(() => perms.deleteCheckpointPermission({ fineTunedModelCheckpoint: checkpoint, permissionId: created.data[0]!.id }, as(key)), Code.PermissionDenied, { httpStatus: 403 });
      }
      await expectRpcError(() => perms.listCheckpointPermissions({ fineTunedModelCheckpoint: checkpoint }, as(undefined)), Code.Unauthenticated, { httpStatus: 401 });
      // Nothing changed.
      expect((await perms.listCheckpointPermissions({ fineTunedModelCheckpoint: checkpoint }, admin)).data.map((p) => p.id)).toEqual([created.data[0]!.id]);
      await expectRpcError(() => perms.createCheckpointPermission({ fineTunedModelCheckpoint: `${checkpoint}0`, projectIds: ["proj_b"] }, admin), Code.NotFound, { httpStatus: 404 });

      const deleted = await perms.deleteCheckpointPermission({ fineTunedModelCheckpoint: checkpoint, permissionId: created.data[0]!.id }, admin);
      expect(deleted).toMatchObject({ id: created.data[0]!.id, deleted: true });
      await expectRpcError(() => models.getModel({ model: checkpoint }, as(KEYS.projectB)), Code.NotFound, { httpStatus: 404 });

      // The fine-tuned model itself: only an Owner deletes it.
      expect((await models.deleteModel({ model: done.fineTunedModel! }, as(KEYS.owner))).deleted).toBe(true);
    });

    it("graders: multi with calculate_output; the python grader's runtime error in metadata", async () => {
      const multi = value({
        type: "multi",
        name: "combined",
        graders: [
          { type: "string_check", name: "exact", input: "{{sample.output_text}}", reference: "{{item.label}}", operation: "eq" },
          { type: "text_similarity", name: "fuzzy", input: "{{sample.output_text}}", reference: "{{item.label}}", evaluation_metric: "fuzzy_match" },
        ],
        calculate_output: "0.5 * exact + 0.5 * fuzzy",
      });
      const res = await graders.runGrader({ grader: multi, modelSample: "Pariss", item: value({ label: "Paris" }) }, me);
      expect(res.subRewards).toEqual({ exact: 0, fuzzy: expect.closeTo(10 / 11, 12) });
      expect(res.reward).toBeCloseTo(5 / 11, 12);
      expect(res.metadata).toMatchObject({ name: "combined", type: "multi" });

      const py = value({ type: "python", name: "py", source: "def grade(sample, item):\n    return 1 / 0\n" });
      const err = await graders.runGrader({ grader: py, modelSample: "x" }, me);
      expect(err.reward).toBe(0);
      expect(err.metadata?.errors?.pythonGraderRuntimeError).toBe(true);
      expect(err.metadata?.errors?.pythonGraderRuntimeErrorDetails).toMatch(/ZeroDivisionError/);
    });
  });
}

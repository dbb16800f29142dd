// The local trainer: an EMULATOR of fine-tuning, documented as such (src/services/fine_tuning/README.md). It
// does everything around training for real — reads and checks the data set, counts the tokens
// (tokenizer × epochs = trained_tokens), resolves `auto` hyperparameters, runs the grader of a
// reinforcement job on the training items, steps through the epochs on a schedule emitting
// `metrics` events and checkpoints, and registers the fine-tuned model — but no weights change:
// the losses follow a seeded, decreasing curve, and the model it registers answers nothing.
//
// It is a durable job (one per run of a fine-tuning job; a resume is a new run). Each step's
// writes — the job's progress, its metrics event, a checkpoint at each epoch's end — commit in
// ONE transaction with the runner's checkpoint, and every write is compare-and-set on the job
// record: after a restart the run resumes at the step after the last committed one, and once a
// cancel or pause has changed the record no step of the old run can write anything.
import { setTimeout as sleep } from "node:timers/promises";
import { Readable } from "node:stream";
import { newId } from "../../common/ids.js";
import { runGrader, type GraderEngineDeps } from "../../engines/graders/index.js";
import { PermanentJobError, type JobContext, type JobHandler, type KindOptions } from "../../jobs/handler.js";
import type { Job } from "../../jobs/types.js";
import { VersionConflict, type RecordStore, type Scope, type StoredRecord, type WriteOp } from "../../storage/types.js";
import type { Clock } from "../deps.js";
import { MAX_FILE_BYTES, type FilesApi } from "../files/index.js";
import type { FineTunedModels } from "../models/index.js";
import { checkpointName, eventOp, fineTunedModelName, jobUpdateOp, resolveHyperparameters } from "./fine-tuning.js";
import { orgScope } from "./permissions.js";
import { CHECKPOINT_KIND, CHECKPOINT_REF_KIND, JOB_KIND, type CheckpointMetrics, type CheckpointRecord, type CheckpointRef, type FineTuningJobRecord } from "./records.js";
import { BadTrainingFile, MIN_EXAMPLES, parseExamples, type Example } from "./training-data.js";

/** One run of a fine-tuning job (its runner job id: runJobId in fine-tuning.ts). */
export const FINE_TUNING_TRAIN_JOB = "fine_tuning.train";

/** What the training job works with. */
export interface TrainJobDeps {
  records: RecordStore;
  clock: Clock;
  files: FilesApi;
  models: FineTunedModels;
  graders: GraderEngineDeps;
  /** Wall-clock time of one emulated training step. */
  stepIntervalMs: number;
}

export interface TrainPayload {
  jobId: string;
  run: number;
}

const KEEP_CHECKPOINTS = 3;

/** mulberry32: a small seeded PRNG, so a job's curve is the same on every run and resume. */
function rand(seed: number, step: number): number {
  let t = (seed ^ Math.imul(step + 1, 0x9e3779b1)) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}

const round = (x: number) => Math.round(x * 1e5) / 1e5;

/** The emulated curve: loss falls from about 1.75 towards 0.15, accuracy rises from 0.55. */
export function stepMetrics(job: FineTuningJobRecord, step: number, total: number): CheckpointMetrics {
  const p = step / total;
  const noise = rand(job.seed, step) - 0.5;
  const loss = (1.6 * Math.exp(-3 * p) + 0.15) * (1 + 0.1 * noise);
  const acc = Math.min(0.99, 0.55 + 0.4 * (1 - Math.exp(-3 * p)) + 0.02 * noise);
  const m: CheckpointMetrics = { step, train_loss: round(loss), train_mean_token_accuracy: round(acc) };
  if (job.validationFile) {
    m.valid_loss = round(loss * 1.08);
    m.valid_mean_token_accuracy = round(acc - 0.02);
  }
  return m;
}

/** A job whose record may not be written yet (the run is enqueued first): wait for it briefly. */
async function waitForJob(deps: Pick<TrainJobDeps, "records">, scope: Scope, p: TrainPayload, signal: AbortSignal) {
  const jobs = deps.records.collection<FineTuningJobRecord>(JOB_KIND);
  for (let waited = 0; ; waited += 20) {
    const r = await jobs.get(scope, p.jobId);
    if (r && r.data.run >= p.run) return r;
    if (waited >= 5000) return undefined;
    await sleep(20, undefined, { signal });
  }
}

/** A data set file's examples; a missing or malformed file is a BadTrainingFile. */
async function examplesOf(files: FilesApi, scope: Scope, job: FineTuningJobRecord, fileId: string, label: string): Promise<Example[]> {
  const f = await files.find(scope, fileId);
  if (!f) throw new BadTrainingFile("file_not_found", `${label} ${fileId} no longer exists.`);
  return parseExamples(await files.readAll(scope, f, { maxBytes: MAX_FILE_BYTES }), job.method, job.model, label);
}

/** The run's end as a failed job (error in the record, an error event), with compare-and-set. */
async function fail(deps: TrainJobDeps, ctx: JobContext<TrainPayload>, cur: StoredRecord<FineTuningJobRecord>, error: { code: string; message: string; param: string | null }) {
  const now = deps.clock.now();
  await ctx.complete(null, [
    jobUpdateOp(ctx.job.scope, cur, { ...cur.data, status: "failed", error, finishedAt: now, estimatedFinish: null }),
    eventOp(ctx.job.scope, cur.id, now, `Fine-tuning job failed: ${error.message}`, { level: "error" }),
  ]);
}

/** Validating files: the data set is read, checked and counted; `auto` values resolved. */
async function validate(deps: TrainJobDeps, ctx: JobContext<TrainPayload>, cur: StoredRecord<FineTuningJobRecord>): Promise<boolean> {
  const scope = ctx.job.scope;
  const job = cur.data;
  let training: Example[];
  try {
    training = await examplesOf(deps.files, scope, job, job.trainingFile, "Training file");
    if (training.length < MIN_EXAMPLES)
      throw new BadTrainingFile("insufficient_examples", `Training file has ${training.length} example(s); at least ${MIN_EXAMPLES} are required.`);
  } catch (e) {
    if (!(e instanceof BadTrainingFile)) throw e;
    await fail(deps, ctx, cur, { code: `invalid_training_file`, message: e.message, param: "training_file" });
    return false;
  }
  if (job.validationFile) {
    try {
      await examplesOf(deps.files, scope, job, job.validationFile, "Validation file");
    } catch (e) {
      if (!(e instanceof BadTrainingFile)) throw e;
      await fail(deps, ctx, cur, { code: "invalid_validation_file", message: e.message, param: "validation_file" });
      return false;
    }
  }
  if (job.grader) {
    // The grader must be able to read the items it will see.
    const first = await runGrader(job.grader, "", training[0]!.item ?? {}, deps.graders, ctx.signal);
    if (first.metadata.errors.invalid_variable_error) {
      await fail(deps, ctx, cur, { code: "invalid_grader", message: "The grader uses a variable the first training item does not have (invalid_variable_error).", param: "method.reinforcement.grader" });
      return false;
    }
  }
  const hyper = resolveHyperparameters(job.hyperparameters, training.length);
  const stepsPerEpoch = Math.ceil(training.length / (hyper.batch_size as number));
  const totalSteps = stepsPerEpoch * (hyper.n_epochs as number);
  const tokens = training.reduce((n, e) => n + e.tokens, 0) * (hyper.n_epochs as number);
  const now = deps.clock.now();
  const next: FineTuningJobRecord = {
    ...job,
    status: "running",
    hyperparameters: hyper,
    trainedTokens: tokens,
    progress: { step: 0, totalSteps, stepsPerEpoch },
    estimatedFinish: now + Math.ceil((totalSteps * deps.stepIntervalMs) / 1000),
  };
  await ctx.checkpoint({ step: 0 }, [
    jobUpdateOp(scope, cur, next),
    eventOp(scope, job.id, now, `Validating training file: ${job.trainingFile}${job.validationFile ? ` and validation file: ${job.validationFile}` : ""}`),
    eventOp(scope, job.id, now, `Files validated: ${training.length} examples, ${tokens} training tokens over ${hyper.n_epochs} epochs; moving job to queued state`),
    eventOp(scope, job.id, now, "Fine-tuning job started"),
  ]);
  return true;
}

/** Reinforcement: the grader's mean reward over this step's batch of training items. */
async function gradeBatch(deps: TrainJobDeps, ctx: JobContext<TrainPayload>, job: FineTuningJobRecord, examples: Example[], step: number): Promise<number> {
  const batch = job.hyperparameters.batch_size as number;
  let sum = 0;
  for (let i = 0; i < batch; i++) {
    const ex = examples[((step - 1) * batch + i) % examples.length]!;
    // The emulator has no policy model: its sample is empty (a provider-backed trainer samples the model).
    const r = await runGrader(job.grader!, "", ex.item ?? {}, deps.graders, ctx.signal);
    sum += r.reward;
  }
  return round(sum / batch);
}

/** The job's result file: every step's metrics as CSV. */
async function resultFile(files: FilesApi, scope: Scope, job: FineTuningJobRecord, now: number): Promise<{ id: string; ops: WriteOp[] }> {
  const total = job.progress!.totalSteps;
  const rows = ["step,train_loss,train_accuracy,valid_loss,valid_mean_token_accuracy"];
  for (let s = 1; s <= total; s++) {
    const m = stepMetrics(job, s, total);
    rows.push([s, m.train_loss, m.train_mean_token_accuracy, m.valid_loss ?? "", m.valid_mean_token_accuracy ?? ""].join(","));
  }
  const id = files.newId();
  const bytes = await files.writeContent(id, Readable.from([Buffer.from(rows.join("\n") + "\n")]));
  const { ops } = files.prepare(scope, id, bytes, { filename: "step_metrics.csv", purpose: "fine-tune-results", mimeType: "text/csv", createdAt: now, expiresAt: null });
  return { id, ops };
}

/** The run's end as a succeeded job: its metrics file, the fine-tuned model and the closing events. */
async function finish(deps: TrainJobDeps, ctx: JobContext<TrainPayload>, cur: StoredRecord<FineTuningJobRecord>) {
  const scope = ctx.job.scope;
  const now = deps.clock.now();
  const name = fineTunedModelName(cur.data);
  const result = await resultFile(deps.files, scope, cur.data, now);
  try {
    await ctx.complete({ fineTunedModel: name }, [
      jobUpdateOp(scope, cur, { ...cur.data, status: "succeeded", fineTunedModel: name, finishedAt: now, estimatedFinish: null, resultFiles: [result.id] }),
      ...result.ops,
      deps.models.createOp(scope, { id: name, created: now, ownedBy: cur.data.organizationId }),
      eventOp(scope, cur.id, now, `New fine-tuned model created: ${name}`),
      eventOp(scope, cur.id, now, "The job has successfully completed"),
    ]);
  } catch (e) {
    await deps.files.discardContent(result.id);
    throw e;
  }
}

/** One step's writes: progress, a metrics event, and at an epoch's end a checkpoint (keeping the last three). */
async function stepWrite(deps: TrainJobDeps, scope: Scope, job: FineTuningJobRecord, step: number, rewardMean: number | undefined): Promise<{ data: FineTuningJobRecord; also: WriteOp[] }> {
  const { totalSteps, stepsPerEpoch } = job.progress!;
  const now = deps.clock.now();
  const metrics = stepMetrics(job, step, totalSteps);
  const data: Record<string, unknown> = { ...metrics, total_steps: totalSteps };
  if (rewardMean !== undefined) data.train_reward_mean = rewardMean;
  const remaining = totalSteps - step;
  const next: FineTuningJobRecord = { ...job, progress: { ...job.progress!, step }, estimatedFinish: now + Math.ceil((remaining * deps.stepIntervalMs) / 1000) };
  const ops: WriteOp[] = [
    eventOp(scope, job.id, now, `Step ${step}/${totalSteps}: training loss=${metrics.train_loss.toFixed(4)}`, { type: "metrics", data }),
  ];
  if (step % stepsPerEpoch === 0 || step === totalSteps) {
    const name = checkpointName(job, step);
    const ck: CheckpointRecord = { id: newId("ftckpt_"), createdAt: now, fineTunedModelCheckpoint: name, stepNumber: step, jobId: job.id, metrics };
    if (job.validationFile) {
      ck.metrics.full_valid_loss = metrics.valid_loss;
      ck.metrics.full_valid_mean_token_accuracy = metrics.valid_mean_token_accuracy;
    }
    const org = orgScope(job.organizationId);
    const ref: CheckpointRef = { checkpoint: name, projectId: scope.projectId, jobId: job.id, createdAt: now };
    ops.push(
      { op: "insert", kind: CHECKPOINT_KIND, scope, record: { id: ck.id, parentId: job.id, createdAt: now, data: ck } },
      { op: "insert", kind: CHECKPOINT_REF_KIND, scope: org, record: { id: name, createdAt: now, data: ref } },
      eventOp(scope, job.id, now, `Checkpoint created at step ${step}`),
    );
    const older = await deps.records.collection<CheckpointRecord>(CHECKPOINT_KIND).list(scope, { parentId: job.id, limit: 100, order: "desc" });
    for (const old of older.records.slice(KEEP_CHECKPOINTS - 1)) {
      ops.push({ op: "delete", kind: CHECKPOINT_KIND, scope, id: old.id }, { op: "delete", kind: CHECKPOINT_REF_KIND, scope: org, id: old.data.fineTunedModelCheckpoint });
    }
  }
  return { data: next, also: ops };
}

/** The training job: a short lease, so a killed server's runs are picked up seconds after a restart. */
export function trainJob(deps: TrainJobDeps): { handler: JobHandler<TrainPayload, unknown>; options: Partial<KindOptions>; settle: (job: Job) => Promise<void> } {
  const jobs = () => deps.records.collection<FineTuningJobRecord>(JOB_KIND);

  async function train(ctx: JobContext<TrainPayload>): Promise<unknown> {
    const scope = ctx.job.scope;
    let cur = await waitForJob(deps, scope, ctx.job.payload, ctx.signal);
    if (!cur) throw new PermanentJobError(`fine-tuning job ${ctx.job.payload.jobId} does not exist`);
    // A later run (a resume) owns the job now.
    if (cur.data.run !== ctx.job.payload.run) return null;
    if (cur.data.status === "validating_files" || cur.data.status === "queued") {
      try {
        if (!(await validate(deps, ctx, cur))) return null;
      } catch (e) {
        if (e instanceof VersionConflict) return null; // cancelled meanwhile
        throw e;
      }
      cur = (await jobs().get(scope, cur.id))!;
    }
    const examples = cur.data.grader ? await examplesOf(deps.files, scope, cur.data, cur.data.trainingFile, "Training file") : [];
    for (;;) {
      if (!cur || cur.data.status !== "running" || cur.data.run !== ctx.job.payload.run) return null; // paused, cancelled, or superseded
      const { step, totalSteps } = cur.data.progress!;
      if (step >= totalSteps) {
        await finish(deps, ctx, cur);
        return null;
      }
      await sleep(deps.stepIntervalMs, undefined, { signal: ctx.signal });
      const reward = cur.data.grader ? await gradeBatch(deps, ctx, cur.data, examples, step + 1) : undefined;
      // The step commits with the runner's checkpoint. A cancel, pause or later run that changed
      // the record meanwhile means this run writes nothing more; the loop then stops.
      await jobs().mutate(
        scope,
        cur.id,
        async (c) => {
          if (!c || c.data.status !== "running" || c.data.run !== ctx.job.payload.run || c.data.progress!.step !== step) return { write: "none", result: undefined };
          const { data, also } = await stepWrite(deps, scope, c.data, step + 1, reward);
          return { write: "update", data, tag: data.status, also, result: undefined };
        },
        { commit: (ops) => ctx.checkpoint({ step: step + 1 }, ops) },
      );
      cur = await jobs().get(scope, cur.id);
    }
  }

  /**
   * A run the runner gave up on (its handler kept failing, or its process kept dying) fails its
   * fine-tuning job, unless the job moved on meanwhile (a later run, a pause or a cancel: a run the
   * API cancelled ends `cancelled`, and the API already wrote the job's status).
   */
  async function settle(job: Job): Promise<void> {
    if (job.state !== "failed") return;
    const { jobId, run } = job.payload as TrainPayload;
    const now = deps.clock.now();
    await jobs().mutate(job.scope, jobId, (cur) => {
      if (!cur || cur.data.run !== run || !["validating_files", "queued", "running"].includes(cur.data.status)) return { write: "none", result: undefined };
      const error = { code: "training_failed", message: `Training could not go on: ${job.lastError ?? "its run ended without a result"}.`, param: null };
      return {
        write: "update",
        data: { ...cur.data, status: "failed", error, finishedAt: now, estimatedFinish: null },
        tag: "failed",
        also: [eventOp(job.scope, jobId, now, `Fine-tuning job failed: ${error.message}`, { level: "error" })],
        result: undefined,
      };
    });
  }

  return { handler: train, options: { concurrency: 4, leaseMs: 5000 }, settle };
}


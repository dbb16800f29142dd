// Fine-tuning jobs (spec 2.11, 4.10): creation rules, the job record, its events and checkpoints,
// and the moves a caller makes (cancel, pause, resume). The training itself is trainer.ts, a
// durable job on the runner.
//
// States: validating_files → queued → running ⇄ paused → succeeded | failed; cancel from any of
// validating_files, queued, running, paused. Every change of a job record is compare-and-set on
// its version, so a cancel and a training step can never both win: the loser writes nothing.
import { randomInt } from "node:crypto";
import { capChars, capItems, MAX_ID_CHARS } from "../../common/caps.js";
import { ApiError, invalidParam, missingParam, notFound } from "../../common/errors.js";
import { newId } from "../../common/ids.js";
import { checkMetadata } from "../../common/metadata.js";
import type { JobRunner } from "../../jobs/runner.js";
import type { Scope, StoredRecord, WriteOp } from "../../storage/types.js";
import type { Grader } from "../../engines/graders/index.js";
import { builtinModel, fineTunedModels, modelNotFound } from "../models/index.js";
import type { ServiceDeps } from "../deps.js";
import { filesApi, type FileView } from "../files/index.js";
import type { Method } from "./training-data.js";
import { FINE_TUNING_TRAIN_JOB } from "./jobs.js";
import {
  CHECKPOINT_KIND,
  EVENT_KIND,
  JOB_KIND,
  type CheckpointRecord,
  type EventRecord,
  type FineTuningJobRecord,
  type Hyperparameters,
  type Integration,
  type JobStatus,
} from "./records.js";

export const MAX_SUFFIX_CHARS = 64;
/**
 * An integration's settings, bounded as W&B bounds them (project names of at most 128 characters,
 * tags of at most 64); the platform publishes no caps of its own for them.
 */
export const MAX_INTEGRATIONS = 10;
export const MAX_INTEGRATION_NAME_CHARS = 128;
export const MAX_INTEGRATION_TAGS = 50;
export const MAX_INTEGRATION_TAG_CHARS = 64;
export const CANCELLABLE: readonly JobStatus[] = ["validating_files", "queued", "running", "paused"];

export type IntegrationInput = { type?: string; settingsField?: "wandb" | "tracker"; settings?: { project?: string; entity?: string; name?: string; tags: string[] } };

/** Base models that can be fine-tuned here, and by which methods (the platform's current list). */
export const FINE_TUNABLE: Readonly<Record<string, readonly Method[]>> = {
  "gpt-4.1": ["supervised", "dpo"],
  "gpt-4.1-mini": ["supervised", "dpo"],
  "gpt-4.1-nano": ["supervised", "dpo"],
  "gpt-4o": ["supervised", "dpo"],
  "gpt-4o-2024-08-06": ["supervised", "dpo"],
  "gpt-4o-mini": ["supervised", "dpo"],
  "gpt-4-0613": ["supervised"],
  "gpt-3.5-turbo": ["supervised"],
  "gpt-3.5-turbo-0125": ["supervised"],
  "o4-mini": ["reinforcement"],
};

export const runJobId = (job: Pick<FineTuningJobRecord, "id" | "run">) => `${FINE_TUNING_TRAIN_JOB}:${job.id}:${job.run}`;

/** The part of the job id that goes into model names (the platform's short id). */
const shortId = (jobId: string) => jobId.replace(/^ftjob-/, "");

/** ft:<base>:<org>:<suffix>:<job> — an empty suffix stays empty, as on the platform. */
export function fineTunedModelName(job: FineTuningJobRecord): string {
  return `ft:${baseOf(job.model)}:${job.organizationId}:${job.suffix ?? ""}:${shortId(job.id)}`;
}

export const checkpointName = (job: FineTuningJobRecord, step: number) => `${fineTunedModelName(job)}:ckpt-step-${step}`;

/** The base model of a model id (a fine-tuned model's base). */
export const baseOf = (model: string) => (model.startsWith("ft:") ? model.split(":")[1]! : model);

export function eventOp(scope: Scope, jobId: string, now: number, message: string, extra: Partial<EventRecord> = {}): WriteOp {
  const rec: EventRecord = { id: newId("ftevent-"), createdAt: now, level: "info", message, type: "message", data: null, ...extra };
  return { op: "insert", kind: EVENT_KIND, scope, record: { id: rec.id, parentId: jobId, createdAt: now, data: rec } };
}

export function jobUpdateOp(scope: Scope, cur: StoredRecord<FineTuningJobRecord>, data: FineTuningJobRecord): WriteOp {
  return { op: "update", kind: JOB_KIND, scope, id: cur.id, data, tag: data.status, expectVersion: cur.version };
}

const invalidState = (job: FineTuningJobRecord, action: string) =>
  new ApiError(400, `Fine-tuning job ${job.id} cannot be ${action}: its status is '${job.status}'.`, { param: "fine_tuning_job_id", code: "invalid_job_state" });

export interface CreateJobInput {
  model?: string;
  trainingFile?: string;
  validationFile?: string;
  suffix?: string;
  seed?: number;
  metadata?: unknown;
  integrations: IntegrationInput[];
  /** Deprecated top-level hyperparameters (supervised). */
  hyperparameters?: Partial<Hyperparameters>;
  method?: { type?: string; hyperparameters?: Partial<Hyperparameters>; grader?: Grader };
}

function checkHyper(h: Partial<Hyperparameters> | undefined, method: Method, param: string): Hyperparameters {
  const out: Hyperparameters = { batch_size: "auto", learning_rate_multiplier: "auto", n_epochs: "auto" };
  const num = (key: keyof Hyperparameters, v: unknown, check: (n: number) => boolean, rule: string) => {
    if (v === undefined || v === null || v === "auto") return "auto" as const;
    if (typeof v !== "number" || !check(v)) throw invalidParam(`${param}.${key}`, `Invalid value for '${param}.${key}': expected 'auto' or ${rule}, got ${JSON.stringify(v)}.`);
    return v;
  };
  out.batch_size = num("batch_size", h?.batch_size, (n) => Number.isInteger(n) && n >= 1 && n <= 256, "an integer from 1 to 256");
  out.learning_rate_multiplier = num("learning_rate_multiplier", h?.learning_rate_multiplier, (n) => n > 0 && n <= 10, "a number above 0 and at most 10");
  out.n_epochs = num("n_epochs", h?.n_epochs, (n) => Number.isInteger(n) && n >= 1 && n <= 50, "an integer from 1 to 50");
  if (method === "dpo") out.beta = num("beta", h?.beta, (n) => n > 0 && n <= 2, "a number above 0 and at most 2");
  else if (h?.beta !== undefined) throw invalidParam(`${param}.beta`, `'${param}.beta' applies to dpo jobs only.`);
  if (method === "reinforcement") {
    const effort = h?.reasoning_effort ?? "default";
    if (!["default", "low", "medium", "high"].includes(effort))
      throw invalidParam(`${param}.reasoning_effort`, `Invalid value for '${param}.reasoning_effort': '${effort}'. Supported values are: 'default', 'low', 'medium', 'high'.`);
    out.reasoning_effort = effort;
    out.compute_multiplier = num("compute_multiplier", h?.compute_multiplier, (n) => n > 0 && n <= 10, "a number above 0 and at most 10");
    out.eval_interval = num("eval_interval", h?.eval_interval, (n) => Number.isInteger(n) && n >= 1, "a positive integer");
    out.eval_samples = num("eval_samples", h?.eval_samples, (n) => Number.isInteger(n) && n >= 1, "a positive integer");
  } else if (h?.reasoning_effort !== undefined) throw invalidParam(`${param}.reasoning_effort`, `'${param}.reasoning_effort' applies to reinforcement jobs only.`);
  return out;
}

/**
 * The `auto` values resolved as the platform documents them: n_epochs 3, moved so that the run
 * sees between 100 and 25,000 examples (the fine-tuning cookbook's rule); batch_size about 0.2 %
 * of the examples, 1 to 256; learning_rate_multiplier 2 for batches up to 8, else 1 (values the
 * platform reports for small jobs); DPO beta 0.1; RL compute_multiplier 1, eval_interval and
 * eval_samples as the batch size.
 */
export function resolveHyperparameters(h: Hyperparameters, examples: number): Hyperparameters {
  const nEpochs =
    h.n_epochs !== "auto"
      ? h.n_epochs
      : examples * 3 < 100
        ? Math.min(25, Math.floor(100 / examples))
        : examples * 3 > 25_000
          ? Math.max(1, Math.floor(25_000 / examples))
          : 3;
  const batch = h.batch_size !== "auto" ? h.batch_size : Math.max(1, Math.min(256, Math.round(examples * 0.002)));
  const out: Hyperparameters = { ...h, n_epochs: nEpochs, batch_size: batch, learning_rate_multiplier: h.learning_rate_multiplier !== "auto" ? h.learning_rate_multiplier : batch <= 8 ? 2 : 1 };
  if (h.beta !== undefined) out.beta = h.beta === "auto" ? 0.1 : h.beta;
  if (h.compute_multiplier !== undefined) out.compute_multiplier = h.compute_multiplier === "auto" ? 1 : h.compute_multiplier;
  if (h.eval_interval !== undefined) out.eval_interval = h.eval_interval === "auto" ? 1 : h.eval_interval;
  if (h.eval_samples !== undefined) out.eval_samples = h.eval_samples === "auto" ? batch : h.eval_samples;
  return out;
}

export class FineTuningJobs {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly runner: JobRunner,
    private readonly checkGrader: (json: unknown, param: string) => Grader,
  ) {}

  get jobs() {
    return this.deps.records.collection<FineTuningJobRecord>(JOB_KIND);
  }
  get events() {
    return this.deps.records.collection<EventRecord>(EVENT_KIND);
  }
  get checkpoints() {
    return this.deps.records.collection<CheckpointRecord>(CHECKPOINT_KIND);
  }

  async get(scope: Scope, id: string): Promise<StoredRecord<FineTuningJobRecord>> {
    const r = await this.jobs.get(scope, id);
    if (!r) throw notFound("fine-tuning job", id, "fine_tuning_job_id");
    return r;
  }

  private async trainingFile(scope: Scope, id: string | undefined, param: string): Promise<FileView> {
    if (!id) throw missingParam(param);
    const f = await filesApi(this.deps).get(scope, id, param);
    if (f.purpose !== "fine-tune")
      throw invalidParam(param, `Invalid '${param}': file ${id} has purpose '${f.purpose}'; fine-tuning files must be uploaded with purpose 'fine-tune'.`, "invalid_file_purpose");
    if (!f.filename.toLowerCase().endsWith(".jsonl")) throw invalidParam(param, `Invalid '${param}': file ${id} is not JSONL.`, "invalid_file_format");
    return f;
  }

  async create(scope: Scope, organizationId: string, input: CreateJobInput): Promise<FineTuningJobRecord> {
    if (!input.model) throw missingParam("model");
    capChars(input.model, "model", MAX_ID_CHARS);
    capChars(input.trainingFile, "training_file", MAX_ID_CHARS);
    capChars(input.validationFile, "validation_file", MAX_ID_CHARS);
    capItems(input.integrations, "integrations", MAX_INTEGRATIONS);
    const methodType = (input.method?.type ?? "supervised") as Method;
    if (!["supervised", "dpo", "reinforcement"].includes(methodType))
      throw invalidParam("method.type", `Invalid value for 'method.type': '${input.method?.type}'. Supported values are: 'supervised', 'dpo', 'reinforcement'.`);
    const base = baseOf(input.model);
    if (input.model.startsWith("ft:")) {
      if (!(await fineTunedModels(this.deps).has(scope, input.model))) throw modelNotFound(input.model);
    }
    const methods = FINE_TUNABLE[base];
    if (!methods) {
      if (!builtinModel(base) && !input.model.startsWith("ft:"))
        throw modelNotFound(input.model);
      throw invalidParam("model", `Model '${input.model}' is not available for fine-tuning. Fine-tunable models: ${Object.keys(FINE_TUNABLE).join(", ")}.`, "model_not_available");
    }
    if (!methods.includes(methodType))
      throw invalidParam("method.type", `Model '${input.model}' cannot be fine-tuned with method '${methodType}'; it supports: ${methods.join(", ")}.`, "unsupported_method");
    if (input.suffix !== undefined && input.suffix.length > MAX_SUFFIX_CHARS)
      throw invalidParam("suffix", `Invalid 'suffix': at most ${MAX_SUFFIX_CHARS} characters, got ${input.suffix.length}.`, "string_above_max_length");
    if (input.suffix !== undefined && /[:\s]/.test(input.suffix)) throw invalidParam("suffix", "Invalid 'suffix': it may not contain ':' or whitespace.");
    const training = await this.trainingFile(scope, input.trainingFile, "training_file");
    const validation = input.validationFile ? await this.trainingFile(scope, input.validationFile, "validation_file") : null;
    if (validation && validation.id === training.id)
      throw invalidParam("validation_file", "Invalid 'validation_file': it must not be the training file; validation data must not overlap the training data.", "invalid_validation_file");
    if (input.hyperparameters && input.method?.hyperparameters)
      throw invalidParam("hyperparameters", "Give hyperparameters in 'method' only; the top-level 'hyperparameters' is deprecated.");
    if (input.hyperparameters && methodType !== "supervised") throw invalidParam("hyperparameters", "The top-level 'hyperparameters' applies to supervised jobs only.");
    const hyper = checkHyper(input.method?.hyperparameters ?? input.hyperparameters, methodType, input.hyperparameters ? "hyperparameters" : `method.${methodType}.hyperparameters`);
    let grader: Grader | null = null;
    if (methodType === "reinforcement") {
      if (input.method?.grader === undefined) throw missingParam("method.reinforcement.grader");
      grader = this.checkGrader(input.method.grader, "method.reinforcement.grader");
    }
    if (input.seed !== undefined && (!Number.isInteger(input.seed) || input.seed < 0 || input.seed > 2 ** 31 - 1))
      throw invalidParam("seed", `Invalid 'seed': expected an integer from 0 to ${2 ** 31 - 1}.`);
    const integrations = input.integrations.map((it, i) => checkIntegration(it, `integrations[${i}]`));

    const now = this.deps.clock.now();
    const rec: FineTuningJobRecord = {
      id: newId("ftjob-"),
      createdAt: now,
      organizationId,
      model: input.model,
      trainingFile: training.id,
      validationFile: validation?.id ?? null,
      suffix: input.suffix ?? null,
      seed: input.seed ?? randomInt(0, 2 ** 31 - 1),
      method: methodType,
      hyperparameters: hyper,
      grader,
      status: "validating_files",
      error: null,
      fineTunedModel: null,
      finishedAt: null,
      trainedTokens: null,
      resultFiles: [],
      estimatedFinish: null,
      integrations,
      metadata: checkMetadata(input.metadata as Record<string, unknown> | null | undefined),
      progress: null,
      run: 1,
    };
    // The run is enqueued first: a crash before the record is written leaves a run that finds no
    // job and ends, never a job that no run will pick up (the trainer waits briefly for the record).
    await this.runner.enqueue(scope, FINE_TUNING_TRAIN_JOB, { jobId: rec.id, run: rec.run }, { id: runJobId(rec) });
    await this.deps.records.atomically([
      { op: "insert", kind: JOB_KIND, scope, record: { id: rec.id, createdAt: now, tag: rec.status, data: rec } },
      eventOp(scope, rec.id, now, `Created fine-tuning job: ${rec.id}`),
    ]);
    return rec;
  }

  /** Newest first; `metadata` keeps jobs having every given pair. */
  async list(scope: Scope, q: { after?: string; limit: number; metadata?: Record<string, string> }) {
    const out: StoredRecord<FineTuningJobRecord>[] = [];
    let started = !q.after;
    let found = !q.after;
    for (let after: string | undefined; ; ) {
      const page = await this.jobs.list(scope, { after, limit: 200, order: "desc" });
      for (const r of page.records) {
        if (!started) {
          if (r.id === q.after) started = found = true;
          continue;
        }
        if (q.metadata && !Object.entries(q.metadata).every(([k, v]) => r.data.metadata?.[k] === v)) continue;
        out.push(r);
        if (out.length > q.limit) return { records: out.slice(0, q.limit), hasMore: true, found };
      }
      if (!page.hasMore || !page.records.length) return { records: out, hasMore: false, found };
      after = page.records[page.records.length - 1]!.id;
    }
  }

  /** Applies `change` to the job with compare-and-set (retried on a concurrent change). */
  private transition(scope: Scope, id: string, change: (cur: FineTuningJobRecord, now: number) => { next: FineTuningJobRecord; ops?: WriteOp[] }): Promise<FineTuningJobRecord> {
    return this.jobs.mutate(scope, id, (cur) => {
      if (!cur) throw notFound("fine-tuning job", id, "fine_tuning_job_id");
      const { next, ops = [] } = change(cur.data, this.deps.clock.now());
      return { write: "update", data: next, tag: next.status, also: ops, result: next };
    });
  }

  async cancel(scope: Scope, id: string): Promise<FineTuningJobRecord> {
    const next = await this.transition(scope, id, (cur, now) => {
      if (!CANCELLABLE.includes(cur.status)) throw invalidState(cur, "cancelled");
      return { next: { ...cur, status: "cancelled", finishedAt: now, estimatedFinish: null }, ops: [eventOp(scope, id, now, "Fine-tuning job cancelled")] };
    });
    // Stops the run at once; its later writes are refused (and would fail the version check).
    await this.runner.cancel(runJobId(next));
    return next;
  }

  async pause(scope: Scope, id: string): Promise<FineTuningJobRecord> {
    const next = await this.transition(scope, id, (cur, now) => {
      if (cur.status !== "running") throw invalidState(cur, "paused");
      return { next: { ...cur, status: "paused", estimatedFinish: null }, ops: [eventOp(scope, id, now, `Fine-tuning job paused at step ${cur.progress?.step ?? 0}`)] };
    });
    await this.runner.cancel(runJobId(next));
    return next;
  }

  async resume(scope: Scope, id: string): Promise<FineTuningJobRecord> {
    const before = await this.get(scope, id);
    if (before.data.status !== "paused") throw invalidState(before.data, "resumed");
    // As in create: the run first, then the record that lets it go on.
    const run = before.data.run + 1;
    const queued = runJobId({ id, run });
    await this.runner.enqueue(scope, FINE_TUNING_TRAIN_JOB, { jobId: id, run }, { id: queued });
    try {
      return await this.transition(scope, id, (cur, now) => {
        if (cur.status !== "paused" || cur.run !== run - 1) throw invalidState(cur, "resumed");
        return { next: { ...cur, status: "running", run }, ops: [eventOp(scope, id, now, `Fine-tuning job resumed from step ${cur.progress?.step ?? 0}`)] };
      });
    } catch (e) {
      // Unless a concurrent resume made this same run the live one.
      if ((await this.jobs.get(scope, id))?.data.run !== run) await this.runner.cancel(queued);
      throw e;
    }
  }
}

/**
 * One integration, in the official SDK's form (`{type: "wandb", wandb: {project, ...}}`) or the
 * spec's (`{type: "tracker", tracker: {...}}`); the settings may come under either property.
 */
function checkIntegration(it: IntegrationInput, at: string): Integration {
  if (it.type === undefined) throw missingParam(`${at}.type`);
  if (it.type !== "wandb" && it.type !== "tracker")
    throw invalidParam(`${at}.type`, `Invalid value for '${at}.type': expected 'wandb' or 'tracker', but got '${it.type}'.`);
  const field = it.settingsField ?? it.type;
  if (!it.settings) throw missingParam(`${at}.${it.type}`);
  if (!it.settings.project) throw missingParam(`${at}.${field}.project`);
  const { project, entity, name, tags } = it.settings;
  const settings = `${at}.${field}`;
  capChars(project, `${settings}.project`, MAX_INTEGRATION_NAME_CHARS);
  capChars(entity, `${settings}.entity`, MAX_INTEGRATION_NAME_CHARS);
  capChars(name, `${settings}.name`, MAX_INTEGRATION_NAME_CHARS);
  capItems(tags, `${settings}.tags`, MAX_INTEGRATION_TAGS);
  tags.forEach((t, i) => capChars(t, `${settings}.tags[${i}]`, MAX_INTEGRATION_TAG_CHARS));
  return { type: it.type, settingsField: field, tracker: { project, entity: entity ?? null, name: name ?? null, tags } };
}

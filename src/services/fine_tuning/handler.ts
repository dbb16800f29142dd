// FineTuningService and CheckpointPermissionsService: RPC messages ↔ the domain (fine-tuning.ts,
// permissions.ts). The REST JSON shapes are the spec's (2.11, 4.10).
import type { ServiceImpl } from "@connectrpc/connect";
import {
  CheckpointPermissionsService,
  FineTuningService,
  type FineTuningDpoHyperparameters,
  type FineTuningReinforcementHyperparameters,
} from "../../../gen/atrium/v1/fine_tuning_pb.js";
import { principalOf, scopeOf } from "../../auth/principal.js";
import { ApiError, invalidParam } from "../../common/errors.js";
import { envelope, listQuery, runList } from "../../common/list.js";
import { checkMetadata } from "../../common/metadata.js";
import type { StoredRecord } from "../../storage/types.js";
import { jsonOf, valueOf } from "./json.js";
import { FINE_TUNABLE, type FineTuningJobs } from "./fine-tuning.js";
import type { CheckpointPermissions } from "./permissions.js";
import type { CheckpointRecord, EventRecord, FineTuningJobRecord, Hyperparameters, PermissionRecord } from "./records.js";
import { MAX_EXAMPLE_TOKENS, MAX_EXAMPLES, MIN_EXAMPLES } from "./training-data.js";
import { MAX_FILE_BYTES } from "../files/index.js";

const hyperMessage = (h: Hyperparameters) => ({
  batchSize: valueOf(h.batch_size),
  learningRateMultiplier: valueOf(h.learning_rate_multiplier),
  nEpochs: valueOf(h.n_epochs),
});

const dpoHyperMessage = (h: Hyperparameters) => ({ ...hyperMessage(h), beta: valueOf(h.beta) });

const reinforcementHyperMessage = (h: Hyperparameters) => ({
  ...hyperMessage(h),
  computeMultiplier: valueOf(h.compute_multiplier),
  evalInterval: valueOf(h.eval_interval),
  evalSamples: valueOf(h.eval_samples),
  reasoningEffort: h.reasoning_effort,
});

/** Any method's hyperparameters message (the union's fields, each optional). */
type AnyHyperparameters = Partial<Omit<FineTuningReinforcementHyperparameters, "$typeName" | "$unknown">> & Partial<Pick<FineTuningDpoHyperparameters, "beta">>;

function hyperInput(h: AnyHyperparameters | undefined): Partial<Hyperparameters> | undefined {
  if (!h) return undefined;
  const out: Record<string, unknown> = {
    batch_size: jsonOf(h.batchSize),
    learning_rate_multiplier: jsonOf(h.learningRateMultiplier),
    n_epochs: jsonOf(h.nEpochs),
    beta: jsonOf(h.beta),
    reasoning_effort: h.reasoningEffort,
    compute_multiplier: jsonOf(h.computeMultiplier),
    eval_interval: jsonOf(h.evalInterval),
    eval_samples: jsonOf(h.evalSamples),
  };
  for (const k of Object.keys(out)) if (out[k] === undefined || out[k] === null) delete out[k];
  return out as Partial<Hyperparameters>;
}

export function jobMessage(j: FineTuningJobRecord) {
  const hyper = hyperMessage(j.hyperparameters);
  return {
    id: j.id,
    object: "fine_tuning.job",
    createdAt: BigInt(j.createdAt),
    error: j.error ? { code: j.error.code, message: j.error.message, param: j.error.param ?? undefined } : undefined,
    fineTunedModel: j.fineTunedModel ?? undefined,
    finishedAt: j.finishedAt === null ? undefined : BigInt(j.finishedAt),
    hyperparameters: hyper,
    model: j.model,
    organizationId: j.organizationId,
    resultFiles: j.resultFiles,
    seed: BigInt(j.seed),
    status: j.status,
    trainedTokens: j.trainedTokens === null ? undefined : BigInt(j.trainedTokens),
    trainingFile: j.trainingFile,
    validationFile: j.validationFile ?? undefined,
    estimatedFinish: j.estimatedFinish === null ? undefined : BigInt(j.estimatedFinish),
    integrations: j.integrations.map((i) => ({
      type: i.type,
      settings: { case: i.settingsField ?? "tracker", value: { project: i.tracker.project, entity: i.tracker.entity ?? undefined, name: i.tracker.name ?? undefined, tags: i.tracker.tags } },
    })),
    metadata: j.metadata ? valueOf(j.metadata) : undefined,
    method: {
      type: j.method,
      supervised: j.method === "supervised" ? { hyperparameters: hyper } : undefined,
      dpo: j.method === "dpo" ? { hyperparameters: dpoHyperMessage(j.hyperparameters) } : undefined,
      reinforcement: j.method === "reinforcement" ? { grader: valueOf(j.grader), hyperparameters: reinforcementHyperMessage(j.hyperparameters) } : undefined,
    },
  };
}

const eventMessage = (e: EventRecord) => ({
  id: e.id,
  object: "fine_tuning.job.event",
  createdAt: BigInt(e.createdAt),
  level: e.level,
  message: e.message,
  type: e.type,
  data: e.data ? valueOf(e.data) : undefined,
});

const checkpointMessage = (c: CheckpointRecord) => ({
  id: c.id,
  object: "fine_tuning.job.checkpoint",
  createdAt: BigInt(c.createdAt),
  fineTunedModelCheckpoint: c.fineTunedModelCheckpoint,
  stepNumber: BigInt(c.stepNumber),
  fineTuningJobId: c.jobId,
  metrics: { step: c.metrics.step, trainLoss: c.metrics.train_loss, trainMeanTokenAccuracy: c.metrics.train_mean_token_accuracy, validLoss: c.metrics.valid_loss, validMeanTokenAccuracy: c.metrics.valid_mean_token_accuracy, fullValidLoss: c.metrics.full_valid_loss, fullValidMeanTokenAccuracy: c.metrics.full_valid_mean_token_accuracy },
});

const permissionMessage = (p: PermissionRecord) => ({ id: p.id, object: "checkpoint.permission", createdAt: BigInt(p.createdAt), projectId: p.projectId });

/** `metadata[k]=v` of the job list: held to the rules of the metadata it matches. */
function metadataFilter(pairs: Record<string, string>): Record<string, string> | undefined {
  return Object.keys(pairs).length ? (checkMetadata(pairs) ?? undefined) : undefined;
}

/** Job limits of the organization (GET /fine_tuning/model_limits: the platform publishes no schema). */
export const MAX_CONCURRENT_JOBS = 6;
export const MAX_JOBS_PER_DAY = 48;

export function createFineTuningService(jobs: FineTuningJobs): ServiceImpl<typeof FineTuningService> {
  return {
    async createFineTuningJob(req, ctx) {
      const rec = await jobs.create(scopeOf(ctx), principalOf(ctx).organizationId, {
        model: req.model,
        trainingFile: req.trainingFile,
        validationFile: req.validationFile,
        suffix: req.suffix,
        seed: req.seed === undefined ? undefined : Number(req.seed),
        metadata: jsonOf(req.metadata),
        integrations: req.integrations.map((i) => ({
          type: i.type,
          settingsField: i.settings.case,
          settings: i.settings.value && { project: i.settings.value.project, entity: i.settings.value.entity, name: i.settings.value.name, tags: i.settings.value.tags },
        })),
        hyperparameters: hyperInput(req.hyperparameters),
        method: req.method && {
          type: req.method.type,
          hyperparameters: hyperInput(req.method.supervised?.hyperparameters ?? req.method.dpo?.hyperparameters ?? req.method.reinforcement?.hyperparameters),
          grader: jsonOf(req.method.reinforcement?.grader) as never,
        },
      });
      return jobMessage(rec);
    },

    async listFineTuningJobs(req, ctx) {
      const q = listQuery(req);
      const page = await jobs.list(scopeOf(ctx), { after: q.after, limit: q.limit, metadata: metadataFilter(req.metadata) });
      if (!page.found) throw new ApiError(400, `Invalid 'after': no object with id '${q.after}' in this list.`, { param: "after", code: "invalid_cursor" });
      return envelope(page, (r: StoredRecord<FineTuningJobRecord>) => jobMessage(r.data));
    },

    async getFineTuningJob(req, ctx) {
      return jobMessage((await jobs.get(scopeOf(ctx), req.fineTuningJobId)).data);
    },

    async listFineTuningEvents(req, ctx) {
      const scope = scopeOf(ctx);
      await jobs.get(scope, req.fineTuningJobId);
      const q = listQuery(req);
      const page = await runList(q, (q) => jobs.events.list(scope, { ...q, parentId: req.fineTuningJobId }));
      return envelope(page, (r: StoredRecord<EventRecord>) => eventMessage(r.data));
    },

    async listFineTuningCheckpoints(req, ctx) {
      const scope = scopeOf(ctx);
      await jobs.get(scope, req.fineTuningJobId);
      const q = listQuery(req, { defaultLimit: 10 });
      const page = await runList(q, (q) => jobs.checkpoints.list(scope, { ...q, parentId: req.fineTuningJobId }));
      return envelope(page, (r: StoredRecord<CheckpointRecord>) => checkpointMessage(r.data));
    },

    async cancelFineTuningJob(req, ctx) {
      return jobMessage(await jobs.cancel(scopeOf(ctx), req.fineTuningJobId));
    },

    async pauseFineTuningJob(req, ctx) {
      return jobMessage(await jobs.pause(scopeOf(ctx), req.fineTuningJobId));
    },

    async resumeFineTuningJob(req, ctx) {
      return jobMessage(await jobs.resume(scopeOf(ctx), req.fineTuningJobId));
    },

    async getFineTuningModelLimits(_req, ctx) {
      return {
        object: "fine_tuning.model_limits",
        organizationId: principalOf(ctx).organizationId,
        data: Object.entries(FINE_TUNABLE).map(([model, methods]) => ({
          model,
          methods: [...methods],
          maxConcurrentJobs: BigInt(MAX_CONCURRENT_JOBS),
          maxJobsPerDay: BigInt(MAX_JOBS_PER_DAY),
          maxTrainingFileBytes: BigInt(MAX_FILE_BYTES),
          maxExamples: BigInt(MAX_EXAMPLES),
          minExamples: BigInt(MIN_EXAMPLES),
          maxExampleTokens: BigInt(MAX_EXAMPLE_TOKENS),
        })),
      };
    },
  };
}

const ORDER: Record<string, "asc" | "desc"> = { ascending: "asc", descending: "desc", asc: "asc", desc: "desc" };

export function createCheckpointPermissionsService(permissions: CheckpointPermissions): ServiceImpl<typeof CheckpointPermissionsService> {
  return {
    async createCheckpointPermission(req, ctx) {
      const created = await permissions.create(principalOf(ctx).organizationId, req.fineTunedModelCheckpoint, req.projectIds);
      const data = created.map(permissionMessage);
      return { object: "list", data, firstId: data[0]?.id, lastId: data[data.length - 1]?.id, hasMore: false };
    },

    async listCheckpointPermissions(req, ctx) {
      const order = req.order === undefined ? "desc" : ORDER[req.order];
      if (!order) throw invalidParam("order", `Invalid 'order': expected 'ascending' or 'descending', got '${req.order}'.`);
      const q = listQuery({ after: req.after, limit: req.limit, order }, { defaultLimit: 10 });
      const org = principalOf(ctx).organizationId;
      const page = await runList(q, (q) => permissions.list(org, req.fineTunedModelCheckpoint, q, req.projectId || undefined));
      return envelope(page, (r: StoredRecord<PermissionRecord>) => permissionMessage(r.data));
    },

    async deleteCheckpointPermission(req, ctx) {
      await permissions.delete(principalOf(ctx).organizationId, req.fineTunedModelCheckpoint, req.permissionId);
      return { id: req.permissionId, object: "checkpoint.permission", deleted: true };
    },
  };
}

// The Fine-tuning area (spec 2.11–2.12, 4.10): graders (run, validate), fine-tuning jobs on the
// local trainer emulator, checkpoint permissions. Its ATRIUM_CONFIG section `fine_tuning` sets
// the emulator's pace and the python grader's sandbox limits.
import { CheckpointPermissionsService, FineTuningService, GradersService } from "../../../gen/atrium/v1/fine_tuning_pb.js";
import { PythonSandbox, type GraderEngineDeps } from "../../engines/graders/index.js";
import { LOCAL_EMBEDDING_MODEL } from "../../engines/embeddings/index.js";
import type { ApiArea } from "../area.js";
import { filesApi } from "../files/index.js";
import { fineTunedModels } from "../models/index.js";
import { FineTuningJobs } from "./fine-tuning.js";
import { createGradersService, parseGrader } from "./graders-handler.js";
import { createCheckpointPermissionsService, createFineTuningService } from "./handler.js";
import { CheckpointPermissions } from "./permissions.js";
import { FINE_TUNING_TRAIN_JOB, trainJob } from "./jobs.js";

export interface FineTuningSettings {
  step_interval_ms: number;
  python_grader: { timeout_ms: number; memory_mb: number; concurrency: number };
}

const schema = {
  type: "object",
  additionalProperties: false,
  properties: {
    // Wall-clock time of one emulated training step (tests make it a few ms).
    step_interval_ms: { type: "integer", minimum: 0, maximum: 3_600_000, default: 1000 },
    python_grader: {
      type: "object",
      additionalProperties: false,
      default: {},
      properties: {
        timeout_ms: { type: "integer", minimum: 100, maximum: 600_000, default: 30_000 },
        memory_mb: { type: "integer", minimum: 32, maximum: 16_384, default: 512 },
        concurrency: { type: "integer", minimum: 1, maximum: 64, default: 2 },
      },
    },
  },
};

export const fineTuningArea: ApiArea = {
  name: "fine_tuning",
  configSection: { name: "fine_tuning", schema },
  setup: ({ deps, config, providers, jobs }) => {
    const settings = { step_interval_ms: 1000, ...(config.sections?.fine_tuning as Partial<FineTuningSettings> | undefined) };
    const py = { timeout_ms: 30_000, memory_mb: 512, concurrency: 2, ...settings.python_grader };
    const graders: GraderEngineDeps = {
      responses: () => providers.responses(),
      // Cosine uses the configured embeddings provider: the local encoder, or the upstream's model.
      embeddings: () => {
        const cfg = providers.configOf("embeddings");
        return { provider: providers.embeddings(), model: cfg.kind === "local" ? LOCAL_EMBEDDING_MODEL : (cfg.model ?? "text-embedding-3-large") };
      },
      python: new PythonSandbox({ timeoutMs: py.timeout_ms, memoryBytes: py.memory_mb * 1024 * 1024, concurrency: py.concurrency }),
    };
    const fineTuningJobs = new FineTuningJobs(deps, jobs, (json, param) => parseGrader(json, param));
    return {
      services: [
        { desc: GradersService, impl: createGradersService(graders) },
        { desc: FineTuningService, impl: createFineTuningService(fineTuningJobs) },
        { desc: CheckpointPermissionsService, impl: createCheckpointPermissionsService(new CheckpointPermissions(deps)) },
      ],
      jobs: {
        [FINE_TUNING_TRAIN_JOB]: trainJob({
          records: deps.records,
          clock: deps.clock,
          files: filesApi(deps),
          models: fineTunedModels(deps),
          graders,
          stepIntervalMs: settings.step_interval_ms,
        }),
      },
    };
  },
};

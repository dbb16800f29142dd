// The fine-tuning area's record kinds and row types, private to src/services/fine_tuning/.
import type { Grader } from "../../engines/graders/index.js";
import type { Method } from "./training-data.js";

export const JOB_KIND = "ft_job";
export const EVENT_KIND = "ft_event";
export const CHECKPOINT_KIND = "ft_checkpoint";

export type JobStatus = "validating_files" | "queued" | "running" | "paused" | "succeeded" | "failed" | "cancelled";

/** "auto" or a number, as requested. */
export type HyperValue = "auto" | number;

export interface Hyperparameters {
  batch_size: HyperValue;
  learning_rate_multiplier: HyperValue;
  n_epochs: HyperValue;
  beta?: HyperValue;
  reasoning_effort?: string;
  compute_multiplier?: HyperValue;
  eval_interval?: HyperValue;
  eval_samples?: HyperValue;
}

export interface TrackerSettings {
  project: string;
  entity: string | null;
  name: string | null;
  tags: string[];
}

/** `settingsField` is the property the settings came in (and are echoed back in): `wandb` or `tracker`. */
export interface Integration {
  type: "wandb" | "tracker";
  settingsField?: "wandb" | "tracker";
  tracker: TrackerSettings;
}

export interface FineTuningJobRecord {
  id: string;
  createdAt: number;
  organizationId: string;
  model: string;
  trainingFile: string;
  validationFile: string | null;
  suffix: string | null;
  seed: number;
  method: Method;
  /** As requested ("auto" kept), replaced by the resolved values once the files are read. */
  hyperparameters: Hyperparameters;
  grader: Grader | null;
  status: JobStatus;
  error: { code: string; message: string; param: string | null } | null;
  fineTunedModel: string | null;
  finishedAt: number | null;
  trainedTokens: number | null;
  resultFiles: string[];
  estimatedFinish: number | null;
  integrations: Integration[];
  metadata: Record<string, string> | null;
  /** Training progress (the trainer's resume point), set once the files are validated. */
  progress: { step: number; totalSteps: number; stepsPerEpoch: number } | null;
  /** Bumped by every resume: the runner job of run n has id `${FINE_TUNING_TRAIN_JOB}:${id}:${n}` (jobs.ts). */
  run: number;
}

export interface EventRecord {
  id: string;
  createdAt: number;
  level: "info" | "warn" | "error";
  message: string;
  type: "message" | "metrics";
  data: Record<string, unknown> | null;
}

export interface CheckpointMetrics {
  step: number;
  train_loss: number;
  train_mean_token_accuracy: number;
  valid_loss?: number;
  valid_mean_token_accuracy?: number;
  full_valid_loss?: number;
  full_valid_mean_token_accuracy?: number;
}

export interface CheckpointRecord {
  id: string;
  createdAt: number;
  fineTunedModelCheckpoint: string;
  stepNumber: number;
  jobId: string;
  metrics: CheckpointMetrics;
}


// Checkpoint permissions (permissions.ts): an organization-wide index of checkpoints, the
// permissions, and one uniqueness marker per (checkpoint, project).
export const CHECKPOINT_REF_KIND = "ft_checkpoint_ref";
export const PERMISSION_KIND = "ft_checkpoint_permission";
export const GRANT_KIND = "ft_checkpoint_grant";

export interface CheckpointRef {
  checkpoint: string;
  projectId: string;
  jobId: string;
  createdAt: number;
}

export interface PermissionRecord {
  id: string;
  createdAt: number;
  projectId: string;
  checkpoint: string;
}

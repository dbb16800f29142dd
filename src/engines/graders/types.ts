// Grader definitions (spec 2.12) as the JSON callers send, and what running one yields (spec 4.10).
// No HTTP in here: the fine-tuning area maps these onto its RPCs.

export type StringCheckOperation = "eq" | "ne" | "like" | "ilike";
export const STRING_CHECK_OPERATIONS: readonly StringCheckOperation[] = ["eq", "ne", "like", "ilike"];

export const SIMILARITY_METRICS = [
  "cosine",
  "fuzzy_match",
  "bleu",
  "gleu",
  "meteor",
  "rouge_1",
  "rouge_2",
  "rouge_3",
  "rouge_4",
  "rouge_5",
  "rouge_l",
] as const;
export type SimilarityMetric = (typeof SIMILARITY_METRICS)[number];

export const MESSAGE_ROLES = ["user", "assistant", "system", "developer"] as const;
export const REASONING_EFFORTS = ["none", "minimal", "low", "medium", "high", "xhigh", "max"] as const;

/** A grader message's content: a string, one part, or an array of strings and parts. */
export type ContentPart =
  | { type: "input_text"; text: string; prompt_cache_breakpoint?: { mode: "explicit" } }
  | { type: "output_text"; text: string }
  | { type: "input_image"; image_url: string; detail?: "high" | "low" | "auto" }
  | { type: "input_audio"; input_audio: { data: string; format: "mp3" | "wav" } };

export interface GraderMessage {
  role: (typeof MESSAGE_ROLES)[number];
  type?: "message";
  content: string | ContentPart | Array<string | ContentPart>;
}

export interface SamplingParams {
  max_completions_tokens?: number | null;
  reasoning_effort?: (typeof REASONING_EFFORTS)[number] | null;
  seed?: number | null;
  temperature?: number | null;
  top_p?: number | null;
}

export interface StringCheckGrader {
  type: "string_check";
  name: string;
  input: string;
  reference: string;
  operation: StringCheckOperation;
}

export interface TextSimilarityGrader {
  type: "text_similarity";
  name: string;
  input: string;
  reference: string;
  evaluation_metric: SimilarityMetric;
  /** Accepted for evals compatibility; the reward is the raw score either way. */
  pass_threshold?: number;
}

export interface PythonGrader {
  type: "python";
  name: string;
  source: string;
  image_tag?: string;
}

export interface ScoreModelGrader {
  type: "score_model";
  name: string;
  model: string;
  input: GraderMessage[];
  range?: [number, number];
  sampling_params?: SamplingParams;
}

export interface LabelModelGrader {
  type: "label_model";
  name: string;
  model: string;
  input: GraderMessage[];
  labels: string[];
  passing_labels: string[];
}

/**
 * `graders` comes in the three forms the platform publishes, kept as given so a grader is echoed
 * back unchanged: an array (the spec; variables are the sub-graders' names), a map of variable name
 * → grader (the fine-tuning guide), or one grader (the official schema; its variable is its name).
 */
export interface MultiGrader {
  type: "multi";
  name: string;
  graders: SingleGrader[] | Record<string, SingleGrader> | SingleGrader;
  calculate_output: string;
}

/** The sub-graders of a multi grader with the variable name `calculate_output` reads each by. */
export function multiParts(g: MultiGrader): Array<{ variable: string; grader: SingleGrader }> {
  const gs = g.graders;
  if (Array.isArray(gs)) return gs.map((grader) => ({ variable: grader.name, grader }));
  if (typeof (gs as { type?: unknown }).type === "string") return [{ variable: (gs as SingleGrader).name, grader: gs as SingleGrader }];
  return Object.entries(gs as Record<string, SingleGrader>).map(([variable, grader]) => ({ variable, grader }));
}

export type SingleGrader = StringCheckGrader | TextSimilarityGrader | PythonGrader | ScoreModelGrader | LabelModelGrader;
export type Grader = SingleGrader | MultiGrader;
export type GraderType = Grader["type"];

/** The error flags of a run's metadata (spec 4.10): every one is always present. */
export interface GraderErrors {
  formula_parse_error: boolean;
  invalid_variable_error: boolean;
  model_grader_parse_error: boolean;
  model_grader_refusal_error: boolean;
  model_grader_server_error: boolean;
  model_grader_server_error_details: string | null;
  other_error: boolean;
  python_grader_runtime_error: boolean;
  python_grader_runtime_error_details: string | null;
  python_grader_server_error: boolean;
  python_grader_server_error_type: string | null;
  sample_parse_error: boolean;
  truncated_observation_error: boolean;
  unresponsive_reward_error: boolean;
}

export function noErrors(): GraderErrors {
  return {
    formula_parse_error: false,
    invalid_variable_error: false,
    model_grader_parse_error: false,
    model_grader_refusal_error: false,
    model_grader_server_error: false,
    model_grader_server_error_details: null,
    other_error: false,
    python_grader_runtime_error: false,
    python_grader_runtime_error_details: null,
    python_grader_server_error: false,
    python_grader_server_error_type: null,
    sample_parse_error: false,
    truncated_observation_error: false,
    unresponsive_reward_error: false,
  };
}

export interface TokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  cached_tokens: number;
}

/** POST /fine_tuning/alpha/graders/run's answer (spec 4.10). */
export interface GraderRunResult {
  reward: number;
  metadata: {
    name: string;
    type: GraderType;
    errors: GraderErrors;
    /** Seconds. */
    execution_time: number;
    scores: Record<string, number>;
    /** Total tokens the model graders used; null when no model was called. */
    token_usage: number | null;
    sampled_model_name: string | null;
  };
  sub_rewards: Record<string, number>;
  model_grader_token_usage_per_model: Record<string, TokenUsage>;
}

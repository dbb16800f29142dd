// GradersService (spec 4.10): POST /fine_tuning/alpha/graders/run and /validate. The grading is
// the graders engine's (src/engines/graders); this maps messages and turns a malformed grader
// into a 400 naming its field.
import type { ServiceImpl } from "@connectrpc/connect";
import { GradersService } from "../../../gen/atrium/v1/fine_tuning_pb.js";
import { capChars, capItems } from "../../common/caps.js";
import { invalidParam, missingParam } from "../../common/errors.js";
import { checkGrader, checkGraderStrict, GraderInvalid, runGrader, type Grader, type GraderEngineDeps, type GraderRunResult } from "../../engines/graders/index.js";
import { jsonOf, valueOf } from "./json.js";

/** A python grader's `source`: the platform's graders guide caps the code at 256 KB. */
export const MAX_GRADER_SOURCE_CHARS = 256 * 1024;
/** Every other string of a grader (names, templates, references, labels): this server's choice. */
export const MAX_GRADER_STRING_CHARS = 64 * 1024;
/** Sub-graders, input messages, labels: any array in a grader. */
export const MAX_GRADER_ITEMS = 256;
/** The sample a grader scores (this server's choice: a long completion with room to spare). */
export const MAX_MODEL_SAMPLE_CHARS = 1024 * 1024;

/** Caps every string and array of a grader's JSON, naming the field, before the engine reads it. */
function capGrader(json: unknown, param: string, key = ""): void {
  if (typeof json === "string") capChars(json, param, key === "source" ? MAX_GRADER_SOURCE_CHARS : MAX_GRADER_STRING_CHARS);
  else if (Array.isArray(json)) {
    capItems(json, param, MAX_GRADER_ITEMS);
    json.forEach((v, i) => capGrader(v, `${param}[${i}]`));
  } else if (json !== null && typeof json === "object") {
    const entries = Object.entries(json);
    capItems(entries, param, MAX_GRADER_ITEMS);
    for (const [k, v] of entries) capGrader(v, `${param}.${k}`, k);
  }
}

/** A grader given as JSON, checked; a 400 naming the field when it is malformed. */
export function parseGrader(json: unknown, param = "grader", strict = false): Grader {
  if (json === undefined || json === null) throw missingParam(param);
  capGrader(json, param);
  try {
    return strict ? checkGraderStrict(json, param) : checkGrader(json, param);
  } catch (e) {
    if (e instanceof GraderInvalid) throw invalidParam(e.param, e.message);
    throw e;
  }
}

export function runResultMessage(r: GraderRunResult) {
  const e = r.metadata.errors;
  return {
    metadata: {
      errors: {
        formulaParseError: e.formula_parse_error,
        invalidVariableError: e.invalid_variable_error,
        modelGraderParseError: e.model_grader_parse_error,
        modelGraderRefusalError: e.model_grader_refusal_error,
        modelGraderServerError: e.model_grader_server_error,
        modelGraderServerErrorDetails: e.model_grader_server_error_details ?? undefined,
        otherError: e.other_error,
        pythonGraderRuntimeError: e.python_grader_runtime_error,
        pythonGraderRuntimeErrorDetails: e.python_grader_runtime_error_details ?? undefined,
        pythonGraderServerError: e.python_grader_server_error,
        pythonGraderServerErrorType: e.python_grader_server_error_type ?? undefined,
        sampleParseError: e.sample_parse_error,
        truncatedObservationError: e.truncated_observation_error,
        unresponsiveRewardError: e.unresponsive_reward_error,
      },
      executionTime: r.metadata.execution_time,
      name: r.metadata.name,
      sampledModelName: r.metadata.sampled_model_name ?? undefined,
      scores: r.metadata.scores,
      tokenUsage: r.metadata.token_usage === null ? undefined : BigInt(r.metadata.token_usage),
      type: r.metadata.type,
    },
    modelGraderTokenUsagePerModel: valueOf(r.model_grader_token_usage_per_model),
    reward: r.reward,
    subRewards: r.sub_rewards,
  };
}

export function createGradersService(engine: GraderEngineDeps): ServiceImpl<typeof GradersService> {
  return {
    async runGrader(req, ctx) {
      const grader = parseGrader(jsonOf(req.grader));
      if (req.modelSample === undefined) throw missingParam("model_sample");
      capChars(req.modelSample, "model_sample", MAX_MODEL_SAMPLE_CHARS);
      const result = await runGrader(grader, req.modelSample, jsonOf(req.item) ?? {}, engine, ctx.signal);
      return runResultMessage(result);
    },

    async validateGrader(req) {
      return { grader: valueOf(parseGrader(jsonOf(req.grader), "grader", true)) };
    },
  };
}

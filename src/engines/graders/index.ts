// The graders engine (spec 2.12, 4.10), no HTTP in it: check a grader, run it on a model sample
// and an item. What goes wrong while grading (a bad variable, a sample that is not JSON, a
// python error, an unreachable model, a bad formula) is reported in the result's error flags
// with a reward of 0 — only a malformed grader is an exception (GraderInvalid, a 400).
import type { EmbeddingsProvider, ResponsesProvider } from "../../providers/types.js";
import { evaluateFormula, FormulaError, parseFormula } from "./formula.js";
import { runLabelModel, runScoreModel } from "./model.js";
import { PythonSandbox } from "./python.js";
import { lexicalSimilarity } from "./similarity.js";
import { stringCheck } from "./string-check.js";
import { render, sampleNamespace, TemplateError, type Namespaces } from "./template.js";
import { multiParts, noErrors, type Grader, type GraderErrors, type GraderRunResult, type SingleGrader, type TokenUsage } from "./types.js";

export { checkGrader, checkGraderStrict, GraderInvalid } from "./validate.js";
export { PythonSandbox, sandboxIsolation, type PythonSandboxOptions } from "./python.js";
export * from "./types.js";

export interface GraderEngineDeps {
  /** The model provider for score_model / label_model (throws ProviderUnavailable when none). */
  responses: () => ResponsesProvider;
  /** For text_similarity's cosine: the provider and the model it is asked for. */
  embeddings: () => { provider: EmbeddingsProvider; model: string };
  python: PythonSandbox;
}

interface Outcome {
  reward: number;
  errors: Partial<GraderErrors>;
  model: string | null;
  usage: TokenUsage | null;
}

const failed = (errors: Partial<GraderErrors>): Outcome => ({ reward: 0, errors, model: null, usage: null });

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return na && nb ? dot / Math.sqrt(na * nb) : 0;
}

async function runSingle(g: SingleGrader, ns: Namespaces, deps: GraderEngineDeps, signal?: AbortSignal): Promise<Outcome> {
  try {
    switch (g.type) {
      case "string_check":
        return { reward: stringCheck(g.operation, render(g.input, ns), render(g.reference, ns)), errors: {}, model: null, usage: null };
      case "text_similarity": {
        const input = render(g.input, ns);
        const reference = render(g.reference, ns);
        if (g.evaluation_metric !== "cosine") return { reward: lexicalSimilarity(g.evaluation_metric, input, reference), errors: {}, model: null, usage: null };
        try {
          const { provider, model } = deps.embeddings();
          const { vectors } = await provider.embed([input, reference], { model, signal });
          return { reward: cosine(vectors[0]!, vectors[1]!), errors: {}, model: null, usage: null };
        } catch (e) {
          return failed({ other_error: true, model_grader_server_error_details: `cosine: the embeddings provider failed: ${(e as Error).message}` });
        }
      }
      case "python": {
        const sample = { output_text: ns.sample.output_text, output_json: ns.sample.output_json_valid ? ns.sample.output_json : null, output_tools: [], choices: [] };
        const r = await deps.python.run(g.source, sample, ns.item ?? {}, signal);
        if (r.ok) return { reward: r.reward, errors: {}, model: null, usage: null };
        if (r.kind === "server") return failed({ python_grader_server_error: true, python_grader_server_error_type: "sandbox_error", python_grader_runtime_error_details: r.details });
        return failed({ python_grader_runtime_error: true, python_grader_runtime_error_details: r.details, truncated_observation_error: r.kind === "output_limit" });
      }
      case "score_model":
      case "label_model": {
        const r = g.type === "score_model" ? await runScoreModel(g, ns, deps.responses, signal) : await runLabelModel(g, ns, deps.responses, signal);
        if (r.ok) return { reward: r.reward, errors: {}, model: r.model, usage: r.usage };
        const errors: Partial<GraderErrors> =
          r.kind === "server"
            ? { model_grader_server_error: true, model_grader_server_error_details: r.details }
            : r.kind === "refusal"
              ? { model_grader_refusal_error: true }
              : { model_grader_parse_error: true };
        return { reward: 0, errors, model: r.model, usage: r.usage };
      }
    }
  } catch (e) {
    if (e instanceof TemplateError) return failed(e.kind === "sample_parse" ? { sample_parse_error: true } : { invalid_variable_error: true });
    throw e;
  }
}

function addUsage(into: Record<string, TokenUsage>, model: string | null, u: TokenUsage | null) {
  if (!model || !u) return;
  const cur = into[model] ?? { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cached_tokens: 0 };
  into[model] = {
    prompt_tokens: cur.prompt_tokens + u.prompt_tokens,
    completion_tokens: cur.completion_tokens + u.completion_tokens,
    total_tokens: cur.total_tokens + u.total_tokens,
    cached_tokens: cur.cached_tokens + u.cached_tokens,
  };
}

function mergeErrors(into: GraderErrors, from: Partial<GraderErrors>): void {
  for (const [k, v] of Object.entries(from) as Array<[keyof GraderErrors, never]>) {
    if (v === true) (into as any)[k] = true;
    else if (typeof v === "string" && into[k] === null) (into as any)[k] = v;
  }
}

/**
 * Runs a checked grader (checkGrader) on a model sample (the sample namespace: output_text, and
 * output_json when the text is JSON) and an item (the item namespace).
 */
export async function runGrader(grader: Grader, modelSample: string, item: unknown, deps: GraderEngineDeps, signal?: AbortSignal): Promise<GraderRunResult> {
  const started = performance.now();
  const ns: Namespaces = { sample: sampleNamespace(modelSample), item: item ?? {} };
  const errors = noErrors();
  const perModel: Record<string, TokenUsage> = {};
  let reward = 0;
  let sampled: string | null = null;
  const subRewards: Record<string, number> = {};

  if (grader.type === "multi") {
    const parts = multiParts(grader);
    const outcomes = await Promise.all(parts.map((p) => runSingle(p.grader, ns, deps, signal)));
    parts.forEach((p, i) => {
      const o = outcomes[i]!;
      subRewards[p.variable] = o.reward;
      mergeErrors(errors, o.errors);
      addUsage(perModel, o.model, o.usage);
      sampled ??= o.model;
    });
    try {
      reward = evaluateFormula(parseFormula(grader.calculate_output), subRewards);
      if (!Number.isFinite(reward)) {
        errors.other_error = true;
        reward = 0;
      }
    } catch (e) {
      if (!(e instanceof FormulaError)) throw e;
      errors.formula_parse_error = true;
      reward = 0;
    }
  } else {
    const o = await runSingle(grader, ns, deps, signal);
    mergeErrors(errors, o.errors);
    addUsage(perModel, o.model, o.usage);
    reward = o.reward;
    sampled = o.model;
  }
  const usages = Object.values(perModel);
  return {
    reward,
    metadata: {
      name: grader.name,
      type: grader.type,
      errors,
      execution_time: (performance.now() - started) / 1000,
      scores: grader.type === "multi" ? { ...subRewards } : {},
      token_usage: usages.length ? usages.reduce((n, u) => n + u.total_tokens, 0) : null,
      sampled_model_name: sampled,
    },
    sub_rewards: subRewards,
    model_grader_token_usage_per_model: perModel,
  };
}

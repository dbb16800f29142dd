// score_model and label_model: the grader's messages (templates rendered) go to the responses
// provider with a JSON-schema output format; the answer is parsed into a reward. The provider is
// whatever ATRIUM_CONFIG's providers.responses names; without one the run reports
// model_grader_server_error with the reason (never a local model posing as a real one).
import type { JsonObject, ResponsesProvider } from "../../providers/types.js";
import { render, type Namespaces } from "./template.js";
import type { ContentPart, GraderMessage, LabelModelGrader, ScoreModelGrader, TokenUsage } from "./types.js";

export type ModelOutcome =
  | { ok: true; reward: number; model: string; usage: TokenUsage | null }
  | { ok: false; kind: "server" | "refusal" | "parse"; details: string; model: string | null; usage: TokenUsage | null };

function renderPart(p: string | ContentPart, ns: Namespaces): JsonObject {
  if (typeof p === "string") return { type: "input_text", text: render(p, ns) };
  switch (p.type) {
    case "input_text":
      return { type: "input_text", text: render(p.text, ns) };
    case "output_text":
      return { type: "output_text", text: render(p.text, ns) };
    case "input_image":
      return { type: "input_image", image_url: render(p.image_url, ns), detail: p.detail ?? "auto" };
    case "input_audio":
      return { type: "input_audio", input_audio: p.input_audio };
  }
}

/** The messages as /v1/responses input items; throws TemplateError for a bad variable. */
export function renderMessages(input: GraderMessage[], ns: Namespaces): JsonObject[] {
  return input.map((m) => ({
    type: "message",
    role: m.role,
    content: typeof m.content === "string" ? render(m.content, ns) : (Array.isArray(m.content) ? m.content : [m.content]).map((p) => renderPart(p, ns)),
  }));
}

function usageOf(res: JsonObject): TokenUsage | null {
  const u = res.usage as Record<string, any> | undefined;
  if (!u) return null;
  const prompt = Number(u.input_tokens ?? u.prompt_tokens ?? 0);
  const completion = Number(u.output_tokens ?? u.completion_tokens ?? 0);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: Number(u.total_tokens ?? prompt + completion),
    cached_tokens: Number(u.input_tokens_details?.cached_tokens ?? u.prompt_tokens_details?.cached_tokens ?? 0),
  };
}

/** The text and any refusal of a Response object's message outputs. */
function outputOf(res: JsonObject): { text: string; refusal: string | null } {
  let text = "";
  let refusal: string | null = null;
  for (const item of (res.output as any[]) ?? []) {
    if (item?.type !== "message") continue;
    for (const c of item.content ?? []) {
      if (c?.type === "output_text" && typeof c.text === "string") text += c.text;
      if (c?.type === "refusal") refusal = String(c.refusal ?? "refused");
    }
  }
  if (!text && typeof res.output_text === "string") text = res.output_text;
  return { text, refusal };
}

async function call(provider: () => ResponsesProvider, body: JsonObject, signal?: AbortSignal) {
  const res = await provider().createResponse(body, { signal });
  return { res, model: typeof res.model === "string" ? res.model : String(body.model), usage: usageOf(res) };
}

export async function runScoreModel(g: ScoreModelGrader, ns: Namespaces, provider: () => ResponsesProvider, signal?: AbortSignal): Promise<ModelOutcome> {
  const [lo, hi] = g.range ?? [0, 1];
  const sp = g.sampling_params ?? {};
  const body: JsonObject = {
    model: g.model,
    instructions: `Grade the conversation below. Answer with a JSON object {"result": <number from ${lo} to ${hi}>, "steps": [<short reasoning steps>]}.`,
    input: renderMessages(g.input, ns),
    text: {
      format: {
        type: "json_schema",
        name: "score",
        strict: true,
        schema: {
          type: "object",
          properties: { steps: { type: "array", items: { type: "string" } }, result: { type: "number" } },
          required: ["steps", "result"],
          additionalProperties: false,
        },
      },
    },
  };
  if (sp.temperature != null) body.temperature = sp.temperature;
  if (sp.top_p != null) body.top_p = sp.top_p;
  if (sp.max_completions_tokens != null) body.max_output_tokens = sp.max_completions_tokens;
  if (sp.reasoning_effort != null) body.reasoning = { effort: sp.reasoning_effort };
  return parseAnswer(await callSafely(provider, body, signal), (json) => {
    const r = (json as { result?: unknown })?.result;
    if (typeof r !== "number" || !Number.isFinite(r)) return "the answer has no numeric 'result'";
    if (r < lo || r > hi) return `the score ${r} is outside the range [${lo}, ${hi}]`;
    return r;
  });
}

export async function runLabelModel(g: LabelModelGrader, ns: Namespaces, provider: () => ResponsesProvider, signal?: AbortSignal): Promise<ModelOutcome> {
  const body: JsonObject = {
    model: g.model,
    instructions: `Label the conversation below with exactly one of: ${g.labels.map((l) => JSON.stringify(l)).join(", ")}. Answer with a JSON object {"result": <label>}.`,
    input: renderMessages(g.input, ns),
    text: {
      format: {
        type: "json_schema",
        name: "label",
        strict: true,
        schema: { type: "object", properties: { result: { type: "string", enum: g.labels } }, required: ["result"], additionalProperties: false },
      },
    },
  };
  return parseAnswer(await callSafely(provider, body, signal), (json) => {
    const r = (json as { result?: unknown })?.result;
    if (typeof r !== "string" || !g.labels.includes(r)) return `the answer is not one of the labels`;
    return g.passing_labels.includes(r) ? 1 : 0;
  });
}

type Called = { ok: true; res: JsonObject; model: string; usage: TokenUsage | null } | { ok: false; details: string; model: string };

async function callSafely(provider: () => ResponsesProvider, body: JsonObject, signal?: AbortSignal): Promise<Called> {
  try {
    return { ok: true, ...(await call(provider, body, signal)) };
  } catch (e) {
    return { ok: false, details: (e as Error).message, model: String(body.model) };
  }
}

function parseAnswer(called: Called, score: (json: unknown) => number | string): ModelOutcome {
  if (!called.ok) return { ok: false, kind: "server", details: called.details, model: null, usage: null };
  const { text, refusal } = outputOf(called.res);
  if (refusal !== null) return { ok: false, kind: "refusal", details: refusal, model: called.model, usage: called.usage };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, kind: "parse", details: "the model's answer is not JSON", model: called.model, usage: called.usage };
  }
  const r = score(json);
  if (typeof r === "string") return { ok: false, kind: "parse", details: r, model: called.model, usage: called.usage };
  return { ok: true, reward: r, model: called.model, usage: called.usage };
}

// Checks a grader as JSON (spec 2.12) and returns it typed. Every problem is a GraderInvalid
// naming the field's path (`grader.graders[1].operation`), which the service answers as a 400.
import { FormulaError, formulaVariables, parseFormula } from "./formula.js";
import {
  MESSAGE_ROLES,
  REASONING_EFFORTS,
  SIMILARITY_METRICS,
  STRING_CHECK_OPERATIONS,
  type Grader,
  type GraderMessage,
  multiParts,
  type MultiGrader,
  type SingleGrader,
} from "./types.js";

export class GraderInvalid extends Error {
  constructor(
    readonly param: string,
    message: string,
  ) {
    super(message);
  }
}

type Json = Record<string, unknown>;

const FIELDS: Record<string, { required: string[]; optional: string[] }> = {
  string_check: { required: ["type", "name", "input", "reference", "operation"], optional: [] },
  text_similarity: { required: ["type", "name", "input", "reference", "evaluation_metric"], optional: ["pass_threshold"] },
  python: { required: ["type", "name", "source"], optional: ["image_tag"] },
  score_model: { required: ["type", "name", "model", "input"], optional: ["range", "sampling_params"] },
  label_model: { required: ["type", "name", "model", "input", "labels", "passing_labels"], optional: [] },
  multi: { required: ["type", "name", "graders", "calculate_output"], optional: [] },
};

const describe = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "an array" : typeof v === "object" ? "an object" : `a ${typeof v}`);

function isObject(v: unknown): v is Json {
  return v !== null && typeof v === "object" && !Array.isArray(v);
}

function str(g: Json, key: string, at: string, opts: { nonEmpty?: boolean } = {}): string {
  const v = g[key];
  if (typeof v !== "string") throw new GraderInvalid(`${at}.${key}`, `Invalid type for '${at}.${key}': expected a string, but got ${describe(v)} instead.`);
  if (opts.nonEmpty && !v.trim()) throw new GraderInvalid(`${at}.${key}`, `Invalid '${at}.${key}': it cannot be empty.`);
  return v;
}

function oneOf<T extends string>(g: Json, key: string, at: string, values: readonly T[]): T {
  const v = str(g, key, at);
  if (!(values as readonly string[]).includes(v))
    throw new GraderInvalid(`${at}.${key}`, `Invalid value for '${at}.${key}': '${v}'. Supported values are: ${values.map((x) => `'${x}'`).join(", ")}.`);
  return v as T;
}

function finite(v: unknown, at: string): number {
  if (typeof v !== "number" || !Number.isFinite(v)) throw new GraderInvalid(at, `Invalid type for '${at}': expected a number, but got ${describe(v)} instead.`);
  return v;
}

function stringArray(g: Json, key: string, at: string): string[] {
  const v = g[key];
  if (!Array.isArray(v)) throw new GraderInvalid(`${at}.${key}`, `Invalid type for '${at}.${key}': expected an array of strings, but got ${describe(v)} instead.`);
  v.forEach((x, i) => {
    if (typeof x !== "string") throw new GraderInvalid(`${at}.${key}[${i}]`, `Invalid type for '${at}.${key}[${i}]': expected a string, but got ${describe(x)} instead.`);
  });
  return v as string[];
}

const PART_FIELDS: Record<string, string[]> = {
  input_text: ["type", "text", "prompt_cache_breakpoint"],
  output_text: ["type", "text"],
  input_image: ["type", "image_url", "detail"],
  input_audio: ["type", "input_audio"],
};

function checkPart(p: unknown, at: string): void {
  if (typeof p === "string") return;
  if (!isObject(p)) throw new GraderInvalid(at, `Invalid type for '${at}': expected a string or a content part, but got ${describe(p)} instead.`);
  const type = oneOf(p, "type", at, Object.keys(PART_FIELDS));
  for (const k of Object.keys(p)) if (!PART_FIELDS[type]!.includes(k)) throw new GraderInvalid(`${at}.${k}`, `Unrecognized field '${at}.${k}' for a ${type} part.`);
  if (type === "input_text" || type === "output_text") str(p, "text", at);
  if (type === "input_text" && p.prompt_cache_breakpoint !== undefined) {
    const b = p.prompt_cache_breakpoint;
    if (!isObject(b) || b.mode !== "explicit") throw new GraderInvalid(`${at}.prompt_cache_breakpoint`, `Invalid '${at}.prompt_cache_breakpoint': expected {"mode": "explicit"}.`);
  }
  if (type === "input_image") {
    str(p, "image_url", at, { nonEmpty: true });
    if (p.detail !== undefined) oneOf(p, "detail", at, ["high", "low", "auto"]);
  }
  if (type === "input_audio") {
    const a = p.input_audio;
    if (!isObject(a)) throw new GraderInvalid(`${at}.input_audio`, `Invalid type for '${at}.input_audio': expected an object, but got ${describe(a)} instead.`);
    str(a, "data", `${at}.input_audio`, { nonEmpty: true });
    oneOf(a, "format", `${at}.input_audio`, ["mp3", "wav"]);
  }
}

function checkMessages(g: Json, at: string): GraderMessage[] {
  const v = g.input;
  if (!Array.isArray(v) || v.length === 0) throw new GraderInvalid(`${at}.input`, `Invalid '${at}.input': expected a non-empty array of messages, but got ${describe(v)} instead.`);
  v.forEach((m, i) => {
    const mat = `${at}.input[${i}]`;
    if (!isObject(m)) throw new GraderInvalid(mat, `Invalid type for '${mat}': expected a message object, but got ${describe(m)} instead.`);
    for (const k of Object.keys(m)) if (!["role", "type", "content"].includes(k)) throw new GraderInvalid(`${mat}.${k}`, `Unrecognized field '${mat}.${k}' in a grader message.`);
    oneOf(m, "role", mat, MESSAGE_ROLES);
    if (m.type !== undefined) oneOf(m, "type", mat, ["message"]);
    if (m.content === undefined) throw new GraderInvalid(`${mat}.content`, `Missing required parameter: '${mat}.content'.`);
    if (Array.isArray(m.content)) m.content.forEach((p, j) => checkPart(p, `${mat}.content[${j}]`));
    else checkPart(m.content, `${mat}.content`);
  });
  return v as GraderMessage[];
}

function checkSamplingParams(v: unknown, at: string): void {
  if (v === undefined || v === null) return;
  if (!isObject(v)) throw new GraderInvalid(at, `Invalid type for '${at}': expected an object, but got ${describe(v)} instead.`);
  for (const [k, x] of Object.entries(v)) {
    const kat = `${at}.${k}`;
    if (x === null) continue;
    if (k === "reasoning_effort") oneOf(v, k, at, REASONING_EFFORTS);
    else if (k === "max_completions_tokens" || k === "seed") {
      if (!Number.isInteger(x) || (x as number) < (k === "seed" ? Number.MIN_SAFE_INTEGER : 1)) throw new GraderInvalid(kat, `Invalid '${kat}': expected ${k === "seed" ? "an integer" : "a positive integer"}.`);
    } else if (k === "temperature") {
      if (finite(x, kat) < 0 || (x as number) > 2) throw new GraderInvalid(kat, `Invalid '${kat}': expected a number from 0 to 2.`);
    } else if (k === "top_p") {
      if (finite(x, kat) <= 0 || (x as number) > 1) throw new GraderInvalid(kat, `Invalid '${kat}': expected a number greater than 0 and at most 1.`);
    } else throw new GraderInvalid(kat, `Unrecognized field '${kat}' in sampling_params.`);
  }
}

function checkSingle(g: Json, at: string, type: string): SingleGrader {
  switch (type) {
    case "string_check":
      str(g, "input", at);
      str(g, "reference", at);
      oneOf(g, "operation", at, STRING_CHECK_OPERATIONS);
      break;
    case "text_similarity":
      str(g, "input", at);
      str(g, "reference", at);
      oneOf(g, "evaluation_metric", at, SIMILARITY_METRICS);
      if (g.pass_threshold !== undefined) finite(g.pass_threshold, `${at}.pass_threshold`);
      break;
    case "python":
      str(g, "source", at, { nonEmpty: true });
      if (g.image_tag !== undefined) str(g, "image_tag", at);
      break;
    case "score_model": {
      str(g, "model", at, { nonEmpty: true });
      checkMessages(g, at);
      if (g.range !== undefined) {
        const r = g.range;
        if (!Array.isArray(r) || r.length !== 2) throw new GraderInvalid(`${at}.range`, `Invalid '${at}.range': expected [min, max], two numbers.`);
        const [lo, hi] = [finite(r[0], `${at}.range[0]`), finite(r[1], `${at}.range[1]`)];
        if (lo >= hi) throw new GraderInvalid(`${at}.range`, `Invalid '${at}.range': the minimum must be below the maximum.`);
      }
      checkSamplingParams(g.sampling_params, `${at}.sampling_params`);
      break;
    }
    case "label_model": {
      str(g, "model", at, { nonEmpty: true });
      checkMessages(g, at);
      const labels = stringArray(g, "labels", at);
      if (labels.length < 2) throw new GraderInvalid(`${at}.labels`, `Invalid '${at}.labels': give at least two labels.`);
      const passing = stringArray(g, "passing_labels", at);
      if (passing.length === 0) throw new GraderInvalid(`${at}.passing_labels`, `Invalid '${at}.passing_labels': give at least one passing label.`);
      passing.forEach((p, i) => {
        if (!labels.includes(p)) throw new GraderInvalid(`${at}.passing_labels[${i}]`, `Invalid '${at}.passing_labels[${i}]': '${p}' is not one of the labels.`);
      });
      break;
    }
  }
  return g as unknown as SingleGrader;
}

export function checkGrader(v: unknown, at = "grader", nested = false): Grader {
  if (!isObject(v)) throw new GraderInvalid(at, `Invalid type for '${at}': expected a grader object, but got ${describe(v)} instead.`);
  const type = oneOf(v, "type", at, nested ? Object.keys(FIELDS).filter((t) => t !== "multi") : Object.keys(FIELDS));
  const { required, optional } = FIELDS[type]!;
  for (const k of Object.keys(v))
    if (!required.includes(k) && !optional.includes(k)) throw new GraderInvalid(`${at}.${k}`, `Unrecognized field '${at}.${k}' for a ${type} grader.`);
  for (const k of required) if (v[k] === undefined) throw new GraderInvalid(`${at}.${k}`, `Missing required parameter: '${at}.${k}'.`);
  str(v, "name", at, { nonEmpty: true });
  if (type !== "multi") return checkSingle(v, at, type);

  const graders = checkSubGraders(v.graders, `${at}.graders`);
  str(v, "calculate_output", at, { nonEmpty: true });
  const multi: MultiGrader = { ...(v as unknown as MultiGrader), graders };
  // A formula over a name no sub-grader answers to would score 0 on every sample: refuse it here.
  // One that does not parse is reported by validate, and by a run as formula_parse_error.
  let variables: Set<string> | undefined;
  try {
    variables = formulaVariables(parseFormula(multi.calculate_output));
  } catch (e) {
    if (!(e instanceof FormulaError)) throw e;
  }
  if (variables) checkVariables(multi, variables, at);
  return multi;
}

/**
 * The three published forms of a multi grader's `graders` (MultiGrader), each checked in the shape
 * it came in: an array (names unique), a map of variable name → grader, or a single grader.
 */
function checkSubGraders(raw: unknown, at: string): MultiGrader["graders"] {
  if (Array.isArray(raw)) {
    if (raw.length === 0) throw new GraderInvalid(at, `Invalid '${at}': expected a non-empty array of graders, but got an empty array instead.`);
    const names = new Set<string>();
    return raw.map((g, i) => {
      const gat = `${at}[${i}]`;
      const sub = checkGrader(g, gat, true) as SingleGrader;
      if (names.has(sub.name)) throw new GraderInvalid(`${gat}.name`, `Invalid '${gat}.name': '${sub.name}' names another grader of this multi grader too; names must be unique.`);
      names.add(sub.name);
      return sub;
    });
  }
  if (isObject(raw) && typeof raw.type === "string") return checkGrader(raw, at, true) as SingleGrader;
  if (isObject(raw) && Object.keys(raw).length > 0) {
    const out: Record<string, SingleGrader> = {};
    for (const [key, g] of Object.entries(raw)) {
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
        throw new GraderInvalid(`${at}.${key}`, `Invalid key '${key}' in '${at}': a key is the variable calculate_output reads, so it must be a letter or '_' followed by letters, digits or '_'.`);
      out[key] = checkGrader(g, `${at}.${key}`, true) as SingleGrader;
    }
    return out;
  }
  throw new GraderInvalid(at, `Invalid '${at}': expected a grader, an array of graders or an object of graders by name, but got ${isObject(raw) ? "an empty object" : describe(raw)} instead.`);
}

function checkVariables(g: MultiGrader, variables: Set<string>, at: string): void {
  const known = new Set(multiParts(g).map((p) => p.variable));
  for (const n of variables)
    if (!known.has(n))
      throw new GraderInvalid(`${at}.calculate_output`, `Invalid '${at}.calculate_output': '${n}' is not the name of one of the graders (known: ${[...known].join(", ")}).`);
}

/** validate's stricter check: also parses calculate_output and checks the names it reads. */
export function checkGraderStrict(v: unknown, at = "grader"): Grader {
  const g = checkGrader(v, at);
  if (g.type === "multi") {
    try {
      parseFormula(g.calculate_output);
    } catch (e) {
      if (e instanceof FormulaError) throw new GraderInvalid(`${at}.calculate_output`, `Invalid '${at}.calculate_output': ${e.message}.`);
      throw e;
    }
  }
  return g;
}

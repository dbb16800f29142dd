// Training and validation files, checked line by line for the job's method before any training
// (status validating_files). A bad file fails the job with error {code, message naming the line,
// param: training_file | validation_file}. Counting tokens here gives trained_tokens.
//
//   supervised     {"messages": [...], "tools"?, "parallel_tool_calls"?, "functions"?}: roles
//                  system, developer, user, assistant, tool (function); at least one assistant
//                  message; assistant `weight` 0 or 1
//   dpo            {"input": {"messages": [...], "tools"?}, "preferred_output": [assistant],
//                  "non_preferred_output": [assistant]}
//   reinforcement  {"messages": [...], ...}: the other keys are the item the grader sees
import { countTextTokens } from "../../engines/tokenizer/index.js";

export const MIN_EXAMPLES = 10;
export const MAX_EXAMPLES = 100_000;
export const MAX_EXAMPLE_TOKENS = 65_536;

export type Method = "supervised" | "dpo" | "reinforcement";

export interface Example {
  /** Tokens of the example as the model sees it (chat format). */
  tokens: number;
  /** Reinforcement: the item namespace (the line without `messages`). */
  item?: Record<string, unknown>;
  messages?: unknown[];
}

export class BadTrainingFile extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

const ROLES = new Set(["system", "developer", "user", "assistant", "tool", "function"]);

const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === "object" && !Array.isArray(v);

function contentText(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (typeof p === "string" ? p : isObject(p) && typeof p.text === "string" ? p.text : "")).join("");
  return "";
}

/** Tokens of a message list as chat models count them: 3 per message, +1 per name, +3 priming. */
function messageTokens(model: string, messages: Array<Record<string, unknown>>): number {
  let n = 3;
  for (const m of messages) {
    n += 3 + countTextTokens(model, String(m.role)) + countTextTokens(model, contentText(m.content));
    if (typeof m.name === "string") n += 1 + countTextTokens(model, m.name);
    if (m.tool_calls !== undefined) n += countTextTokens(model, JSON.stringify(m.tool_calls));
    if (m.function_call !== undefined) n += countTextTokens(model, JSON.stringify(m.function_call));
  }
  return n;
}

function checkMessages(v: unknown, where: string, opts: { needAssistant: boolean }): Array<Record<string, unknown>> {
  if (!Array.isArray(v) || v.length === 0) throw new BadTrainingFile("invalid_format", `${where}: 'messages' must be a non-empty array.`);
  let assistant = false;
  v.forEach((m, i) => {
    if (!isObject(m)) throw new BadTrainingFile("invalid_format", `${where}: messages[${i}] must be an object.`);
    if (typeof m.role !== "string" || !ROLES.has(m.role))
      throw new BadTrainingFile("invalid_format", `${where}: messages[${i}].role must be one of system, developer, user, assistant, tool, function; got ${JSON.stringify(m.role)}.`);
    const hasCalls = m.role === "assistant" && (m.tool_calls !== undefined || m.function_call !== undefined);
    if (!(typeof m.content === "string" || Array.isArray(m.content) || (m.content === null && hasCalls)))
      throw new BadTrainingFile("invalid_format", `${where}: messages[${i}].content must be a string or an array of content parts.`);
    if (m.weight !== undefined && m.weight !== 0 && m.weight !== 1) throw new BadTrainingFile("invalid_format", `${where}: messages[${i}].weight must be 0 or 1.`);
    if (m.role === "assistant") assistant = true;
  });
  if (opts.needAssistant && !assistant) throw new BadTrainingFile("missing_assistant_message", `${where}: the example has no assistant message to learn from.`);
  return v as Array<Record<string, unknown>>;
}

function checkLine(method: Method, model: string, line: Record<string, unknown>, where: string): Example {
  switch (method) {
    case "supervised": {
      const messages = checkMessages(line.messages, where, { needAssistant: true });
      return { tokens: messageTokens(model, messages) + (line.tools ? countTextTokens(model, JSON.stringify(line.tools)) : 0) };
    }
    case "dpo": {
      if (!isObject(line.input)) throw new BadTrainingFile("invalid_format", `${where}: 'input' must be an object with 'messages'.`);
      const messages = checkMessages(line.input.messages, `${where} (input)`, { needAssistant: false });
      let tokens = messageTokens(model, messages);
      for (const key of ["preferred_output", "non_preferred_output"]) {
        const out = checkMessages(line[key], `${where} (${key})`, { needAssistant: true });
        if (out.some((m) => m.role !== "assistant")) throw new BadTrainingFile("invalid_format", `${where}: '${key}' must hold assistant messages only.`);
        tokens += messageTokens(model, out);
      }
      return { tokens };
    }
    case "reinforcement": {
      const messages = checkMessages(line.messages, where, { needAssistant: false });
      if (messages[messages.length - 1]!.role === "assistant")
        throw new BadTrainingFile("invalid_format", `${where}: the last message must not be an assistant message (the model writes that one).`);
      const { messages: _m, ...item } = line;
      return { tokens: messageTokens(model, messages), item, messages };
    }
  }
}

/** Checks a whole file's content; `label` is "Training file" or "Validation file". */
export function parseExamples(content: Buffer, method: Method, model: string, label: string): Example[] {
  const text = content.toString("utf8");
  const examples: Example[] = [];
  const lines = text.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const raw = lines[i]!.trim();
    if (!raw) continue;
    const where = `${label}, line ${i + 1}`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw new BadTrainingFile("invalid_json", `${where}: not valid JSON.`);
    }
    if (!isObject(parsed)) throw new BadTrainingFile("invalid_format", `${where}: each line must be a JSON object.`);
    const ex = checkLine(method, model, parsed, where);
    if (ex.tokens > MAX_EXAMPLE_TOKENS) throw new BadTrainingFile("example_too_long", `${where}: the example has ${ex.tokens} tokens; at most ${MAX_EXAMPLE_TOKENS} are allowed.`);
    examples.push(ex);
    if (examples.length > MAX_EXAMPLES) throw new BadTrainingFile("too_many_examples", `${label}: more than ${MAX_EXAMPLES} examples.`);
  }
  return examples;
}

/**
 * Token count of the `tools` of a response request.
 *
 * Function tools follow the published per-function rule (README.md beside this file, "Counting
 * rules", with its source), which matches the platform's counts for its example (101 tokens on
 * gpt-4o, 105 on gpt-4, messages included; test/fixtures/token-inputs.ts):
 *
 *   per function:   funcInit + enc(`${name}:${description}`)       (one trailing "." dropped)
 *   if it has properties:  propInit, then per property
 *                   propKey + enc(`${key}:${type}:${description}`)  (one trailing "." dropped)
 *                   and if it has an enum: enumInit + Σ (enumItem + enc(item))
 *   once, after all functions:  funcEnd
 *
 * The published rule stops at flat properties. Atrium extends it the same way it treats the top level
 * (documented convention, not a published rule):
 *   - a property whose schema has `properties` (a nested object) adds propInit plus its own
 *     properties, recursively, each counted like a top-level property;
 *   - an array property adds what its `items` schema adds: nested properties as above, and an
 *     `items.enum` counted like an enum of the property;
 *   - `anyOf`/`oneOf` alternatives add their nested properties and enums the same way;
 *   - the type written in the line is `type` when it is a string, the types joined with " | "
 *     when it is a list (`["string","null"]` → "string | null"), the alternatives' types joined
 *     the same way for anyOf/oneOf, the last segment of a `$ref`, else "any";
 *   - `const` counts like a one-item enum; non-string enum items are counted as their JSON text;
 *   - `required`, `additionalProperties`, `strict`, `default` and formats add nothing, as in the
 *     published rule.
 * Nesting deeper than 32 levels is refused (a 400 naming the path), so a hostile schema can't
 * recurse without bound.
 *
 * Custom tools (`{type: "custom", name, description, format}`) are counted like a function
 * without parameters; a grammar `format` definition is counted as its text. Hosted tools
 * (web_search, file_search, code_interpreter, image_generation, computer_use_preview, mcp,
 * local_shell, ...) have no published rendering, so they are rejected with a 400 naming
 * `tools[i].type` rather than given an invented number.
 */
import type { BpeEncoding } from "./encoding.js";
import { InputTokensError } from "./errors.js";
import type { ToolCost } from "./models.js";

const MAX_DEPTH = 32;

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);

function bad(param: string, message: string, code = "invalid_value"): InputTokensError {
  return new InputTokensError(400, param, message, code);
}

function optString(o: Json, key: string, path: string): string {
  const v = o[key];
  if (v === undefined || v === null) return "";
  if (typeof v !== "string") throw bad(`${path}.${key}`, `Invalid type for '${path}.${key}': expected a string.`, "invalid_type");
  return v;
}

const dropDot = (s: string) => (s.endsWith(".") ? s.slice(0, -1) : s);

const HOSTED_TOOLS = new Set([
  "web_search",
  "web_search_preview",
  "web_search_preview_2025_03_11",
  "web_search_2025_08_26",
  "file_search",
  "code_interpreter",
  "image_generation",
  "computer_use_preview",
  "computer_use",
  "mcp",
  "local_shell",
  "shell",
  "apply_patch",
]);

function typeName(schema: Json): string {
  const t = schema.type;
  if (typeof t === "string") return t;
  if (Array.isArray(t)) return t.map(String).join(" | ");
  const alts = (Array.isArray(schema.anyOf) ? schema.anyOf : Array.isArray(schema.oneOf) ? schema.oneOf : null) as unknown[] | null;
  if (alts) return alts.map((a) => (isObj(a) ? typeName(a) : "any")).join(" | ");
  if (typeof schema.$ref === "string") return schema.$ref.split("/").pop() || "any";
  return "any";
}

class ToolCounter {
  constructor(
    private readonly enc: BpeEncoding,
    private readonly c: ToolCost,
  ) {}

  private n(text: string): number {
    return this.enc.countTokens(text);
  }

  private enumTokens(values: unknown[]): number {
    let t = this.c.enumInit;
    for (const v of values) t += this.c.enumItem + this.n(typeof v === "string" ? v : JSON.stringify(v) ?? "null");
    return t;
  }

  /** Tokens a schema contributes beyond its own line: enum, nested properties, items, alternatives. */
  private extras(schema: Json, path: string, depth: number): number {
    if (depth > MAX_DEPTH) throw bad(path, `Schema at '${path}' is nested more than ${MAX_DEPTH} levels deep.`);
    let t = 0;
    if (schema.enum !== undefined) {
      if (!Array.isArray(schema.enum)) throw bad(`${path}.enum`, `Invalid type for '${path}.enum': expected an array.`, "invalid_type");
      t += this.enumTokens(schema.enum);
    } else if (schema.const !== undefined) {
      t += this.enumTokens([schema.const]);
    }
    if (schema.properties !== undefined) t += this.properties(schema.properties, `${path}.properties`, depth + 1);
    if (schema.items !== undefined) {
      if (!isObj(schema.items)) throw bad(`${path}.items`, `Invalid type for '${path}.items': expected an object.`, "invalid_type");
      t += this.extras(schema.items, `${path}.items`, depth + 1);
    }
    for (const key of ["anyOf", "oneOf"] as const) {
      const alts = schema[key];
      if (alts === undefined) continue;
      if (!Array.isArray(alts)) throw bad(`${path}.${key}`, `Invalid type for '${path}.${key}': expected an array.`, "invalid_type");
      alts.forEach((a, i) => {
        if (!isObj(a)) throw bad(`${path}.${key}[${i}]`, `Invalid type for '${path}.${key}[${i}]': expected an object.`, "invalid_type");
        t += this.extras(a, `${path}.${key}[${i}]`, depth + 1);
      });
    }
    return t;
  }

  /** propInit + each property (only when there is at least one). */
  properties(props: unknown, path: string, depth: number): number {
    if (!isObj(props)) throw bad(path, `Invalid type for '${path}': expected an object.`, "invalid_type");
    const keys = Object.keys(props);
    if (keys.length === 0) return 0;
    let t = this.c.propInit;
    for (const key of keys) {
      const p = props[key];
      const ppath = `${path}.${key}`;
      if (!isObj(p)) throw bad(ppath, `Invalid type for '${ppath}': expected a JSON schema object.`, "invalid_type");
      const desc = dropDot(optString(p, "description", ppath));
      t += this.c.propKey + this.n(`${key}:${typeName(p)}:${desc}`);
      t += this.extras(p, ppath, depth);
    }
    return t;
  }

  functionTool(name: string, description: string, parameters: unknown, path: string): number {
    let t = this.c.funcInit + this.n(`${name}:${dropDot(description)}`);
    if (parameters === undefined || parameters === null) return t;
    if (!isObj(parameters)) throw bad(`${path}.parameters`, `Invalid type for '${path}.parameters': expected a JSON schema object.`, "invalid_type");
    if (parameters.properties !== undefined) t += this.properties(parameters.properties, `${path}.parameters.properties`, 1);
    return t;
  }

  get funcEnd(): number {
    return this.c.funcEnd;
  }
}

/** Tokens of `tools` (validated; errors name `tools[i]...`). */
export function countTools(tools: unknown, enc: BpeEncoding, cost: ToolCost): number {
  if (tools === undefined || tools === null) return 0;
  if (!Array.isArray(tools)) throw bad("tools", "Invalid type for 'tools': expected an array.", "invalid_type");
  const counter = new ToolCounter(enc, cost);
  let total = 0;
  let functions = 0;
  tools.forEach((tool, i) => {
    const path = `tools[${i}]`;
    if (!isObj(tool)) throw bad(path, `Invalid type for '${path}': expected an object.`, "invalid_type");
    const type = tool.type;
    if (typeof type !== "string") throw bad(`${path}.type`, `Missing required parameter: '${path}.type'.`, "missing_required_parameter");
    if (type === "function") {
      // Responses shape {type, name, description, parameters, strict}; the Chat Completions shape
      // {type, function: {name, description, parameters, strict}} is accepted too.
      const fn = isObj(tool.function) ? tool.function : tool;
      const fpath = isObj(tool.function) ? `${path}.function` : path;
      if (typeof fn.name !== "string" || fn.name === "") {
        throw bad(`${fpath}.name`, `Missing required parameter: '${fpath}.name'.`, "missing_required_parameter");
      }
      if (fn.strict !== undefined && fn.strict !== null && typeof fn.strict !== "boolean") {
        throw bad(`${fpath}.strict`, `Invalid type for '${fpath}.strict': expected a boolean.`, "invalid_type");
      }
      total += counter.functionTool(fn.name, optString(fn, "description", fpath), fn.parameters, fpath);
      functions++;
    } else if (type === "custom") {
      if (typeof tool.name !== "string" || tool.name === "") {
        throw bad(`${path}.name`, `Missing required parameter: '${path}.name'.`, "missing_required_parameter");
      }
      total += counter.functionTool(tool.name, optString(tool, "description", path), undefined, path);
      const format = tool.format;
      if (isObj(format) && typeof format.definition === "string") total += enc.countTokens(format.definition);
      functions++;
    } else if (HOSTED_TOOLS.has(type)) {
      throw bad(`${path}.type`, `Tool type '${type}' is not supported by input token counting: its rendering is not published.`, "unsupported_value");
    } else {
      throw bad(`${path}.type`, `Invalid value for '${path}.type': unknown tool type '${type}'.`);
    }
  });
  if (functions > 0) total += counter.funcEnd;
  return total;
}

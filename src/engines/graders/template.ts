// Grader templates: `{{sample.output_text}}`, `{{sample.output_json.a.b}}`, `{{item.x.0.y}}`.
// A path walks objects by key and arrays by index; a value that is not a string renders as its
// JSON. A variable that names nothing is a TemplateError ("invalid_variable"), a use of
// output_json when the sample is not JSON one of kind "sample_parse" — run() reports both in the
// metadata's error flags rather than failing the request.

export interface Namespaces {
  sample: { output_text: string; output_json: unknown; output_json_valid: boolean };
  item: unknown;
}

export class TemplateError extends Error {
  constructor(
    readonly kind: "invalid_variable" | "sample_parse",
    message: string,
  ) {
    super(message);
  }
}

const VARIABLE = /\{\{\s*([^{}]*?)\s*\}\}/g;

/** The sample namespace for a model sample: output_json is filled when the text is valid JSON. */
export function sampleNamespace(modelSample: string): Namespaces["sample"] {
  try {
    return { output_text: modelSample, output_json: JSON.parse(modelSample), output_json_valid: true };
  } catch {
    return { output_text: modelSample, output_json: null, output_json_valid: false };
  }
}

function walk(value: unknown, path: string[], full: string): unknown {
  let cur = value;
  for (const key of path) {
    if (Array.isArray(cur) && /^\d+$/.test(key) && Number(key) < cur.length) cur = cur[Number(key)];
    else if (cur !== null && typeof cur === "object" && !Array.isArray(cur) && Object.hasOwn(cur, key)) cur = (cur as Record<string, unknown>)[key];
    else throw new TemplateError("invalid_variable", `Invalid variable '{{${full}}}': '${key}' is not found.`);
  }
  return cur;
}

/** The value a variable names (e.g. "item.answer"). */
export function resolveVariable(name: string, ns: Namespaces): unknown {
  const [root, ...path] = name.split(".");
  if (root === "item") return walk(ns.item, path, name);
  if (root === "sample") {
    const [field, ...rest] = path;
    if (field === "output_text" && rest.length === 0) return ns.sample.output_text;
    if (field === "output_json") {
      if (!ns.sample.output_json_valid) throw new TemplateError("sample_parse", `'{{${name}}}' needs a JSON sample, but the model sample is not valid JSON.`);
      return walk(ns.sample.output_json, rest, name);
    }
  }
  throw new TemplateError("invalid_variable", `Invalid variable '{{${name}}}': use sample.output_text, sample.output_json.<path> or item.<path>.`);
}

export function render(template: string, ns: Namespaces): string {
  return template.replace(VARIABLE, (_m, name: string) => {
    const v = resolveVariable(name, ns);
    return typeof v === "string" ? v : JSON.stringify(v);
  });
}

// fast-check arbitraries for JSON values from the OpenAPI schemas: valid-ish values (the right
// types, with known ids and a few words the fields expect, so requests reach past the first
// check), and the hostile ones the issue lists (wrong types, 1e400, deep nesting, NUL and unpaired
// surrogates, huge strings).
import fc from "fast-check";
import type { Schema } from "./operations.js";

/** Ids of resources created before the run, by the parameter or field name that takes them. */
export type KnownIds = Record<string, string[]>;

/** Markers JSON.stringify writes as strings; `spliceMarkers` swaps them for text JSON.stringify cannot write. */
export const OVERFLOW = "\u0001fuzz-overflow\u0001";
const DEEP = "\u0001fuzz-deep-";

/** Words some string fields expect, so valid-ish requests get past their first check. */
const HINTS: Record<string, string[]> = {
  model: ["atrium-embed-use-lite", "omni-moderation-latest", "text-moderation-latest", "gpt-4o", "gpt-4o-mini", "vid-2"],
  purpose: ["assistants", "batch", "fine-tune", "user_data", "vision", "evals"],
  endpoint: ["/v1/embeddings", "/v1/moderations", "/v1/responses", "/v1/chat/completions"],
  completion_window: ["24h"],
  order: ["asc", "desc"],
  anchor: ["created_at", "last_active_at"],
  encoding_format: ["float", "base64"],
  type: ["static", "auto", "string_check", "text_similarity", "score_model", "python", "multi"],
  mime_type: ["text/plain", "application/pdf", "application/jsonl"],
  size: ["720x1280", "1280x720"],
  seconds: ["4", "8"],
  variant: ["video", "thumbnail", "spritesheet"],
  ranker: ["auto", "none"],
};

/** The known ids a field or parameter takes: `file_id`, `file_ids`, `training_file`, `input_file_id`… */
function idsFor(name: string, known: KnownIds): string[] {
  if (known[name]) return known[name];
  if (/file(_id|_ids)?$|^training_file$|^validation_file$/.test(name)) return known.file_id ?? [];
  return [];
}

const text = fc.oneof(
  fc.string({ maxLength: 24 }),
  fc.constantFrom("hello world", "the quick brown fox", "a", ""),
);

export interface ValueOptions {
  known: KnownIds;
  depth?: number;
}

/** A value of the schema's type: what a well-meaning client would send. */
export function validish(schema: Schema, name: string, resolve: (s: Schema) => Schema, opts: ValueOptions): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  const depth = opts.depth ?? 0;
  if (s.anyOf?.length) return fc.oneof(...s.anyOf.map((a) => validish(a, name, resolve, { ...opts, depth: depth + 1 })));
  switch (s.type) {
    case "object": {
      if (depth > 4 || !s.properties) return fc.constant({});
      const props: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(s.properties)) props[k] = validish(v, k, resolve, { ...opts, depth: depth + 1 });
      return fc.record(props, { requiredKeys: s.required ?? [] });
    }
    case "array": {
      const ids = idsFor(name, opts.known);
      if (ids.length) return fc.array(fc.constantFrom(...ids), { maxLength: 3 });
      return fc.array(validish(s.items ?? {}, name, resolve, { ...opts, depth: depth + 1 }), { maxLength: 3 });
    }
    case "integer":
      return fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }));
    case "number":
      return fc.oneof(fc.double({ min: 0, max: 2, noNaN: true }), fc.double({ noNaN: true, noDefaultInfinity: true }));
    case "boolean":
      return fc.boolean();
    case "string": {
      const choices: fc.Arbitrary<string>[] = [text];
      const ids = idsFor(name, opts.known);
      if (ids.length) choices.push(fc.constantFrom(...ids), fc.constantFrom(...ids));
      if (HINTS[name]) choices.push(fc.constantFrom(...HINTS[name]), fc.constantFrom(...HINTS[name]));
      return fc.oneof(...choices);
    }
    default:
      // google.protobuf.Value / Struct: any JSON.
      return fc.jsonValue({ maxDepth: 3 });
  }
}

/** A value of the wrong type for the schema. */
export function wrongType(schema: Schema, resolve: (s: Schema) => Schema): fc.Arbitrary<unknown> {
  const t = resolve(schema).type;
  const all: Array<[string, fc.Arbitrary<unknown>]> = [
    ["string", fc.string({ maxLength: 8 })],
    ["integer", fc.constantFrom(-1, 0, 2 ** 53, -(2 ** 63), 1.5)],
    ["number", fc.constantFrom(1.5, -0, 1e308)],
    ["boolean", fc.boolean()],
    ["null", fc.constant(null)],
    ["array", fc.constantFrom([], [1, 2], ["a"], [null], [{}])],
    ["object", fc.constantFrom({}, { a: 1 }, { "": "" }, { __proto__x: 1 })],
  ];
  return fc.oneof(...all.filter(([k]) => k !== t && !(t === "number" && k === "integer")).map(([, a]) => a));
}

/** Strings that break naive handling: NUL, unpaired surrogates, RTL and combining marks, control bytes. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom("\u0000", "a\u0000b", "\ud800", "\udfff\ud800", "\u202e\u0301\u0301", "\uffff\ufffe", "😀".repeat(50), "%00", "../../etc/passwd", "\r\n\r\n", "\\u0000"),
  fc.string({ unit: "grapheme", maxLength: 40 }),
  fc.string({ unit: "binary", maxLength: 40 }),
);

/** 10 KB to 2 MB of one character, or of random words. */
export const hugeString: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 10_000, max: 2_000_000 }), fc.constantFrom("a", "é", "word ", "😀", "\u0000"))
  .map(([n, unit]) => unit.repeat(Math.ceil(n / unit.length)));

/** A marker for `levels` nested arrays or objects around a number. */
export const deepValue: fc.Arbitrary<string> = fc
  .tuple(fc.integer({ min: 33, max: 20_000 }), fc.constantFrom("array", "object"))
  .map(([levels, shape]) => `${DEEP}${shape}-${levels}\u0001`);

/** JSON.stringify, then the markers replaced by 1e400 and by the nesting they stand for. */
export function spliceMarkers(value: unknown): string {
  return JSON.stringify(value)
    .replaceAll(JSON.stringify(OVERFLOW), "1e400")
    .replace(/"\\u0001fuzz-deep-(array|object)-(\d+)\\u0001"/g, (_m, shape: string, n: string) => {
      const levels = Number(n);
      return shape === "array" ? "[".repeat(levels) + "1" + "]".repeat(levels) : '{"k":'.repeat(levels) + "1" + "}".repeat(levels);
    });
}

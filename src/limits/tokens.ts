// The token estimate a request is charged as the platform documents it (spec 8, rate limits 4):
// the larger of the output cap the request asks for (max_tokens, max_output_tokens,
// max_completion_tokens) and the input's size in characters ÷ 4, rounded up. Only methods that
// take model input are metered — a request message with an `input`, `messages` or `prompt` field,
// or one of those caps — so managing files, uploads or vector stores costs no tokens. The size
// is read from the decoded request message (every string in it, and the strings and keys of
// google.protobuf.Value/Struct inputs), so REST, Connect and gRPC callers are charged the same.
import type { DescField, DescMessage, DescMethod } from "@bufbuild/protobuf";

const MODEL_INPUT_FIELDS = new Set(["input", "messages", "prompt"]);
const OUTPUT_CAP_FIELDS = new Set(["max_tokens", "max_output_tokens", "max_completion_tokens"]);

export type TokenMeter = (request: any) => number;

const meters = new WeakMap<DescMethod, TokenMeter | null>();

/** The method's meter, or null when it costs no tokens. */
export function tokenMeter(method: DescMethod): TokenMeter | null {
  let m = meters.get(method);
  if (m !== undefined) return m;
  const input = method.input;
  const metered = method.methodKind !== "client_streaming" && method.methodKind !== "bidi_streaming" && input.fields.some((f) => MODEL_INPUT_FIELDS.has(f.name) || OUTPUT_CAP_FIELDS.has(f.name));
  const caps = input.fields.filter((f) => OUTPUT_CAP_FIELDS.has(f.name)).map((f) => f.localName);
  m = metered
    ? (req) => {
        let tokens = Math.ceil(charsOf(input, req) / 4);
        for (const c of caps) {
          const v = req[c];
          if (v !== undefined && v !== null && Number(v) > tokens) tokens = Number(v);
        }
        return tokens;
      }
    : null;
  meters.set(method, m);
  return m;
}

/** Characters in every string of a message (bytes fields are not text and do not count). */
export function charsOf(desc: DescMessage, msg: any): number {
  if (msg === undefined || msg === null) return 0;
  switch (desc.typeName) {
    case "google.protobuf.Value":
      return valueChars(msg);
    case "google.protobuf.Struct":
      return structChars(msg);
    case "google.protobuf.ListValue":
      return listChars(msg);
  }
  let n = 0;
  for (const f of desc.fields) {
    const v = f.oneof ? (msg[f.oneof.localName]?.case === f.localName ? msg[f.oneof.localName].value : undefined) : msg[f.localName];
    if (v !== undefined && v !== null) n += fieldChars(f, v);
  }
  return n;
}

function fieldChars(f: DescField, v: any): number {
  switch (f.fieldKind) {
    case "scalar":
      return typeof v === "string" ? v.length : 0;
    case "enum":
      return 0;
    case "message":
      return charsOf(f.message, v);
    case "list": {
      let n = 0;
      if (f.listKind === "scalar") for (const x of v) n += typeof x === "string" ? x.length : 0;
      else if (f.listKind === "message") for (const x of v) n += charsOf(f.message, x);
      return n;
    }
    case "map": {
      let n = 0;
      for (const k of Object.keys(v)) {
        n += k.length;
        const x = v[k];
        if (f.mapKind === "scalar") n += typeof x === "string" ? x.length : 0;
        else if (f.mapKind === "message") n += charsOf(f.message, x);
      }
      return n;
    }
  }
}

// google.protobuf.Value as @bufbuild/protobuf holds it: { kind: { case, value } }.
function valueChars(v: any): number {
  const k = v?.kind;
  if (!k) return 0;
  if (k.case === "stringValue") return k.value.length;
  if (k.case === "structValue") return structChars(k.value);
  if (k.case === "listValue") return listChars(k.value);
  return 0;
}

function structChars(s: any): number {
  let n = 0;
  const fields = s?.fields ?? {};
  for (const key of Object.keys(fields)) n += key.length + valueChars(fields[key]);
  return n;
}

function listChars(l: any): number {
  let n = 0;
  for (const x of l?.values ?? []) n += valueChars(x);
  return n;
}

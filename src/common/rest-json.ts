// The REST JSON form of every message, derived from its descriptor (docs/architecture.md, principle 2):
// snake_case proto names, every field present, `null` for an unset optional or message field,
// 64-bit integers as JSON numbers, google.protobuf.Value as the plain JSON it holds. Decoding is
// strict and names the offending field, the way the platform answers ("Unrecognized request
// argument supplied", "Invalid type for 'x'"). Plans are compiled once per message type.
import { create, fromJson, toJson, ScalarType, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, StructSchema, ListValueSchema } from "@bufbuild/protobuf/wkt";
import { ApiError } from "./errors.js";
import type { Json } from "./json.js";

type Encoder = (value: any) => Json;
type Decoder = (json: unknown, path: string) => unknown;

const encoders = new Map<string, (msg: any) => Json>();
const decoders = new Map<string, (json: unknown, path: string) => Record<string, unknown>>();

function kindOf(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "an array";
  if (typeof v === "object") return "an object";
  if (typeof v === "string") return "a string";
  if (typeof v === "number") return Number.isInteger(v) ? "an integer" : "a decimal";
  if (typeof v === "boolean") return "a boolean";
  return typeof v;
}

export function typeError(path: string, expected: string, got: unknown): ApiError {
  return new ApiError(400, `Invalid type for '${path}': expected ${expected}, but got ${kindOf(got)} instead.`, {
    param: path,
    code: "invalid_type",
  });
}

function isWkt(desc: DescMessage): "value" | "struct" | "list" | undefined {
  if (desc.typeName === "google.protobuf.Value") return "value";
  if (desc.typeName === "google.protobuf.Struct") return "struct";
  if (desc.typeName === "google.protobuf.ListValue") return "list";
  return undefined;
}

const isLong = (t: ScalarType) =>
  t === ScalarType.INT64 || t === ScalarType.UINT64 || t === ScalarType.SINT64 || t === ScalarType.FIXED64 || t === ScalarType.SFIXED64;

// Encoders are plain closures resolved once per message type: a `null` encoder means the value is
// its own JSON (strings, bools, 32-bit numbers), so the hot loop below makes no call for it.
const longEncoder: Encoder = (v) => (typeof v === "bigint" ? Number(v) : v);
const bytesEncoder: Encoder = (v: Uint8Array | number[]) =>
  (Array.isArray(v) ? Buffer.from(v) : Buffer.from(v.buffer, v.byteOffset, v.byteLength)).toString("base64");

function scalarEncoder(t: ScalarType): Encoder | null {
  if (isLong(t)) return longEncoder;
  if (t === ScalarType.BYTES) return bytesEncoder;
  return null;
}

function messageValueEncoder(desc: DescMessage): Encoder {
  const wkt = isWkt(desc);
  if (wkt === "value") return (v) => toJson(ValueSchema, v) as Json;
  if (wkt === "struct") return (v) => toJson(StructSchema, v) as Json;
  if (wkt === "list") return (v) => toJson(ListValueSchema, v) as Json;
  return encoderFor(desc);
}

function enumEncoder(f: DescField & { fieldKind: "enum" }): Encoder {
  const names = new Map(f.enum.values.map((e) => [e.number, e.name]));
  return (v) => names.get(v) ?? v;
}

function fieldEncoder(f: DescField): Encoder | null {
  switch (f.fieldKind) {
    case "scalar":
      return scalarEncoder(f.scalar);
    case "enum":
      return enumEncoder(f);
    case "message":
      return messageValueEncoder(f.message);
    case "list": {
      const enc = f.listKind === "scalar" ? scalarEncoder(f.scalar) : f.listKind === "message" ? messageValueEncoder(f.message) : null;
      if (enc === null) return (arr: unknown[]) => arr.slice() as Json;
      return (arr: unknown[]) => {
        const out = new Array<Json>(arr.length);
        for (let i = 0; i < arr.length; i++) out[i] = enc(arr[i]);
        return out;
      };
    }
    case "map": {
      const enc = f.mapKind === "scalar" ? scalarEncoder(f.scalar) : f.mapKind === "message" ? messageValueEncoder(f.message) : null;
      return (m: Record<string, unknown>) => {
        const out: Record<string, Json> = {};
        for (const k of Object.keys(m)) out[k] = enc === null ? (m[k] as Json) : enc(m[k]);
        return out;
      };
    }
  }
}

interface EncodeStep {
  /** JSON name (the proto name: snake_case). */
  name: string;
  /** Property of the message object. */
  local: string;
  /** For a oneof member: the oneof's property; the field is written only when it is the case. */
  oneof: string | undefined;
  enc: Encoder | null;
  /**
   * The JSON of an absent value (undefined or null), as source text: what `create` would have put
   * there, encoded — the zero value of an implicit-presence scalar or enum, [] and {} for lists and
   * maps, null for everything with explicit presence. A created message never has one of the
   * former absent; an init shape (what handlers return) may.
   */
  absent: string;
}

const IMPLICIT = 2; // google.protobuf.FeatureSet.FieldPresence.IMPLICIT

function absentJson(f: DescField): string {
  if (f.fieldKind === "list") return "[]";
  if (f.fieldKind === "map") return "{}";
  if (f.presence !== IMPLICIT || f.oneof) return "null";
  if (f.fieldKind === "enum") {
    const zero = f.enum.values[0];
    return JSON.stringify(zero ? zero.name : 0);
  }
  if (f.fieldKind !== "scalar") return "null";
  switch (f.scalar) {
    case ScalarType.STRING:
    case ScalarType.BYTES:
      return '""';
    case ScalarType.BOOL:
      return "false";
    default:
      return "0";
  }
}

const EDITION_PROTO3 = 999; // google.protobuf.Edition.EDITION_PROTO3
const initSafe = new Map<string, boolean>();

/**
 * Whether toRestJson gives the same JSON for an init shape of `desc` as for `create(desc, init)`:
 * proto3 throughout, and no well-known types (wrappers, Struct, Value, Any ...), whose init forms
 * `create` converts. The transcoder skips `create` for such responses.
 */
export function restJsonAcceptsInit(desc: DescMessage): boolean {
  const known = initSafe.get(desc.typeName);
  if (known !== undefined) return known;
  initSafe.set(desc.typeName, true); // a recursive reference does not decide it
  let ok = desc.file.edition === EDITION_PROTO3 && !desc.typeName.startsWith("google.protobuf.");
  for (const f of desc.fields) {
    if (!ok) break;
    const m = f.fieldKind === "message" ? f.message : f.fieldKind === "list" && f.listKind === "message" ? f.message : f.fieldKind === "map" && f.mapKind === "message" ? f.message : undefined;
    if (m) ok = restJsonAcceptsInit(m);
  }
  initSafe.set(desc.typeName, ok);
  return ok;
}

/**
 * For a message without oneofs: a function that builds the JSON object as one object literal
 * (one hidden class, no keyed stores), generated from the descriptor. Names only come from the
 * compiled schema and are embedded as JSON string literals. About 6x faster than the generic loop
 * below on a list of models, which made it ~5 % of a REST GET /v1/models.
 */
function literalEncoder(steps: EncodeStep[]): (msg: any) => Json {
  const encs = steps.map((s) => s.enc);
  const props = steps.map((s, i) => {
    const get = `(v = m[${JSON.stringify(s.local)}]) == null ? ${s.absent} : `;
    return `${JSON.stringify(s.name)}: ${get}${s.enc === null ? "v" : `e[${i}](v)`}`;
  });
  return new Function("e", `return function encode(m) {\n  let v;\n  return {\n    ${props.join(",\n    ")}\n  };\n};`)(encs);
}

function encoderFor(desc: DescMessage): (msg: any) => Json {
  let enc = encoders.get(desc.typeName);
  if (enc) return enc;
  // The plan is built on first use, so recursive message types resolve through the map.
  let plan: EncodeStep[] | undefined;
  let literal: ((msg: any) => Json) | undefined;
  const compile = () => {
    const steps = desc.fields.map(
      (f): EncodeStep => ({ name: f.name, local: f.localName, oneof: f.oneof?.localName, enc: fieldEncoder(f), absent: absentJson(f) }),
    );
    if (!steps.some((s) => s.oneof !== undefined)) literal = literalEncoder(steps);
    return steps;
  };
  enc = (msg: any) => {
    const steps = (plan ??= compile());
    if (literal !== undefined) return literal(msg);
    const out: Record<string, Json> = {};
    for (let i = 0; i < steps.length; i++) {
      const s = steps[i]!;
      let v: unknown;
      if (s.oneof !== undefined) {
        const o = msg[s.oneof];
        if (o == null || o.case !== s.local) continue; // an unset oneof member is left out
        v = o.value;
      } else v = msg[s.local];
      out[s.name] = v == null ? (JSON.parse(s.absent) as Json) : s.enc === null ? (v as Json) : s.enc(v);
    }
    return out;
  };
  encoders.set(desc.typeName, enc);
  return enc;
}

/** A message as the REST JSON the spec documents. */
export function toRestJson(desc: DescMessage, msg: unknown): Json {
  return encoderFor(desc)(msg);
}

function scalarDecoder(t: ScalarType): Decoder {
  switch (t) {
    case ScalarType.STRING:
      return (v, p) => {
        if (typeof v !== "string") throw typeError(p, "a string", v);
        return v;
      };
    case ScalarType.BOOL:
      return (v, p) => {
        if (typeof v !== "boolean") throw typeError(p, "a boolean", v);
        return v;
      };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return (v, p) => {
        if (typeof v !== "number" || !Number.isFinite(v)) throw typeError(p, "a number", v);
        return v;
      };
    case ScalarType.BYTES:
      return (v, p) => {
        if (typeof v !== "string") throw typeError(p, "a base64 string", v);
        return new Uint8Array(Buffer.from(v, "base64"));
      };
    default: {
      const long = isLong(t);
      const unsigned = t === ScalarType.UINT32 || t === ScalarType.UINT64 || t === ScalarType.FIXED32 || t === ScalarType.FIXED64;
      return (v, p) => {
        if (typeof v !== "number" || !Number.isInteger(v)) throw typeError(p, "an integer", v);
        if (unsigned && v < 0) throw new ApiError(400, `Invalid value for '${p}': expected a non-negative integer.`, { param: p, code: "invalid_value" });
        if (!long && (v > 2147483647 || v < -2147483648))
          throw new ApiError(400, `Invalid value for '${p}': integer out of range.`, { param: p, code: "invalid_value" });
        return long ? BigInt(v) : v;
      };
    }
  }
}

/**
 * Deepest nesting of arrays and objects a google.protobuf.Value may hold. Each JSON level is two
 * messages in the binary form (Value, then Struct or ListValue), and protobuf decoders stop at 100
 * messages, so anything accepted here can also be sent to and read back by gRPC clients.
 */
export const MAX_JSON_VALUE_DEPTH = 32;

/**
 * What JSON.parse lets through but a Value cannot hold: a number that overflowed to Infinity
 * (`1e400`), and nesting past MAX_JSON_VALUE_DEPTH. Iterative, so no input can overflow the stack.
 */
function checkJsonValue(root: unknown, rootPath: string): void {
  const stack: Array<[unknown, string, number]> = [[root, rootPath, 0]];
  while (stack.length) {
    const [v, p, depth] = stack.pop()!;
    if (typeof v === "number" && !Number.isFinite(v))
      throw new ApiError(400, `Invalid value for '${p}': the number is out of range.`, { param: p, code: "invalid_value" });
    if (typeof v !== "object" || v === null) continue;
    if (depth >= MAX_JSON_VALUE_DEPTH)
      throw new ApiError(400, `Invalid value for '${p}': arrays and objects nest more than ${MAX_JSON_VALUE_DEPTH} levels deep.`, { param: p, code: "invalid_value" });
    if (Array.isArray(v)) v.forEach((x, i) => stack.push([x, `${p}[${i}]`, depth + 1]));
    else for (const [k, x] of Object.entries(v)) stack.push([x, `${p}.${k}`, depth + 1]);
  }
}

function messageValueDecoder(desc: DescMessage): Decoder {
  const wkt = isWkt(desc);
  if (wkt === "value")
    return (v, p) => {
      checkJsonValue(v, p);
      return fromJson(ValueSchema, v as JsonValue);
    };
  if (wkt === "struct")
    return (v, p) => {
      if (typeof v !== "object" || v === null || Array.isArray(v)) throw typeError(p, "an object", v);
      checkJsonValue(v, p);
      return fromJson(StructSchema, v as JsonValue);
    };
  if (wkt === "list")
    return (v, p) => {
      if (!Array.isArray(v)) throw typeError(p, "an array", v);
      checkJsonValue(v, p);
      return fromJson(ListValueSchema, v as JsonValue);
    };
  return (v, p) => create(desc, decoderFor(desc)(v, p) as any);
}

function fieldDecoder(f: DescField): Decoder {
  switch (f.fieldKind) {
    case "scalar":
      return scalarDecoder(f.scalar);
    case "enum":
      return (v, p) => {
        const e = typeof v === "string" ? f.enum.values.find((x) => x.name === v) : undefined;
        if (!e) throw new ApiError(400, `Invalid value for '${p}': ${JSON.stringify(v)}.`, { param: p, code: "invalid_value" });
        return e.number;
      };
    case "message":
      return messageValueDecoder(f.message);
    case "list": {
      const item =
        f.listKind === "scalar" ? scalarDecoder(f.scalar) : f.listKind === "message" ? messageValueDecoder(f.message) : (v: unknown) => v;
      return (v, p) => {
        if (!Array.isArray(v)) throw typeError(p, "an array", v);
        return v.map((x, i) => item(x, `${p}[${i}]`));
      };
    }
    case "map": {
      const item =
        f.mapKind === "scalar" ? scalarDecoder(f.scalar) : f.mapKind === "message" ? messageValueDecoder(f.message) : (v: unknown) => v;
      return (v, p) => {
        if (typeof v !== "object" || v === null || Array.isArray(v)) throw typeError(p, "an object", v);
        const out: Record<string, unknown> = {};
        for (const [k, x] of Object.entries(v)) out[k] = item(x, `${p}.${k}`);
        return out;
      };
    }
  }
}

function decoderFor(desc: DescMessage): (json: unknown, path: string) => Record<string, unknown> {
  let dec = decoders.get(desc.typeName);
  if (dec) return dec;
  decoders.set(desc.typeName, (j, p) => decoders.get(desc.typeName)!(j, p));
  const byName = new Map(
    desc.fields.map((f) => [f.name, { f, dec: fieldDecoder(f), isValue: f.fieldKind === "message" && isWkt(f.message) === "value" }]),
  );
  dec = (json, path) => {
    if (typeof json !== "object" || json === null || Array.isArray(json)) throw typeError(path || "body", "an object", json);
    const init: Record<string, unknown> = {};
    for (const key of Object.keys(json)) {
      const entry = byName.get(key);
      const p = path ? `${path}.${key}` : key;
      if (!entry) throw new ApiError(400, `Unrecognized request argument supplied: ${p}`, { param: p, code: "unknown_parameter" });
      const v = (json as Record<string, unknown>)[key];
      // null means "not given" except for a google.protobuf.Value, where it is a JSON null.
      if (v === null && !entry.isValue) continue;
      const value = entry.dec(v, p);
      if (entry.f.oneof) init[entry.f.oneof.localName] = { case: entry.f.localName, value };
      else init[entry.f.localName] = value;
    }
    return init;
  };
  decoders.set(desc.typeName, dec);
  return dec;
}

/** Decodes a REST JSON object into a message init (merge path params in before `create`). */
export function fromRestJson(desc: DescMessage, json: unknown, path = ""): Record<string, unknown> {
  return decoderFor(desc)(json, path);
}

/** Converts one string from a query string, path or form field to the field's type. */
export function decodeStringValue(f: DescField, raw: string, path: string): unknown {
  const t = f.fieldKind === "scalar" || (f.fieldKind === "list" && f.listKind === "scalar") ? f.scalar : undefined;
  if (t === undefined) {
    if (f.fieldKind === "enum") return fieldDecoder(f)(raw, path);
    throw new ApiError(400, `Invalid value for '${path}': not settable from a string.`, { param: path, code: "invalid_value" });
  }
  switch (t) {
    case ScalarType.STRING:
      return raw;
    case ScalarType.BOOL:
      if (raw === "true") return true;
      if (raw === "false") return false;
      throw typeError(path, "a boolean", raw);
    case ScalarType.BYTES:
      return new Uint8Array(Buffer.from(raw, "base64"));
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT: {
      const n = Number(raw);
      if (raw.trim() === "" || !Number.isFinite(n)) throw typeError(path, "a number", raw);
      return n;
    }
    default: {
      if (!/^-?\d+$/.test(raw)) throw typeError(path, "an integer", raw);
      return scalarDecoder(t)(Number(raw), path);
    }
  }
}

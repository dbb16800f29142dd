// The REST JSON form of every message, derived from its descriptor (DESIGN principle 2):
// snake_case proto names, every field present, `null` for an unset optional or message field,
// 64-bit integers as JSON numbers, google.protobuf.Value as the plain JSON it holds. Decoding is
// strict and names the offending field, the way the platform answers ("Unrecognized request
// argument supplied", "Invalid type for 'x'"). Plans are compiled once per message type.
import { create, fromJson, toJson, ScalarType, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, StructSchema, ListValueSchema } from "@bufbuild/protobuf/wkt";
import { ApiError } from "../errors.js";

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
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

function scalarEncoder(t: ScalarType): Encoder {
  if (isLong(t)) return (v) => (typeof v === "bigint" ? Number(v) : v);
  if (t === ScalarType.BYTES) return (v: Uint8Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString("base64");
  return (v) => v;
}

function messageValueEncoder(desc: DescMessage): Encoder {
  const wkt = isWkt(desc);
  if (wkt === "value") return (v) => toJson(ValueSchema, v) as Json;
  if (wkt === "struct") return (v) => toJson(StructSchema, v) as Json;
  if (wkt === "list") return (v) => toJson(ListValueSchema, v) as Json;
  return (v) => encoderFor(desc)(v);
}

function fieldEncoder(f: DescField): Encoder {
  switch (f.fieldKind) {
    case "scalar": {
      const enc = scalarEncoder(f.scalar);
      return (v) => (v === undefined ? null : enc(v));
    }
    case "enum":
      return (v) => (v === undefined ? null : (f.enum.values.find((e) => e.number === v)?.name ?? v));
    case "message": {
      const enc = messageValueEncoder(f.message);
      return (v) => (v === undefined ? null : enc(v));
    }
    case "list": {
      const enc: Encoder =
        f.listKind === "scalar" ? scalarEncoder(f.scalar) : f.listKind === "message" ? messageValueEncoder(f.message) : (v) => v;
      return (arr: unknown[]) => arr.map(enc);
    }
    case "map": {
      const enc: Encoder =
        f.mapKind === "scalar" ? scalarEncoder(f.scalar) : f.mapKind === "message" ? messageValueEncoder(f.message) : (v) => v;
      return (m: Record<string, unknown>) => {
        const out: Record<string, Json> = {};
        for (const k of Object.keys(m)) out[k] = enc(m[k]);
        return out;
      };
    }
  }
}

function encoderFor(desc: DescMessage): (msg: any) => Json {
  let enc = encoders.get(desc.typeName);
  if (enc) return enc;
  // Placeholder first: recursive message types resolve through the map.
  encoders.set(desc.typeName, (m) => encoders.get(desc.typeName)!(m));
  const plan = desc.fields.map((f) => {
    const fe = fieldEncoder(f);
    if (f.oneof) {
      const oneofName = f.oneof.localName;
      return { name: f.name, get: (m: any) => (m[oneofName]?.case === f.localName ? fe(m[oneofName].value) : undefined), oneof: true };
    }
    return { name: f.name, get: (m: any) => fe(m[f.localName]), oneof: false };
  });
  enc = (msg: any) => {
    const out: Record<string, Json> = {};
    for (const p of plan) {
      const v = p.get(msg);
      if (v !== undefined) out[p.name] = v;
      else if (!p.oneof) out[p.name] = null;
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

function messageValueDecoder(desc: DescMessage): Decoder {
  const wkt = isWkt(desc);
  if (wkt === "value") return (v) => fromJson(ValueSchema, v as JsonValue);
  if (wkt === "struct")
    return (v, p) => {
      if (typeof v !== "object" || v === null || Array.isArray(v)) throw typeError(p, "an object", v);
      return fromJson(StructSchema, v as JsonValue);
    };
  if (wkt === "list")
    return (v, p) => {
      if (!Array.isArray(v)) throw typeError(p, "an array", v);
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

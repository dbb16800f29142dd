// A service's response message as the REST API renders it (snake_case names, every field
// present, null for unset optional and message fields, 64-bit integers as numbers,
// google.protobuf.Value as plain JSON), so a batch output line's `body` is byte-for-byte what the
// same call over REST returns in its shape. Areas do not import the transport, hence this small
// walker over the descriptor; it covers the shapes batch endpoints return.
import { ScalarType, toJson, type DescField, type DescMessage, type JsonValue } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema } from "@bufbuild/protobuf/wkt";

const INT64 = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

function scalar(f: { scalar: ScalarType }, v: unknown): JsonValue {
  if (INT64.has(f.scalar)) return Number(v);
  if (f.scalar === ScalarType.BYTES) return Buffer.from(v as Uint8Array).toString("base64");
  return v as JsonValue;
}

function messageValue(desc: DescMessage, v: unknown): JsonValue {
  if (desc.typeName === "google.protobuf.Value") return toJson(ValueSchema, v as never);
  if (desc.typeName === "google.protobuf.ListValue") return toJson(ListValueSchema, v as never);
  // protobuf-es holds Struct fields as plain JSON objects already.
  if (desc.typeName === "google.protobuf.Struct") return v as JsonValue;
  return restJson(desc, v as Record<string, unknown>);
}

function field(f: DescField, v: unknown): JsonValue {
  switch (f.fieldKind) {
    case "scalar":
      return v === undefined ? null : scalar(f, v);
    case "enum":
      return v === undefined ? null : (f.enum.values.find((e) => e.number === v)?.name ?? (v as number));
    case "message":
      return v === undefined ? null : messageValue(f.message, v);
    case "list":
      return (v as unknown[]).map((x) => (f.listKind === "message" ? messageValue(f.message, x) : f.listKind === "scalar" ? scalar(f, x) : (x as JsonValue)));
    case "map":
      return Object.fromEntries(Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, f.mapKind === "message" ? messageValue(f.message, x) : f.mapKind === "scalar" ? scalar(f, x) : (x as JsonValue)]));
  }
}

export function restJson(desc: DescMessage, msg: Record<string, unknown>): JsonValue {
  const out: Record<string, JsonValue> = {};
  for (const f of desc.fields) {
    // Members of a oneof live under the oneof's name in protobuf-es.
    const v = f.oneof ? ((msg[f.oneof.localName] as { case?: string; value?: unknown })?.case === f.localName ? (msg[f.oneof.localName] as { value: unknown }).value : undefined) : msg[f.localName];
    out[f.name] = field(f, v);
  }
  return out;
}

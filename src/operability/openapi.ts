// GET /openapi.json: an OpenAPI 3.1 document of the REST API, generated at start-up from the same
// descriptors and google.api.http rules the transcoder reads (bindRoute is the transcoder's own
// reading of a rule, so the document cannot drift from the routes). Schemas follow the REST JSON
// as json.ts renders it: proto field names, every field present (required), `null` for an unset
// optional or message field, 64-bit integers as JSON integers, enums by name, bytes as base64,
// google.protobuf.Value as any JSON (the spec's unions — "auto" or a number, a string or an array —
// are carried as Value and render as written), oneof members present only when set. Requests are
// strict (unknown properties are a 400), responses list every field. Multipart uploads and binary
// downloads (with Range / 206) are described as the transcoder serves them; every error is the
// one error body; 429s carry retry-after.
import type { DescEnum, DescField, DescMessage, DescMethod, DescService } from "@bufbuild/protobuf";
import { ScalarType } from "@bufbuild/protobuf";
import type { ServiceBinding } from "../common/service.js";
import { bindRoute } from "../transport/rest/transcoder.js";
import type { MultipartShape } from "../transport/rest/multipart.js";
import { API_VERSION } from "../transport/headers.js";

type Schema = Record<string, unknown>;
type Binding = NonNullable<ReturnType<typeof bindRoute>>;

const IMPLICIT = 2; // google.protobuf.FeatureSet.FieldPresence.IMPLICIT

const RATE_LIMIT_HEADERS: Record<string, string> = {
  "x-ratelimit-limit-requests": "Requests allowed in the binding request limit's window.",
  "x-ratelimit-remaining-requests": "Requests left in that window.",
  "x-ratelimit-reset-requests": "Time until the request limit is back to its full allowance (e.g. 1s, 6m0s, 17ms).",
  "x-ratelimit-limit-tokens": "Tokens allowed per window for the organization.",
  "x-ratelimit-remaining-tokens": "Tokens left in that window.",
  "x-ratelimit-reset-tokens": "Time until the token limit is back to its full allowance.",
};

export interface OpenApiOptions {
  services: ServiceBinding[];
  multipart?: Record<string, MultipartShape>;
  title?: string;
}

/** Builds the document. Throws like the transcoder does on a rule it would refuse. */
export function generateOpenApi(opts: OpenApiOptions): Schema {
  const gen = new Generator();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const { desc } of opts.services)
    for (const method of desc.methods) {
      const b = bindRoute(desc, method, opts.multipart);
      if (!b) continue;
      const path = openApiPath(b.template);
      (paths[path] ??= {})[b.verb.toLowerCase()] = gen.operation(desc, method, b);
    }
  return {
    openapi: "3.1.0",
    info: {
      title: opts.title ?? "Atrium Platform API",
      version: API_VERSION,
      description: "Generated at start-up from the service descriptors and their google.api.http rules. The same operations are served over Connect, gRPC-Web and gRPC on the same port (see gRPC server reflection).",
    },
    servers: [{ url: "/" }],
    security: [{ bearerAuth: [] }],
    paths: Object.fromEntries(Object.entries(paths).sort(([a], [b]) => a.localeCompare(b))),
    components: {
      securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: "An API key or a workload identity access token." } },
      headers: {
        ...Object.fromEntries(Object.entries(RATE_LIMIT_HEADERS).map(([h, d]) => [h, { description: d, schema: { type: "string" } }])),
        "x-request-id": { description: "Unique per request.", schema: { type: "string" } },
        "retry-after": { description: "Seconds to wait before retrying (temporary limits).", schema: { type: "string" } },
        "retry-after-ms": { description: "Milliseconds to wait before retrying (temporary limits).", schema: { type: "string" } },
        "x-should-retry": { description: "'false' when retrying cannot help (spend cap reached, request larger than the limit).", schema: { type: "string" } },
      },
      schemas: { ...gen.schemas, Error: ERROR_SCHEMA },
      responses: {
        Error: {
          description: "Any error: `{error: {message, type, param, code}}`.",
          headers: { "x-request-id": { $ref: "#/components/headers/x-request-id" } },
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
        },
        RateLimited: {
          description: "A rate limit (code rate_limit_exceeded, type requests or tokens) or the monthly spend cap (code insufficient_quota) was reached.",
          headers: {
            ...rateLimitHeaderRefs(),
            "retry-after": { $ref: "#/components/headers/retry-after" },
            "retry-after-ms": { $ref: "#/components/headers/retry-after-ms" },
            "x-should-retry": { $ref: "#/components/headers/x-should-retry" },
          },
          content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
        },
      },
    },
  };
}

/** `/v1/files/{file_id=*}` → `/v1/files/{file_id}`. */
export function openApiPath(template: string): string {
  return template.replace(/\{([a-z_][a-z0-9_]*)=\*\}/g, "{$1}");
}

const ERROR_SCHEMA: Schema = {
  type: "object",
  required: ["error"],
  properties: {
    error: {
      type: "object",
      required: ["message", "type", "param", "code"],
      properties: {
        message: { type: "string" },
        type: { type: "string" },
        param: { type: ["string", "null"] },
        code: { type: ["string", "null"] },
      },
    },
  },
};

function rateLimitHeaderRefs() {
  return Object.fromEntries(Object.keys(RATE_LIMIT_HEADERS).map((h) => [h, { $ref: `#/components/headers/${h}` }]));
}

function scalarSchema(t: ScalarType): Schema {
  switch (t) {
    case ScalarType.STRING:
      return { type: "string" };
    case ScalarType.BOOL:
      return { type: "boolean" };
    case ScalarType.BYTES:
      return { type: "string", contentEncoding: "base64" };
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return { type: "number" };
    case ScalarType.INT64:
    case ScalarType.SINT64:
    case ScalarType.SFIXED64:
      return { type: "integer", format: "int64" };
    case ScalarType.UINT64:
    case ScalarType.FIXED64:
      return { type: "integer", format: "int64", minimum: 0 };
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return { type: "integer", format: "int32", minimum: 0 };
    default:
      return { type: "integer", format: "int32" };
  }
}

const enumSchema = (e: DescEnum): Schema => ({ type: "string", enum: e.values.map((v) => v.name) });

/** A schema that also admits null. */
function nullable(s: Schema): Schema {
  if (typeof s.type === "string") return { ...s, type: [s.type, "null"], ...(Array.isArray(s.enum) ? { enum: [...s.enum, null] } : {}) };
  return { anyOf: [s, { type: "null" }] };
}

class Generator {
  readonly schemas: Record<string, Schema> = {};

  /** A $ref to the message's schema in `mode` (response: as rendered; request: as accepted). */
  ref(desc: DescMessage, mode: "response" | "request"): Schema {
    switch (desc.typeName) {
      case "google.protobuf.Value":
        return {};
      case "google.protobuf.Struct":
        return { type: "object" };
      case "google.protobuf.ListValue":
        return { type: "array" };
    }
    const name = mode === "response" ? desc.typeName : `${desc.typeName}.Input`;
    if (!this.schemas[name]) {
      this.schemas[name] = {}; // placeholder: recursive messages refer to it while it is built
      this.schemas[name] = this.messageSchema(desc, mode);
    }
    return { $ref: `#/components/schemas/${name}` };
  }

  messageSchema(desc: DescMessage, mode: "response" | "request", skip: ReadonlySet<DescField> = new Set()): Schema {
    const properties: Record<string, Schema> = {};
    const required: string[] = [];
    for (const f of desc.fields) {
      if (skip.has(f)) continue;
      properties[f.name] = this.fieldSchema(f, mode);
      // Rendered responses have every field but unset oneof members; requests need none.
      if (mode === "response" && !f.oneof) required.push(f.name);
    }
    const s: Schema = { type: "object", properties };
    if (required.length) s.required = required;
    // The decoder refuses unknown request properties ("Unrecognized request argument supplied").
    if (mode === "request") s.additionalProperties = false;
    return s;
  }

  fieldSchema(f: DescField, mode: "response" | "request"): Schema {
    let s: Schema;
    switch (f.fieldKind) {
      case "scalar":
        s = scalarSchema(f.scalar);
        break;
      case "enum":
        s = enumSchema(f.enum);
        break;
      case "message":
        s = this.ref(f.message, mode);
        break;
      case "list":
        return {
          type: "array",
          items: f.listKind === "scalar" ? scalarSchema(f.scalar) : f.listKind === "enum" ? enumSchema(f.enum) : this.ref(f.message, mode),
        };
      case "map":
        return {
          type: "object",
          additionalProperties: f.mapKind === "scalar" ? scalarSchema(f.scalar) : f.mapKind === "enum" ? enumSchema(f.enum) : this.ref(f.message, mode),
        };
    }
    // An unset optional or message field renders as null (json.ts); oneof members are left out.
    const isValue = f.fieldKind === "message" && f.message.typeName === "google.protobuf.Value";
    if (mode === "response" && !f.oneof && !isValue && f.presence !== IMPLICIT) return nullable(s);
    return s;
  }

  operation(service: DescService, method: DescMethod, b: Binding): Schema {
    const parameters: Schema[] = [];
    for (const f of b.pathFields) parameters.push({ name: f.name, in: "path", required: true, schema: this.fieldSchema(f, "request") });
    for (const [name, f] of b.queryFields) {
      const schema = this.fieldSchema(f, "request");
      // Lists repeat the name (?a=1&a=2); string maps are `name[key]=value` pairs (deepObject).
      const style = f.fieldKind === "list" ? { style: "form", explode: true } : f.fieldKind === "map" ? { style: "deepObject", explode: true } : {};
      parameters.push({ name, in: "query", required: false, schema, ...style });
    }
    for (const { header, field } of b.headerFields) parameters.push({ name: header, in: "header", required: false, schema: this.fieldSchema(field, "request") });

    const op: Schema = {
      operationId: `${service.name}_${method.name}`,
      tags: [service.name],
      summary: `${service.name}.${method.name}`,
      description: `Also served as the RPC ${service.typeName}/${method.name} (Connect, gRPC-Web, gRPC).`,
    };
    if (parameters.length) op.parameters = parameters;
    const body = this.requestBody(method, b);
    if (body) op.requestBody = body;

    const okHeaders = { ...rateLimitHeaderRefs(), "x-request-id": { $ref: "#/components/headers/x-request-id" } };
    const responses: Record<string, unknown> = {};
    if (method.methodKind === "server_streaming") {
      // google.api.HttpBody: the bytes, with the stored content type; Range gives 206.
      const binary = { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } };
      responses["200"] = { description: "The content.", headers: okHeaders, content: binary };
      responses["206"] = { description: "The requested byte range (Range request).", headers: { ...okHeaders, "content-range": { schema: { type: "string" } } }, content: binary };
      responses["416"] = { $ref: "#/components/responses/Error" };
    } else {
      responses["200"] = { description: method.output.name, headers: okHeaders, content: { "application/json": { schema: this.ref(method.output, "response") } } };
    }
    responses["429"] = { $ref: "#/components/responses/RateLimited" };
    responses["default"] = { $ref: "#/components/responses/Error" };
    op.responses = responses;
    return op;
  }

  requestBody(method: DescMethod, b: Binding): Schema | undefined {
    const bound = new Set<DescField>([...b.pathFields, ...b.headerFields.map((h) => h.field)]);
    if (b.multipart) {
      const content: Record<string, unknown> = { "multipart/form-data": { schema: this.multipartSchema(method.input, b.multipart, bound), encoding: { [b.multipart.file]: { contentType: "application/octet-stream" } } } };
      if (b.multipart.json) content["application/json"] = { schema: this.bodySchema(method.input, bound, b.multipart) };
      return { required: true, content };
    }
    if (b.body === "") return undefined;
    const schema = b.body === "*" ? this.bodySchema(method.input, bound) : this.ref((b.body as DescField & { fieldKind: "message" }).message, "request");
    return { required: true, content: { "application/json": { schema } } };
  }

  /** `body: "*"`: the request message minus what the path and headers carry (and the upload's byte fields). */
  bodySchema(desc: DescMessage, bound: Set<DescField>, multipart?: MultipartShape): Schema {
    const skip = new Set(bound);
    if (multipart) for (const f of desc.fields) if (f.localName === multipart.chunk || f.name === multipart.chunk || f.name === multipart.filename) skip.add(f);
    if (skip.size === 0) return this.ref(desc, "request");
    return this.messageSchema(desc, "request", skip);
  }

  /** The form: the file part, and every other field as a text field (`a[b]` for nested ones). */
  multipartSchema(desc: DescMessage, shape: MultipartShape, bound: Set<DescField>): Schema {
    const properties: Record<string, Schema> = { [shape.file]: { type: "string", contentMediaType: "application/octet-stream", description: "The content." } };
    const add = (d: DescMessage, prefix: string, depth: number) => {
      for (const f of d.fields) {
        if (bound.has(f) || f.localName === shape.chunk || f.name === shape.chunk || f.name === shape.filename) continue;
        const name = prefix ? `${prefix}[${f.name}]` : f.name;
        if (f.fieldKind === "message" && depth < 3 && !f.message.typeName.startsWith("google.protobuf.")) add(f.message, name, depth + 1);
        else if (f.fieldKind === "scalar" || f.fieldKind === "enum") properties[name] = f.fieldKind === "enum" ? enumSchema(f.enum) : formScalar(f.scalar);
        else if (f.fieldKind === "list" && (f.listKind === "scalar" || f.listKind === "enum")) properties[name] = { type: "array", items: f.listKind === "enum" ? enumSchema(f.enum) : formScalar(f.scalar) };
      }
    };
    add(desc, "", 0);
    return { type: "object", required: [shape.file], properties };
  }
}

/** Form fields are text; the transcoder converts them by the field's type. */
function formScalar(t: ScalarType): Schema {
  return t === ScalarType.BYTES ? { type: "string" } : scalarSchema(t);
}

// The operations a fuzz run covers, read from the server's own /openapi.json: every REST path and
// method, its path and query parameters, the request body's media types and schemas (with $refs
// resolved), and the RPC the operation is also served as (for the Connect/gRPC frame mutations).

export interface Schema {
  type?: string;
  format?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  anyOf?: Schema[];
  additionalProperties?: boolean | Schema;
  contentMediaType?: string;
  $ref?: string;
}

export interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  schema: Schema;
}

export interface Operation {
  /** `POST /v1/files`: how failures name it. */
  id: string;
  method: string;
  /** The template, `/v1/files/{file_id}`. */
  path: string;
  params: Parameter[];
  /** Media type → the body's schema (`application/json`, `multipart/form-data`). */
  bodies: Record<string, Schema>;
  /** `/atrium.v1.FilesService/CreateFile`: the same method over Connect, gRPC-Web and gRPC. */
  rpcPath: string;
}

interface OpenApiOperation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}

export interface OpenApi {
  paths: Record<string, Record<string, OpenApiOperation>>;
  components: { schemas: Record<string, Schema> };
}

/** Every operation of the document, in its order; `$ref`s are resolved lazily by `resolve`. */
export function operationsOf(doc: OpenApi): Operation[] {
  const ops: Operation[] = [];
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const [service, rpc] = op.operationId.split("_");
      const bodies: Record<string, Schema> = {};
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) bodies[type] = media.schema;
      ops.push({
        id: `${method.toUpperCase()} ${path}`,
        method: method.toUpperCase(),
        path,
        params: op.parameters ?? [],
        bodies,
        rpcPath: `/atrium.v1.${service}/${rpc}`,
      });
    }
  }
  return ops;
}

/** Follows `$ref` (to `#/components/schemas/...`) until a schema with content. */
export function resolver(doc: OpenApi): (s: Schema) => Schema {
  return function resolve(s: Schema): Schema {
    let cur = s;
    for (let hops = 0; cur.$ref && hops < 16; hops++) {
      const name = cur.$ref.replace("#/components/schemas/", "");
      const next = doc.components.schemas[name];
      if (!next) throw new Error(`openapi.json: unresolvable $ref ${cur.$ref}`);
      cur = next;
    }
    return cur;
  };
}

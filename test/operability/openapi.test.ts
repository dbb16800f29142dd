// GET /openapi.json: a valid OpenAPI 3.1 document (linted with @seriousme/openapi-schema-validator,
// every $ref resolving), covering exactly the REST routes the server registered, and describing
// what the server really sends: real responses of many endpoints — successes and errors, JSON,
// multipart uploads and binary downloads — validate against it with ajv, with response objects
// made strict (no property the document does not list).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Ajv2020 } from "ajv/dist/2020.js";
import { Validator } from "@seriousme/openapi-schema-validator";
import { ADMIN_KEY, API_KEY, startTestServer, type TestServer } from "../shared/server.js";
import { api, sdk, toFile } from "../shared/rest.js";

let s: TestServer;
let doc: any;
beforeAll(async () => {
  s = await startTestServer();
  const res = await fetch(`${s.url}/openapi.json`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  doc = await res.json();
});
afterAll(async () => s?.stop());

const template = (url: string) => url.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
const VERBS = ["get", "post", "put", "delete", "patch"];

describe("the document", () => {
  it("is valid OpenAPI 3.1", async () => {
    expect(doc.openapi).toBe("3.1.0");
    const v = new Validator();
    const res = await v.validate(structuredClone(doc));
    expect(res.errors ?? [], JSON.stringify(res.errors, null, 1)?.slice(0, 2000)).toEqual([]);
    expect(res.valid).toBe(true);
  });

  it("every $ref resolves", () => {
    const refs = new Set<string>();
    const walk = (x: unknown) => {
      if (Array.isArray(x)) x.forEach(walk);
      else if (x && typeof x === "object") for (const [k, v] of Object.entries(x)) k === "$ref" ? refs.add(v as string) : walk(v);
    };
    walk(doc);
    for (const ref of refs) {
      expect(ref.startsWith("#/")).toBe(true);
      const target = ref.slice(2).split("/").reduce((o: any, seg) => o?.[seg.replace(/~1/g, "/").replace(/~0/g, "~")], doc);
      expect(target, ref).toBeDefined();
    }
  });

  it("covers exactly the registered REST routes, with the /v1 prefix, the server URL at the root", () => {
    const registered = s.metrics!.registered.filter((r) => r.url.startsWith("/v1/") && r.method !== "HEAD").map((r) => `${r.method} ${template(r.url)}`);
    expect(registered.length).toBeGreaterThan(20);
    const documented: string[] = [];
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      expect(path.startsWith("/v1/")).toBe(true);
      for (const verb of VERBS) if (item[verb]) documented.push(`${verb.toUpperCase()} ${path}`);
    }
    expect([...documented].sort()).toEqual([...new Set(registered)].sort());
    expect(doc.servers).toEqual([{ url: "/" }]);
    expect(doc.components.securitySchemes.bearerAuth).toMatchObject({ type: "http", scheme: "bearer" });
  });

  it("describes the shapes as REST JSON renders them", () => {
    const file = doc.components.schemas["atrium.v1.File"];
    expect(file.required).toEqual(expect.arrayContaining(["id", "object", "bytes", "created_at", "filename", "purpose", "expires_at"]));
    expect(file.properties.bytes).toMatchObject({ type: "integer", format: "int64" });
    expect(file.properties.expires_at.type).toEqual(["integer", "null"]);
    const upload = doc.paths["/v1/files"].post.requestBody.content["multipart/form-data"].schema;
    expect(upload.required).toEqual(["file"]);
    expect(upload.properties).toHaveProperty("purpose");
    expect(upload.properties).toHaveProperty("expires_after[seconds]");
    const content = doc.paths["/v1/files/{file_id}/content"].get;
    expect(Object.keys(content.responses)).toEqual(expect.arrayContaining(["200", "206", "429", "default"]));
    expect(content.parameters.map((p: any) => `${p.in}:${p.name}`)).toEqual(expect.arrayContaining(["path:file_id", "header:range"]));
    expect(doc.paths["/v1/models"].get.responses["200"].headers).toHaveProperty("x-ratelimit-remaining-requests");
    expect(doc.components.responses.RateLimited.headers).toHaveProperty("retry-after-ms");
  });
});

describe("real responses validate against it", () => {
  interface Seen {
    method: string;
    path: string;
    status: number;
    contentType: string;
    body: unknown;
  }
  const seen: Seen[] = [];

  async function call(method: string, path: string, init: { json?: unknown; body?: BodyInit; key?: string; headers?: Record<string, string> } = {}): Promise<any> {
    const res = await api(s.baseURL, path, { method, key: init.key ?? API_KEY, json: init.json, body: init.body, headers: init.headers });
    const ct = res.headers.get("content-type") ?? "";
    const body = ct.startsWith("application/json") ? await res.json() : Buffer.from(await res.arrayBuffer());
    seen.push({ method, path: `/v1${path.split("?")[0]}`, status: res.status, contentType: ct, body });
    return body;
  }

  function strict(schema: any): any {
    if (Array.isArray(schema)) return schema.map(strict);
    if (!schema || typeof schema !== "object") return schema;
    const out: any = {};
    for (const [k, v] of Object.entries(schema)) out[k] = strict(v);
    if (out.type === "object" && out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
    return out;
  }

  it("for a tour of the API: models, files, uploads, token counting, containers, vector stores, errors", async () => {
    await call("GET", "/models");
    await call("GET", "/models/gpt-4o");
    await call("GET", "/models/no-such-model");
    const file = await sdk(s.baseURL).files.create({ file: await toFile(Buffer.from("hello openapi\n"), "hello.txt"), purpose: "assistants" });
    seen.push({ method: "POST", path: "/v1/files", status: 200, contentType: "application/json", body: JSON.parse(JSON.stringify(file)) });
    await call("GET", "/files");
    await call("GET", `/files/${file.id}`);
    await call("GET", `/files/${file.id}/content`);
    await call("GET", `/files/${file.id}/content`, { headers: { range: "bytes=0-3" } });
    await call("GET", "/files?limit=0");
    const upload = await call("POST", "/uploads", { json: { bytes: 5, filename: "u.jsonl", mime_type: "application/jsonl", purpose: "batch" } });
    const form = new FormData();
    form.set("data", new Blob([Buffer.from('{"a"}')]), "part");
    const part = await call("POST", `/uploads/${upload.id}/parts`, { body: form });
    await call("POST", `/uploads/${upload.id}/complete`, { json: { part_ids: [part.id] } });
    const other = await call("POST", "/uploads", { json: { bytes: 5, filename: "v.jsonl", mime_type: "application/jsonl", purpose: "batch" } });
    await call("POST", `/uploads/${other.id}/cancel`, { json: {} });
    await call("POST", "/responses/input_tokens", { json: { model: "gpt-4o", input: "How many tokens is this?" } });
    await call("POST", "/responses/input_tokens", { json: { model: "gpt-4o", input: 12 } });
    const container = await call("POST", "/containers", { json: { name: "openapi" } });
    if (container?.id) {
      await call("GET", "/containers");
      await call("GET", `/containers/${container.id}`);
      const cf = await call("POST", `/containers/${container.id}/files`, { json: { file_id: file.id } });
      await call("GET", `/containers/${container.id}/files`);
      if (cf?.id) await call("GET", `/containers/${container.id}/files/${cf.id}`);
      await call("DELETE", `/containers/${container.id}`);
    }
    const store = await call("POST", "/vector_stores", { json: { name: "openapi", metadata: { team: "a" } } });
    if (store?.id) {
      await call("GET", "/vector_stores");
      await call("GET", `/vector_stores/${store.id}`);
      await call("POST", `/vector_stores/${store.id}`, { json: { name: "renamed" } });
      await call("GET", `/vector_stores/${store.id}/files`);
      await call("DELETE", `/vector_stores/${store.id}`);
    }
    await call("DELETE", `/files/${file.id}`);
    await call("GET", `/files/${file.id}`);
    await call("GET", "/models", { key: "sk-not-a-known-key-000000000" });
    await call("DELETE", "/models/gpt-4o", { key: ADMIN_KEY });

    const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
    ajv.addSchema(strict(doc), "openapi.json");
    const pointer = (...segs: string[]) => "openapi.json#/" + segs.map((x) => encodeURIComponent(x.replace(/~/g, "~0").replace(/\//g, "~1"))).join("/");
    const paths = Object.keys(doc.paths).map((p) => ({ p, re: new RegExp("^" + p.replace(/\{[^}]+\}/g, "[^/]+") + "$") }));
    let validated = 0;
    for (const r of seen) {
      const match = paths.filter(({ re }) => re.test(r.path)).sort((a, b) => b.p.split("{").length - a.p.split("{").length).pop();
      expect(match, `${r.method} ${r.path} is documented`).toBeDefined();
      const op = doc.paths[match!.p][r.method.toLowerCase()];
      expect(op, `${r.method} ${match!.p}`).toBeDefined();
      let resp = op.responses[String(r.status)] ?? op.responses.default;
      const key = op.responses[String(r.status)] ? String(r.status) : "default";
      let at = ["paths", match!.p, r.method.toLowerCase(), "responses", key];
      if (resp.$ref) {
        at = resp.$ref.slice(2).split("/");
        resp = at.reduce((o: any, k: string) => o[k], doc);
      }
      const media = r.contentType.split(";")[0]!;
      if (media === "application/json") {
        expect(resp.content?.["application/json"], `${r.method} ${r.path} → ${r.status} documents JSON`).toBeDefined();
        const validate = ajv.compile({ $ref: pointer(...at, "content", "application/json", "schema") });
        const ok = validate(r.body);
        expect(ok, `${r.method} ${r.path} → ${r.status}: ${JSON.stringify(validate.errors)}\n${JSON.stringify(r.body).slice(0, 500)}`).toBe(true);
        validated++;
      } else {
        expect(resp.content?.["application/octet-stream"], `${r.method} ${r.path} → ${r.status} documents bytes`).toBeDefined();
      }
    }
    expect(validated).toBeGreaterThan(20);
    if (process.env.ATRIUM_TEST_LOG) console.log(seen.map((r) => `${r.method} ${r.path} ${r.status}`).join("\n"));
    // The harness itself is strict: a model missing a field, or with one too many, fails.
    const models = ajv.compile({ $ref: pointer("paths", "/v1/models", "get", "responses", "200", "content", "application/json", "schema") });
    expect(models({ object: "list", data: [{ id: "x", object: "model", created: 1, owned_by: "me" }] })).toBe(false);
    expect(models({ object: "list", data: [{ id: "x", object: "model", created: 1, owned_by: "me", shutdown_date: null, extra: 1 }] })).toBe(false);
    expect(models({ object: "list", data: [{ id: "x", object: "model", created: 1, owned_by: "me", shutdown_date: null }] })).toBe(true);
    // Both kinds of answer were seen: successes and errors.
    expect(seen.some((r) => r.status === 200) && seen.some((r) => r.status === 404) && seen.some((r) => r.status === 401) && seen.some((r) => r.status === 206)).toBe(true);
  });
});

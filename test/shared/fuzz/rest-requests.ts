// fast-check arbitraries for REST requests of one operation: a valid-ish request from its schema,
// and each hostile variant the issue lists — wrong types, 1e400, deep nesting, NUL and unicode,
// huge strings, bad ids, bad query strings, wrong content types, malformed JSON, broken multipart
// forms, and bodies cut short (a lying Content-Length, an unfinished chunk).
import fc from "fast-check";
import type { Operation, Parameter, Schema } from "./operations.js";
import type { FuzzRequest } from "./request.js";
import { OVERFLOW, deepValue, hugeString, nastyString, spliceMarkers, validish, wrongType, type KnownIds } from "./values.js";

export interface RestContext {
  resolve: (s: Schema) => Schema;
  known: KnownIds;
  apiKey: string;
}

/** Percent-encodes the UTF-8 of `s` (unpaired surrogates become U+FFFD, where encodeURIComponent throws). */
function pct(s: string): string {
  return Buffer.from(s, "utf8").toString("latin1").replace(/[^A-Za-z0-9_.~-]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, "0")}`);
}

const badIds = fc.oneof(
  fc.constantFrom("", "%20", "..", "%2e%2e", "%00", "a%2Fb", "%zz", "file-" + "x".repeat(300), "%F0%9F%98%80", "null", "-1", "1e400", "%ED%A0%80"),
  fc.string({ maxLength: 20 }).map(pct),
  fc.string({ unit: "binary", maxLength: 20 }).map((s) => Buffer.from(s).toString("latin1").replace(/[\s?#/]/g, "_")),
);

function pathWith(op: Operation, values: Record<string, string>): string {
  return op.path.replace(/\{([^}]+)\}/g, (_m, name: string) => values[name] ?? "missing");
}

/** Path parameters: known ids (by name) or random text, URL-encoded. */
function pathValues(op: Operation, ctx: RestContext): fc.Arbitrary<Record<string, string>> {
  const rec: Record<string, fc.Arbitrary<string>> = {};
  for (const p of op.params.filter((x) => x.in === "path")) {
    const ids = ctx.known[p.name] ?? [];
    rec[p.name] = ids.length ? fc.oneof(fc.constantFrom(...ids), fc.constantFrom(...ids), fc.string({ maxLength: 12 }).map(pct)) : fc.string({ minLength: 1, maxLength: 12 }).map(pct);
  }
  return fc.record(rec);
}

function queryValid(params: Parameter[], ctx: RestContext): fc.Arbitrary<string> {
  const q = params.filter((p) => p.in === "query");
  const rec: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of q) rec[p.name] = validish(p.schema, p.name, ctx.resolve, { known: ctx.known });
  return fc.record(rec, { requiredKeys: [] }).map((o) => {
    const parts = Object.entries(o).map(([k, v]) => `${pct(k)}=${pct(typeof v === "string" ? v : JSON.stringify(v))}`);
    return parts.length ? `?${parts.join("&")}` : "";
  });
}

const badQuery = (params: Parameter[]) => {
  const names = [...params.filter((p) => p.in === "query").map((p) => p.name), "limit", "after", "order", "unknown_param"];
  const values = fc.oneof(
    fc.constantFrom("-1", "0", "1e400", "99999999999999999999", "abc", "", "%zz", "%00", "%ED%A0%80", "true", "[1]", "{}", "null"),
    hugeString.map((s) => pct(s.slice(0, 70_000))),
    nastyString.map(pct),
  );
  const pair = fc.tuple(fc.constantFrom(...names), values, fc.constantFrom("=", "[]=", "[a][b]=", "", "==")).map(([k, v, sep]) => `${k}${sep}${v}`);
  return fc.array(pair, { minLength: 1, maxLength: 4 }).map((ps) => `?${ps.join("&")}`);
};

/** JSON bodies by kind: valid-ish, one top-level field replaced by a hostile value, or broken JSON. */
function jsonVariants(schema: Schema, ctx: RestContext): Record<string, fc.Arbitrary<string>> {
  const s = ctx.resolve(schema);
  const base = validish(s, "", ctx.resolve, { known: ctx.known }) as fc.Arbitrary<Record<string, unknown>>;
  const keys = Object.keys(s.properties ?? {});
  const replaceOne = (value: (key: string) => fc.Arbitrary<unknown>) =>
    keys.length === 0
      ? base.map(spliceMarkers)
      : fc.constantFrom(...keys).chain((k) => fc.tuple(base, value(k)).map(([b, v]) => spliceMarkers({ ...b, [k]: v })));
  const field = (k: string) => s.properties![k]!;
  return {
    valid: base.map(spliceMarkers),
    "wrong-type": replaceOne((k) => wrongType(field(k), ctx.resolve)),
    overflow: replaceOne(() => fc.constantFrom(OVERFLOW, [1, OVERFLOW], { a: OVERFLOW }, [[-0.5, OVERFLOW]])),
    deep: replaceOne(() => deepValue),
    unicode: replaceOne(() => nastyString),
    huge: replaceOne(() => fc.oneof(hugeString, hugeString.map((h) => [h]), hugeString.map((h) => ({ k: h })))),
    "unknown-field": base.map((b) => spliceMarkers({ ...b, ["unknown_" + "field"]: 1 })),
    "malformed-json": fc.tuple(base.map(spliceMarkers), fc.integer({ min: 0, max: 200 }), fc.constantFrom("", "}", "garbage", "\u0000", "\ufeff")).map(([t, n, tail]) => t.slice(0, Math.max(0, t.length - 1 - (n % Math.max(1, t.length)))) + tail),
    "not-object": fc.constantFrom("[]", "null", "1", '"s"', "1e400", "", "\ufeff{}", "{}{}", '{"a":1,"a":2}'),
  };
}

function multipartBody(schema: Schema, ctx: RestContext, boundary: string): fc.Arbitrary<Buffer> {
  const s = ctx.resolve(schema);
  const parts: fc.Arbitrary<Buffer>[] = [];
  for (const [name, prop] of Object.entries(s.properties ?? {})) {
    if (prop.contentMediaType) {
      const file = fc.tuple(fc.uint8Array({ maxLength: 2048 }), fc.constantFrom("a.txt", "b.jsonl", "c.png", "d.pdf", "é\u0000.txt", ""), fc.constantFrom("text/plain", "application/octet-stream", "image/png", "application/jsonl"));
      parts.push(file.map(([bytes, filename, type]) => Buffer.concat([Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${name}"; filename="${filename}"\r\ncontent-type: ${type}\r\n\r\n`), Buffer.from(bytes), Buffer.from("\r\n")])));
    } else {
      const value = validish(prop, name.replace(/\[.*$/, ""), ctx.resolve, { known: ctx.known }).map((v) => (typeof v === "string" ? v : JSON.stringify(v)));
      parts.push(fc.option(value, { nil: undefined }).map((v) => (v === undefined ? Buffer.alloc(0) : Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${name}"\r\n\r\n${v}\r\n`))));
    }
  }
  return fc.tuple(...parts).map((ps) => Buffer.concat([...ps, Buffer.from(`--${boundary}--\r\n`)]));
}

/** Multipart forms: valid-ish, and broken in the ways a parser meets (cut, no boundary, odd names, many parts). */
function multipartVariants(schema: Schema, ctx: RestContext): Record<string, fc.Arbitrary<[string, Buffer]>> {
  const boundary = "fuzzboundary7MA4YWxk";
  const type = `multipart/form-data; boundary=${boundary}`;
  const body = multipartBody(schema, ctx, boundary);
  const part = (disposition: string, value: string) => `--${boundary}\r\ncontent-disposition: ${disposition}\r\n\r\n${value}\r\n`;
  return {
    "multipart-valid": body.map((b) => [type, b]),
    "multipart-cut": fc.tuple(body, fc.nat()).map(([b, n]) => [type, b.subarray(0, n % Math.max(1, b.length))]),
    "multipart-broken": fc.oneof(
      body.map((b): [string, Buffer] => ["multipart/form-data", b]),
      body.map((b): [string, Buffer] => ["multipart/form-data; boundary=", b]),
      body.map((b): [string, Buffer] => [`multipart/form-data; boundary=other`, b]),
      fc.constantFrom('form-data; name=""', "form-data", 'form-data; name="file"; filename=""', 'form-data; name="a\u0000b"', "garbage", 'form-data; name="file[]"; filename="x"', 'form-data; name="__proto__"').map((d): [string, Buffer] => [type, Buffer.from(part(d, "x") + `--${boundary}--\r\n`, "latin1")]),
      fc.integer({ min: 60, max: 200 }).map((n): [string, Buffer] => [type, Buffer.from(part('form-data; name="purpose"', "assistants").repeat(n) + `--${boundary}--\r\n`)]),
      hugeString.map((h): [string, Buffer] => [type, Buffer.from(part('form-data; name="purpose"', h) + `--${boundary}--\r\n`)]),
    ),
  };
}

const wrongContentTypes = fc.constantFrom("text/plain", "application/xml", "application/x-www-form-urlencoded", "application/json; charset=utf-16", "application/octet-stream", "application/proto", "", "*/*", "application/json; boundary=x", "multipart/mixed; boundary=b");

/** Every variant for `op`, each an arbitrary of requests, keyed by kind. */
export function restVariants(op: Operation, ctx: RestContext): Record<string, fc.Arbitrary<FuzzRequest>> {
  const auth = { authorization: `Bearer ${ctx.apiKey}` };
  const paths = pathValues(op, ctx);
  const query = queryValid(op.params, ctx);
  const make = (kind: string, target: fc.Arbitrary<string>, contentType: fc.Arbitrary<string | undefined>, body: fc.Arbitrary<Buffer | string>, cut?: FuzzRequest["cut"]) =>
    fc.tuple(target, contentType, body).map(([t, ct, b]): FuzzRequest => ({
      op: op.id,
      kind,
      protocol: "http1",
      method: op.method,
      target: t,
      headers: ct === undefined ? auth : { ...auth, "content-type": ct },
      body: typeof b === "string" ? Buffer.from(b) : b,
      cut,
    }));
  const target = fc.tuple(paths, query).map(([p, q]) => pathWith(op, p) + q);
  const out: Record<string, fc.Arbitrary<FuzzRequest>> = {};
  const none = fc.constant(undefined);
  const empty = fc.constant("");
  const json = op.bodies["application/json"];
  const multipart = op.bodies["multipart/form-data"];
  if (json) {
    for (const [kind, body] of Object.entries(jsonVariants(json, ctx))) out[kind] = make(kind, target, fc.constant("application/json"), body);
    out["content-type"] = make("content-type", target, wrongContentTypes, jsonVariants(json, ctx).valid);
  }
  if (multipart) {
    for (const [kind, tb] of Object.entries(multipartVariants(multipart, ctx))) out[kind] = make(kind, target, tb.map(([t]) => t), tb.map(([, b]) => b));
    if (!json) out["content-type"] = make("content-type", target, wrongContentTypes, multipartBody(multipart, ctx, "x"));
  }
  if (json || multipart) {
    const [ct, body] = json ? ["application/json", jsonVariants(json, ctx).valid] : ["multipart/form-data; boundary=fuzzboundary7MA4YWxk", multipartVariants(multipart!, ctx)["multipart-valid"]!.map(([, b]) => b)];
    out["cut-content-length"] = make("cut-content-length", target, fc.constant(ct as string), body as fc.Arbitrary<string | Buffer>, "content-length");
    out["cut-chunked"] = make("cut-chunked", target, fc.constant(ct as string), body as fc.Arbitrary<string | Buffer>, "chunked");
  } else {
    out.valid = make("valid", target, none, empty);
    out["unexpected-body"] = make("unexpected-body", target, fc.constantFrom("application/json", "text/plain"), fc.constantFrom("{}", "garbage", "\u0000"));
  }
  if (op.params.some((p) => p.in === "path")) out["bad-id"] = make("bad-id", fc.tuple(paths, badIds).map(([p, bad]) => pathWith(op, Object.fromEntries(Object.keys(p).map((k) => [k, bad])))), json ? fc.constant("application/json") : none, json ? fc.constant("{}") : empty);
  out["bad-query"] = make("bad-query", fc.tuple(paths, badQuery(op.params)).map(([p, q]) => pathWith(op, p) + q), json ? fc.constant("application/json") : none, json ? fc.constant("{}") : empty);
  out["no-key"] = make("no-key", target, none, empty).map((r) => ({ ...r, headers: {} }));
  return out;
}

// The baselines of bench/run.ts: bare Fastify routes doing the same work as Atrium's, in their
// own process (pinned by the parent like Atrium's). No hooks, no auth, no logger.
//   GET  /v1/models            the same ModelsService implementation (built-in list + the SQLite
//                              query for fine-tuned models), mapped to the same JSON by hand
//   GET  /v1/models/:model     the same GetModel (a built-in model: no storage), same JSON
//   POST /v1/uploads           the same Uploads.create (two SQLite inserts), JSON in and out
//   GET  /with-headers/v1/models[/:model]  the two GET routes above, also sending the response
//                              headers every Atrium answer carries (request id, version, organization,
//                              six x-ratelimit-*, processing time): what those headers alone cost
//   /atrium.v1.ModelsService/* stock @connectrpc/connect-fastify serving the same implementation
//                              (reference only: what Connect cost before the lean path)
//   GET  /files/:name?hwm=N    fs.createReadStream with highWaterMark N
//   PUT  /raw/:name            request body piped to a file
//   POST /multipart/:name      busboy, the file part piped to a file
// The upload routes fsync before answering when ?sync=1 (Atrium's blob store always does).
// Env: BENCH_PORT, BENCH_DIR.
import * as fs from "node:fs";
import * as path from "node:path";
import { pipeline } from "node:stream/promises";
import { promisify } from "node:util";
import Fastify from "fastify";
import busboy from "busboy";
import pino from "pino";
import { create } from "@bufbuild/protobuf";
import { createContextValues } from "@connectrpc/connect";
import { fastifyConnectPlugin } from "@connectrpc/connect-fastify";
// Atrium's own service code (tsx transpiles it as tsc does: plain JS, no type checks at run time).
import { openStorage } from "../src/storage/index.js";
import { KeyStore } from "../src/auth/keys.js";
import { principalKey } from "../src/auth/principal.js";
import { systemClock } from "../src/services/deps.js";
import { createModelsService } from "../src/services/models/handler.js";
import { Uploads } from "../src/services/uploads/uploads.js";
import { newRequestId, API_VERSION } from "../src/transport/headers.js";
import { ModelsService, GetModelRequestSchema, ListModelsRequestSchema } from "../gen/atrium/v1/models_pb.js";

const port = Number(process.env.BENCH_PORT);
const dir = process.env.BENCH_DIR!;
const filesDir = path.join(dir, "files");
fs.mkdirSync(filesDir, { recursive: true });

const { records, blobs } = await openStorage(path.join(dir, "store"));
const log = pino({ level: "silent" });
const deps = { records, blobs, keys: new KeyStore(records), clock: systemClock, log };
const models = createModelsService(deps as any);
const uploads = new Uploads(deps as any);
const principal = { kind: "key", credentialId: "key_bench", organizationId: "org-default", projectId: "proj_default", role: "owner", scopes: null };
const scope = { projectId: principal.projectId };

function ctx(): any {
  const values = createContextValues();
  values.set(principalKey, principal as any);
  return { values, requestHeader: new Headers(), responseHeader: new Headers(), responseTrailer: new Headers() };
}

const app = Fastify({ logger: false, bodyLimit: 32 * 1024 * 1024 });

const modelJson = (m: any) => ({ id: m.id, object: m.object, created: Number(m.created), owned_by: m.ownedBy, shutdown_date: m.shutdownDate ?? null });

async function listModels() {
  const res: any = await models.listModels(create(ListModelsRequestSchema), ctx());
  return { object: res.object, data: res.data.map(modelJson) };
}

async function getModel(req: { params: unknown }) {
  return modelJson(await models.getModel(create(GetModelRequestSchema, { model: (req.params as { model: string }).model }), ctx()));
}

app.get("/v1/models", listModels);
app.get("/v1/models/:model", getModel);

// The response headers Atrium answers with (spec 5.9, 8), with values of the same shape and
// length as the bench's (limits of 1e9 per minute): a reference for what sending them costs.
let remaining = 1e9;
function atriumHeaders(start: number): Record<string, string> {
  if (--remaining < 0) remaining = 1e9 - 1;
  return {
    "x-request-id": newRequestId(),
    "vendor-version": API_VERSION,
    "vendor-organization": principal.organizationId,
    "x-ratelimit-limit-requests": "1000000000",
    "x-ratelimit-remaining-requests": String(remaining),
    "x-ratelimit-reset-requests": "1ms",
    "x-ratelimit-limit-tokens": "1000000000",
    "x-ratelimit-remaining-tokens": "1000000000",
    "x-ratelimit-reset-tokens": "0s",
    "vendor-processing-ms": String(Math.round(performance.now() - start)),
  };
}

app.get("/with-headers/v1/models", async (_req, reply) => {
  const start = performance.now();
  const body = await listModels();
  return reply.headers(atriumHeaders(start)).send(body);
});

app.get("/with-headers/v1/models/:model", async (req, reply) => {
  const start = performance.now();
  const body = await getModel(req);
  return reply.headers(atriumHeaders(start)).send(body);
});

app.post("/v1/uploads", async (req) => {
  const b = req.body as any;
  const u = await uploads.create(scope, { bytes: BigInt(b.bytes), filename: b.filename, mimeType: b.mime_type, purpose: b.purpose });
  return {
    id: u.id,
    object: "upload",
    bytes: u.bytes,
    created_at: u.createdAt,
    expires_at: u.expiresAt,
    filename: u.filename,
    purpose: u.purpose,
    status: u.status,
    file: null,
  };
});

await app.register(fastifyConnectPlugin, {
  routes: (router) => void router.service(ModelsService, models as any),
  contextValues: () => ctx().values,
});

const filePath = (name: string) => path.join(filesDir, path.basename(name));

app.get("/files/:name", (req, reply) => {
  const { name } = req.params as { name: string };
  const hwm = Number((req.query as any).hwm ?? 65536);
  reply.type("application/octet-stream").header("content-length", fs.statSync(filePath(name)).size);
  return reply.send(fs.createReadStream(filePath(name), { highWaterMark: hwm }));
});

app.delete("/files/:name", async (req) => {
  fs.rmSync(filePath((req.params as { name: string }).name), { force: true });
  return { deleted: true };
});

await app.register(async (scope) => {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser("*", (_req, _payload, done) => done(null, undefined));
  const fsync = promisify(fs.fsync);
  async function toFile(name: string, source: NodeJS.ReadableStream, sync: boolean): Promise<number> {
    const out = fs.createWriteStream(filePath(name));
    await new Promise((r) => out.once("open", r));
    await pipeline(source, out);
    if (sync) {
      const fd = fs.openSync(filePath(name), "r");
      await fsync(fd);
      fs.closeSync(fd);
    }
    return out.bytesWritten;
  }
  scope.put("/raw/:name", async (req) => {
    const bytes = await toFile((req.params as any).name, req.raw, (req.query as any).sync === "1");
    return { bytes };
  });
  scope.post("/multipart/:name", async (req) => {
    const sync = (req.query as any).sync === "1";
    const name = (req.params as any).name;
    const bb = busboy({ headers: req.headers as any });
    const done = new Promise<number>((resolve, reject) => {
      let written: Promise<number> | undefined;
      bb.on("file", (_field, stream) => {
        written = toFile(name, stream, sync);
        written.catch(reject);
      });
      bb.on("close", () => (written ?? Promise.resolve(0)).then(resolve, reject));
      bb.on("error", reject);
    });
    req.raw.pipe(bb);
    return { bytes: await done };
  });
});

await app.listen({ host: "127.0.0.1", port });
process.stdout.write(`listening ${port}\n`);
process.on("SIGTERM", () => void app.close().then(() => process.exit(0)));

// The operator's view: /metrics after a known sequence of calls over every protocol (counts,
// latency histograms and bytes by route template, protocol and status; rate-limit refusals; job
// queue depth and durations; process metrics), ATRIUM_METRICS_TOKEN, /readyz, and graceful
// shutdown: an upload in flight when SIGTERM's close() starts completes, or — past the grace
// period — is refused as a whole, never half-stored.
import { rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import Fastify from "fastify";
import { installReadiness } from "../../src/operability/health.js";
import type { BlobStore, RecordStore } from "../../src/storage/types.js";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { ModelsService } from "../../gen/atrium/v1/models_pb.js";
import { configFromEnv } from "../../src/config.js";
import { buildServer } from "../../src/server.js";
import { areaConfigSections, areas as defaultAreas } from "../../src/services/index.js";
import type { ApiArea } from "../../src/services/area.js";
import { API_KEY, tempDir, type TestServer } from "../shared/server.js";
import { api, blobKeys, filesUnder, generatedMultipart } from "../shared/rest.js";
import { startConfiguredServer } from "../shared/operability.js";

const LIMITED_KEY = "sk-atrium-test-limited-key-000001";
const config = {
  organizations: [
    { id: "org-default", projects: [{ id: "proj_default" }] },
    { id: "org-limited", rate_limits: { requests_per_minute: 1 }, projects: [{ id: "proj_limited" }] },
  ],
  keys: [{ key: LIMITED_KEY, organization: "org-limited", projects: ["proj_limited"], role: "member" }],
};

/** Parses the Prometheus text: "name{labels}" → value. */
function parse(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const i = line.lastIndexOf(" ");
    out.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return out;
}

const series = (name: string, labels: Record<string, string>) => `${name}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(",")}}`;

describe("GET /metrics", () => {
  let s: TestServer;
  let releaseJobs!: () => void;
  const jobsGate = new Promise<void>((r) => (releaseJobs = r));
  // A job kind of our own, to watch the queue and the durations.
  const jobsArea: ApiArea = {
    name: "metrics_test_jobs",
    setup: () => ({
      services: [],
      jobs: {
        metrics_test_wait: {
          handler: (ctx) => Promise.race([jobsGate, new Promise((_, reject) => ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason)))]).then(() => "done"),
          options: { concurrency: 1 },
          settle: async () => {}, // the job serves no resource
        },
      },
    }),
  };
  beforeAll(async () => {
    s = await startConfiguredServer(config, {}, { areas: [...defaultAreas, jobsArea] });
  });
  afterAll(async () => {
    releaseJobs();
    await s?.stop();
  });

  async function scrape() {
    const res = await fetch(`${s.url}/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    return { text, m: parse(text) };
  }

  it("counts a known sequence by route template, protocol and status", async () => {
    const auth = { headers: { authorization: `Bearer ${API_KEY}` } };
    for (let i = 0; i < 3; i++) await (await api(s.baseURL, "/models")).arrayBuffer();
    await (await api(s.baseURL, "/models/no-such-model-xyz")).arrayBuffer();
    await (await api(s.baseURL, "/models", { key: null })).arrayBuffer();
    await (await api(s.baseURL, "/files/file-rawid12345")).arrayBuffer();
    await (await fetch(`${s.url}/not/a/route/rawpath987`)).arrayBuffer();
    const form = new FormData();
    form.set("purpose", "assistants");
    form.set("file", new Blob([Buffer.alloc(5000, 97)]), "m.txt");
    expect((await api(s.baseURL, "/files", { method: "POST", body: form })).status).toBe(200);
    const connect = createClient(ModelsService, createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" }));
    await connect.getModel({ model: "gpt-4o" }, auth);
    await connect.getModel({ model: "gpt-4o" }, auth);
    const grpc = createClient(ModelsService, createGrpcTransport({ baseUrl: s.url }));
    await expect(grpc.getModel({ model: "no-such-model-xyz" }, auth)).rejects.toThrow(/No such model|model/i);
    await createClient(ModelsService, createGrpcWebTransport({ baseUrl: s.url, httpVersion: "1.1" })).listModels({}, auth);
    // The limited organization: one call, then a 429.
    expect((await api(s.baseURL, "/models", { key: LIMITED_KEY })).status).toBe(200);
    expect((await api(s.baseURL, "/models", { key: LIMITED_KEY })).status).toBe(429);

    const { text, m } = await scrape();
    const req = (route: string, protocol: string, code: string) => m.get(series("atrium_requests_total", { route, protocol, code }));
    expect(req("/v1/models", "rest", "200")).toBe(4);
    expect(req("/v1/models", "rest", "401")).toBe(1);
    expect(req("/v1/models", "rest", "429")).toBe(1);
    expect(req("/v1/models/{model}", "rest", "404")).toBe(1);
    expect(req("/v1/files/{file_id}", "rest", "404")).toBe(1);
    expect(req("/v1/files", "rest", "200")).toBe(1);
    expect(req("unmatched", "http", "404")).toBe(1);
    expect(req("/atrium.v1.ModelsService/GetModel", "connect", "ok")).toBe(2);
    expect(req("/atrium.v1.ModelsService/GetModel", "grpc", "not_found")).toBe(1);
    expect(req("/atrium.v1.ModelsService/ListModels", "grpc-web", "ok")).toBe(1);
    // Templates only: no raw id or path reaches a label.
    for (const raw of ["no-such-model-xyz", "file-rawid12345", "rawpath987", "gpt-4o"]) expect(text).not.toContain(raw);
    // Histograms agree with the counts; the buckets are cumulative.
    const h = (suffix: string, extra: Record<string, string> = {}) =>
      m.get(series(`atrium_request_duration_seconds_${suffix}`, { route: "/v1/models", protocol: "rest", code: "200", ...extra }));
    expect(h("count")).toBe(4);
    expect(h("bucket", { le: "+Inf" })).toBe(4);
    expect(h("bucket", { le: "30" })).toBe(4);
    expect(h("sum")).toBeGreaterThan(0);
    expect(h("bucket", { le: "0.001" })!).toBeLessThanOrEqual(h("bucket", { le: "0.01" })!);
    // Bytes: the upload's body in, the list's JSON out.
    expect(m.get(series("atrium_request_bytes_total", { route: "/v1/files", protocol: "rest", code: "200" }))).toBeGreaterThan(5000);
    expect(m.get(series("atrium_response_bytes_total", { route: "/v1/models", protocol: "rest", code: "200" }))).toBeGreaterThan(4 * 500);
    expect(m.get(series("atrium_rate_limit_rejections_total", { limit: "requests", scope: "organization" }))).toBe(1);
    // prom-client's process and Node.js metrics.
    expect(text).toMatch(/^process_cpu_user_seconds_total \d/m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds \d/m);
  });

  it("job queue depth and job durations per kind", async () => {
    for (let i = 0; i < 3; i++) await s.jobs.enqueue({ projectId: "proj_default" }, "metrics_test_wait", { i });
    const depth = (state: string) => (m: Map<string, number>) => m.get(series("atrium_jobs", { kind: "metrics_test_wait", state }));
    let m = (await scrape()).m;
    for (let i = 0; i < 100 && depth("running")(m) !== 1; i++) {
      await new Promise((r) => setTimeout(r, 20));
      m = (await scrape()).m;
    }
    expect(depth("running")(m)).toBe(1);
    expect(depth("queued")(m)).toBe(2);
    releaseJobs();
    for (let i = 0; i < 100 && m.get(series("atrium_job_duration_seconds_count", { kind: "metrics_test_wait", outcome: "succeeded" })) !== 3; i++) {
      await new Promise((r) => setTimeout(r, 20));
      m = (await scrape()).m;
    }
    expect(m.get(series("atrium_job_duration_seconds_count", { kind: "metrics_test_wait", outcome: "succeeded" }))).toBe(3);
    expect(depth("queued")(m) ?? 0).toBe(0);
  });

  it("worker pools: threads, the memory their workers report, and recycling (issue 22, defect 10)", async () => {
    const res = await api(s.baseURL, "/embeddings", { method: "POST", json: { model: "atrium-embed-use-lite", input: "memory of a worker" } });
    expect(res.status).toBe(200);
    const { m } = await scrape();
    const pool = { pool: "atrium-embeddings" };
    expect(m.get(series("atrium_worker_threads", pool))).toBe(1);
    // The encoder's worker holds the model (tens of MiB of WebAssembly memory and weights).
    expect(m.get(series("atrium_worker_memory_bytes", pool))).toBeGreaterThan(10 * 2 ** 20);
    expect(m.get(series("atrium_worker_recycled_total", pool))).toBe(0);
  });
});

describe("ATRIUM_METRICS_TOKEN and ATRIUM_METRICS=off", () => {
  it("with a token, /metrics needs it", async () => {
    const s = await startConfiguredServer(config, { ATRIUM_METRICS_TOKEN: "scrape-secret" });
    try {
      expect((await fetch(`${s.url}/metrics`)).status).toBe(401);
      expect((await fetch(`${s.url}/metrics`, { headers: { authorization: "Bearer wrong-secret!" } })).status).toBe(401);
      const ok = await fetch(`${s.url}/metrics`, { headers: { authorization: "Bearer scrape-secret" } });
      expect(ok.status).toBe(200);
      expect(await ok.text()).toContain("atrium_requests_total");
    } finally {
      await s.stop();
    }
  });

  it("off: no /metrics route; ATRIUM_RATE_LIMITS=off: no limits and no x-ratelimit-* headers", async () => {
    const s = await startConfiguredServer(config, { ATRIUM_METRICS: "off", ATRIUM_RATE_LIMITS: "off" });
    try {
      expect((await fetch(`${s.url}/metrics`)).status).toBe(404);
      for (let i = 0; i < 3; i++) {
        const res = await api(s.baseURL, "/models", { key: LIMITED_KEY });
        expect(res.status).toBe(200);
        expect(res.headers.get("x-ratelimit-limit-requests")).toBeNull();
      }
    } finally {
      await s.stop();
    }
  });
});

describe("GET /readyz", () => {
  it("ready: database, blobs, disk space and jobs checked", async () => {
    const s = await startConfiguredServer(config);
    try {
      const res = await fetch(`${s.url}/readyz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ status: "ok", checks: { database: "ok", blobs: "ok", disk: "ok", jobs: "ok" } });
      expect(blobKeys(s.dataDir)).toEqual([]);
    } finally {
      await s.stop();
    }
  });

  it("not ready when the data directory's file system has less free than ATRIUM_MIN_FREE_DISK_BYTES", async () => {
    // More than any disk holds: the check fails wherever the test runs.
    const s = await startConfiguredServer(config, { ATRIUM_MIN_FREE_DISK_BYTES: String(2 ** 52) });
    try {
      const res = await fetch(`${s.url}/readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as { status: string; checks: Record<string, string> };
      expect(body.status).toBe("not_ready");
      expect(body.checks.disk).toMatch(/^failing: \d+ bytes free, below ATRIUM_MIN_FREE_DISK_BYTES \(4503599627370496\)$/);
      expect(body.checks.database).toBe("ok");
    } finally {
      await s.stop();
    }
  });

  it("not ready before the job runner runs (a built, not yet listening server)", async () => {
    const dataDir = tempDir();
    const cfg = configFromEnv({ ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: API_KEY }, areaConfigSections());
    const server = await buildServer(cfg, { env: {}, logger: pino({ level: "silent" }) });
    try {
      const res = await server.app.inject({ method: "GET", url: "/readyz" });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ status: "not_ready", checks: { database: "ok", blobs: "ok", jobs: "failing: the job runner is not running" } });
    } finally {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe("graceful shutdown", () => {
  it("/readyz answers 503 as soon as draining starts", async () => {
    const app = Fastify();
    let draining = false;
    const records = { setMeta: async () => {} } as unknown as RecordStore;
    const blobs = { put: async () => ({}), delete: async () => {} } as unknown as BlobStore;
    installReadiness(app, { records, blobs, jobsRunning: () => true, draining: () => draining });
    expect((await app.inject({ url: "/readyz" })).statusCode).toBe(200);
    draining = true;
    const res = await app.inject({ url: "/readyz" });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toEqual({ status: "shutting_down", checks: {} });
    await app.close();
  });

  const SIZE = 2 * 1024 * 1024;

  function slowUpload(s: TestServer, delayMs: number, onStarted: () => void) {
    const body = generatedMultipart({
      fields: [["purpose", "user_data"]],
      fileField: "file",
      filename: "inflight.bin",
      size: SIZE,
      chunk: 64 * 1024,
      delayMs,
      onChunk: (n) => n >= 256 * 1024 && onStarted(),
    });
    return fetch(`${s.baseURL}/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": body.contentType },
      body: body.stream,
      duplex: "half",
    } as RequestInit);
  }

  it("an upload in flight completes; new connections are refused", async () => {
    const s = await startConfiguredServer(config, { ATRIUM_SHUTDOWN_GRACE_MS: "20000" });
    const dataDir = s.dataDir;
    try {
      let started!: () => void;
      const midway = new Promise<void>((r) => (started = r));
      const upload = slowUpload(s, 15, started);
      await midway;
      const t0 = Date.now();
      const closing = s.close();
      await new Promise((r) => setTimeout(r, 50));
      await expect(fetch(`${s.url}/healthz`)).rejects.toThrow();
      const res = await upload;
      expect(res.status).toBe(200);
      expect(res.headers.get("connection")).toBe("close");
      const file = await res.json();
      expect(file.bytes).toBe(SIZE);
      await closing;
      // Done when the upload was: not at the grace deadline.
      expect(Date.now() - t0).toBeLessThan(10_000);
      // Stored whole: the next start serves it.
      const again = await startConfiguredServer(config, {}, { dataDir });
      try {
        const got = await api(again.baseURL, `/files/${file.id}/content`);
        expect(got.status).toBe(200);
        expect((await got.arrayBuffer()).byteLength).toBe(SIZE);
      } finally {
        await again.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it("past the grace period the upload is cut, and nothing of it is stored", async () => {
    const s = await startConfiguredServer(config, { ATRIUM_SHUTDOWN_GRACE_MS: "300" });
    const dataDir = s.dataDir;
    try {
      let started!: () => void;
      const midway = new Promise<void>((r) => (started = r));
      // 32 chunks, 150 ms apart: ~5 s, far past the 300 ms grace.
      const upload = slowUpload(s, 150, started).then(
        (r) => r.status,
        (e: Error) => e,
      );
      await midway;
      const t0 = Date.now();
      await s.close();
      expect(Date.now() - t0).toBeLessThan(3000);
      const outcome = await upload;
      expect(outcome).toBeInstanceOf(Error);
      expect(blobKeys(dataDir)).toEqual([]);
      const again = await startConfiguredServer(config, {}, { dataDir });
      try {
        expect(filesUnder(join(dataDir, "tmp"))).toEqual([]);
        const list = await (await api(again.baseURL, "/files")).json();
        expect(list.data).toEqual([]);
      } finally {
        await again.close();
      }
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

/**
 * Scale-out (issue 19, docs/scale-out.md): Atrium on PostgreSQL + Swift (S3) + Redis, two instances
 * sharing them, beside the embedded default (SQLite + disk) and the engines' own clients, in one run.
 * Needs `npm run build` (the servers run from dist/), PostgreSQL 15 (+ `postgresql-15-rum`), Swift
 * and Redis as the scaled tests need them (test/shared/postgres.ts, swift.ts, scaled.ts).
 *
 *   node --import tsx bench/scale-out.bench.ts [--quick] [--chunks 100000] [--runs 3] [--window 2]
 *        [--warmup 0.4] [--connections 10] [--file-mb 128] [--queries 100] [--jobs 5000]
 *        [--skip rest,files,search,jobs]
 *
 * `--quick` proves the set-up in a few minutes: 10,000 chunks, 1 s windows, 2 runs, 32 MiB files,
 * 2,000 jobs (each flag given beside it wins).
 *
 * Engines: private PostgreSQL, Swift and Redis started on free ports and stopped by PID when the
 * bench exits (the test helpers); ATRIUM_BENCH_DATABASE_URL names a PostgreSQL server to use instead
 * (its maintenance database: the bench creates databases there and drops nothing else).
 * Processes: the embedded Atrium and scaled instances A and B (`node dist/src/main.js`) pinned to
 * core 0, the load generator (bench/load-worker.ts) to core 1, as bench/run.ts runs them; the
 * engines and this process are not pinned.
 *
 * Rows and targets (from the issue):
 *   1. REST GET /v1/models and GET /v1/files/{id} on instance A (the file uploaded through B), req/s
 *      against the embedded Atrium, windows interleaved, median of --runs             ≥ 0.7×
 *   2. multipart upload (POST /v1/files on A) and download (GET /v1/files/{id}/content on B) of a
 *      --file-mb file, MB/s, against the AWS SDK's PutObject (the body as one buffer) and
 *      GetObject of the object Atrium stored, on the same Swift bucket                 ≥ 0.8×
 *      beside them: the SDK's own streamed multipart upload with Atrium's part size (the store's
 *      multipart floor), and the machine's busy cores during Atrium's upload
 *   3. vector-store search over REST on B (POST /v1/vector_stores/{id}/search, query embedding
 *      included, sequential), p50 with --chunks chunks in the store: 100 real files ingested through
 *      A, padded as bench/search-postgres.bench.ts pads (written straight into the PostgreSQL
 *      index: embedding 100k chunks locally would take hours)                          ≤ 50 ms
 *   4. no-op jobs/s through PostgresJobStore: two runners in separate processes
 *      (bench/jobs-worker.ts, a pool of 4 connections each) against one                 ≥ 1.5×
 *      beside it: the busy cores, and the ceiling the machine's cores allow at one instance's CPU
 *      per job
 *   5. RSS of each instance idle after start-up and after the store is searched (B searched it).
 */
import { randomBytes } from "node:crypto";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { Readable } from "node:stream";
import { DeleteObjectCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import OpenAI, { toFile } from "openai";
import pg from "pg";
import { PostgresSearchIndex } from "../src/engines/search/postgres/index.js";
import { openPostgresRecordStore } from "../src/storage/postgres/index.js";
import { S3_PART_BYTES, S3_PARTS_IN_FLIGHT } from "../src/storage/s3-blobs.js";
import { scaledEngines } from "../test/shared/scaled.js";
import { testPostgres } from "../test/shared/postgres.js";
import { testSwift } from "../test/shared/swift.js";
import {
  BENCH_API_KEY,
  Loader,
  ROOT,
  absoluteRow,
  arg,
  checkOnce,
  endRun,
  children,
  cpuSeconds,
  drain,
  fmt,
  measureHttp,
  median,
  printRows,
  reportExited,
  rssOf,
  row,
  startAtrium,
  stopServer,
  timeCalls,
  timed,
  warmUp,
  type HttpLoad,
  type HttpResult,
  type HttpTarget,
  type Server,
} from "./harness.js";
import { docs, documentChunks, encoder, padding, questions } from "./search-postgres.bench.js";

const QUICK = process.argv.includes("--quick");
const CHUNKS = Number(arg("chunks", QUICK ? "10000" : "100000"));
const RUNS = Number(arg("runs", QUICK ? "2" : "3"));
const LOAD: HttpLoad = {
  connections: Number(arg("connections", "10")),
  pipelining: 1,
  warmupS: Number(arg("warmup", "0.4")),
  windowS: Number(arg("window", QUICK ? "1" : "2")),
};
const FILE_MB = Number(arg("file-mb", QUICK ? "32" : "128"));
const QUERIES = Number(arg("queries", QUICK ? "40" : "100"));
const JOBS = Number(arg("jobs", QUICK ? "2000" : "5000"));
const SKIP = new Set(arg("skip", "").split(",").filter(Boolean));

// The test helpers read ATRIUM_TEST_DATABASE_URL; the bench's own name for it wins.
if (process.env.ATRIUM_BENCH_DATABASE_URL) process.env.ATRIUM_TEST_DATABASE_URL = process.env.ATRIUM_BENCH_DATABASE_URL;

const auth = { authorization: `Bearer ${BENCH_API_KEY}` };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const f1 = (n: number) => n.toFixed(1);
const load = () => os.loadavg().map(f1).join(" ");
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(0)} MB`;
const client = (s: Server) => new OpenAI({ apiKey: BENCH_API_KEY, baseURL: `${s.url}/v1`, maxRetries: 0, timeout: 120_000 });

async function uploadSmallFile(s: Server): Promise<string> {
  const file = await client(s).files.create({ file: await toFile(Buffer.from('{"a":1}\n'.repeat(128)), "bench.jsonl"), purpose: "user_data" });
  return file.id;
}

// ---------- 1. REST ----------

async function restBench(loader: Loader, dir: string, embedded: Server, a: Server, b: Server, env: Record<string, string>): Promise<void> {
  const embeddedFile = await uploadSmallFile(embedded);
  const scaledFile = await uploadSmallFile(b); // read through A: every GET crosses instances
  // The same instance without Redis (rate limits in memory), to tell the database's share from the limiter's.
  const { ATRIUM_REDIS_URL: _, ATRIUM_REDIS_KEY_PREFIX: __, ...pgEnv } = env;
  const pgOnly = await startAtrium(dir, "scaled-no-redis", { env: pgEnv });
  const targets: HttpTarget[] = [
    { key: "embedded models", server: () => embedded, path: "/v1/models", method: "GET", headers: auth },
    { key: "scaled models", server: () => a, path: "/v1/models", method: "GET", headers: auth },
    { key: "embedded file", server: () => embedded, path: `/v1/files/${embeddedFile}`, method: "GET", headers: auth },
    { key: "scaled file", server: () => a, path: `/v1/files/${scaledFile}`, method: "GET", headers: auth },
    { key: "no-redis models", server: () => pgOnly, path: "/v1/models", method: "GET", headers: auth },
    { key: "no-redis file", server: () => pgOnly, path: `/v1/files/${scaledFile}`, method: "GET", headers: auth },
  ];
  for (const t of targets) await checkOnce(t);
  for (const t of targets) await warmUp(loader, t, 0.75, LOAD);
  const results = new Map<string, HttpResult[]>(targets.map((t) => [t.key, []]));
  for (let run = 0; run < RUNS; run++) for (const t of targets) results.get(t.key)!.push(await measureHttp(loader, t, LOAD));
  const m = (k: string) => median(results.get(k)!.map((r) => r.rps));
  const c = (k: string) => median(results.get(k)!.map((r) => r.cpuUs));
  const line = (name: string, what: string) =>
    row(name, "embedded, SQLite + disk", m(`embedded ${what}`), m(`scaled ${what}`), "req/s", 0.7, { base: c(`embedded ${what}`), atrium: c(`scaled ${what}`) });
  line("REST GET /v1/models", "models");
  line("REST GET /v1/files/{id} (made on B)", "file");
  await stopServer(pgOnly);
  printRows(
    `1. Request rate: scaled instance A (PostgreSQL + Redis rate limits) against the embedded Atrium, ${LOAD.connections} connections,\n` +
      `   ${LOAD.windowS} s windows interleaved, median of ${RUNS}`,
  );
  const split = (what: string) =>
    `${fmt(m(`no-redis ${what}`), "req/s")}, ${c(`no-redis ${what}`).toFixed(0)} µs/request (${(m(`no-redis ${what}`) / m(`embedded ${what}`)).toFixed(2)}× embedded)`;
  console.log(`  the same instance without Redis (limits in memory), where the time goes: /v1/models ${split("models")}; /v1/files/{id} ${split("file")}`);
}

// ---------- 2. files ----------

/** The key of the largest object under the bucket (the file Atrium just stored). */
async function largestObject(s3: S3Client, bucket: string): Promise<string> {
  let best: { key: string; size: number } | undefined;
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, ContinuationToken: token }));
    for (const o of page.Contents ?? []) if (!best || (o.Size ?? 0) > best.size) best = { key: o.Key!, size: o.Size ?? 0 };
    token = page.NextContinuationToken;
  } while (token);
  if (!best) throw new Error(`bucket ${bucket} is empty`);
  return best.key;
}

async function fileBench(loader: Loader, a: Server, b: Server, s3: S3Client, bucket: string): Promise<void> {
  const bytes = FILE_MB << 20;
  const body = randomBytes(bytes);
  const parts = (o: number) => Readable.from((function* () {
    for (; o < bytes; o += 1 << 20) yield body.subarray(o, o + (1 << 20));
  })());
  const atriumRound = async () => {
    const busy0 = machineBusySeconds();
    const cpu0 = cpuSeconds(a.proc.pid!);
    const t0 = performance.now();
    const up = await loader.run({
      kind: "upload",
      url: `${a.url}/v1/files`,
      method: "POST",
      headers: auth,
      bytes,
      multipart: { fields: { purpose: "user_data" }, fileField: "file", filename: "bench.bin" },
    });
    if (up.status !== 200) throw new Error(`upload through A: HTTP ${up.status}: ${up.body}`);
    const upS = (performance.now() - t0) / 1000;
    const upCores = (machineBusySeconds() - busy0) / upS;
    const upA = (cpuSeconds(a.proc.pid!) - cpu0) / upS;
    const id = JSON.parse(up.body).id as string;
    const down = await loader.run({ kind: "download", url: `${b.url}/v1/files/${id}/content`, headers: auth, times: 1 });
    if (down.status !== 200) throw new Error(`download through B: HTTP ${down.status}`);
    const key = await largestObject(s3, bucket);
    const sdkGet = await timed(bytes, async () => drain((await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body as AsyncIterable<unknown>));
    const sdkPut = await timed(bytes, () => s3.send(new PutObjectCommand({ Bucket: bucket, Key: "bench/sdk-put", Body: body, ContentLength: bytes })));
    const sdkGetPlain = await timed(bytes, async () => drain((await s3.send(new GetObjectCommand({ Bucket: bucket, Key: "bench/sdk-put" }))).Body as AsyncIterable<unknown>));
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "bench/sdk-put" }));
    // The SDK's own streamed multipart upload with Atrium's part size and parts in flight: what
    // the store's multipart path allows before Atrium's own hop.
    const sdkMultipart = await timed(bytes, () => new Upload({ client: s3, params: { Bucket: bucket, Key: "bench/sdk-multipart", Body: parts(0) }, partSize: S3_PART_BYTES, queueSize: S3_PARTS_IN_FLIGHT }).done());
    await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: "bench/sdk-multipart" }));
    await (await fetch(`${a.url}/v1/files/${id}`, { method: "DELETE", headers: auth })).arrayBuffer();
    return { up: up.mbps as number, down: down.mbps as number, sdkPut, sdkGet, sdkGetPlain, sdkMultipart, upCores, upA };
  };
  await atriumRound(); // warm-up
  const r: Array<Awaited<ReturnType<typeof atriumRound>>> = [];
  for (let run = 0; run < RUNS; run++) r.push(await atriumRound());
  const m = (k: keyof (typeof r)[number]) => median(r.map((x) => x[k]));
  row(`multipart upload ${FILE_MB} MiB (POST /v1/files on A)`, "SDK PutObject", m("sdkPut"), m("up"), "MB/s", 0.8);
  row(`download ${FILE_MB} MiB (GET /v1/files/{id}/content on B)`, "SDK GetObject, same object", m("sdkGet"), m("down"), "MB/s", 0.8);
  printRows(`2. File throughput through Atrium on Swift (s3api) against the AWS SDK on the same bucket, 1 stream, median of ${RUNS}`);
  console.log(`  for reference: SDK GetObject of the SDK's own single-part object ${m("sdkGetPlain").toFixed(0)} MB/s (Atrium's objects are multipart uploads)`);
  console.log(
    `  the store's multipart floor: the SDK's own streamed multipart upload (${S3_PART_BYTES >> 20} MiB parts, ${S3_PARTS_IN_FLIGHT} in flight) ${m("sdkMultipart").toFixed(0)} MB/s ` +
      `(${(m("sdkMultipart") / m("sdkPut")).toFixed(2)}× PutObject); during Atrium's upload ${m("upCores").toFixed(2)} of ${os.cpus().length} cores were busy, instance A ${m("upA").toFixed(2)} of them`,
  );
}

// ---------- 3. search ----------

/** Waits until the process uses under a tenth of a core for 2 s: a graph build in its worker thread has ended. */
async function quiet(s: Server, limitS: number): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    const c0 = cpuSeconds(s.proc.pid!);
    await sleep(2000);
    if (cpuSeconds(s.proc.pid!) - c0 < 0.2 || Date.now() - t0 > limitS * 1000) return (Date.now() - t0) / 1000;
  }
}

async function searchBench(a: Server, b: Server, databaseUrl: string): Promise<void> {
  const t0 = performance.now();
  const chunks = await documentChunks(); // the corpus embedded here: the padding's vectors lie near these
  await encoder.close?.();
  const ca = client(a);
  const cb = client(b);
  const store = await ca.vectorStores.create({ name: `scale-out-${CHUNKS}` });
  const files: string[] = [];
  for (let g = 0; g < 100; g++) files.push((await ca.files.create({ file: await toFile(Buffer.from(docs[g]!.text), `real${g}.txt`), purpose: "assistants" })).id);
  const batch = await ca.vectorStores.fileBatches.create(store.id, { files: files.map((file_id, g) => ({ file_id, attributes: { group: g } })) });
  for (;;) {
    const state = await cb.vectorStores.fileBatches.retrieve(batch.id, { vector_store_id: store.id });
    if (state.status !== "in_progress") {
      if (state.file_counts.completed !== files.length) throw new Error(`ingestion: ${JSON.stringify(state.file_counts)}`);
      break;
    }
    await sleep(500);
  }
  const ingested = (performance.now() - t0) / 1000;

  // Padding written straight into the shared index; every padded chunk belongs to one of the real
  // files (by its group), so hits resolve to files as real ones do.
  const records = await openPostgresRecordStore(databaseUrl, { poolSize: 4 });
  const t1 = performance.now();
  let real = 0;
  try {
    const index = PostgresSearchIndex.fromStore(records);
    real = (await index.stats(store.id)).chunks;
    for (const part of padding(chunks, chunks.length + CHUNKS - real))
      await index.addChunks(
        store.id,
        part.map((c) => ({ ...c, fileId: files[Number(c.attributes!.group)]! })),
      );
    const { chunks: n } = await index.stats(store.id);
    if (n !== Math.max(CHUNKS, real)) throw new Error(`the store holds ${n} chunks, not ${CHUNKS}`);
    await index.close();
  } finally {
    await records.close();
  }
  const padded = (performance.now() - t1) / 1000;

  // B loads the store's vectors on its first search and, past 20,000, builds the graph in a worker.
  const t2 = performance.now();
  await cb.vectorStores.search(store.id, { query: questions[0]!.question });
  const settled = await quiet(b, 900);
  for (let i = 0; i < 10; i++) await cb.vectorStores.search(store.id, { query: questions[i]!.question });
  console.log(
    `\n  store: ${real} chunks from 100 files ingested through A (with the corpus embedded here: ${f1(ingested)} s), padded to ` +
      `${CHUNKS.toLocaleString("en-US")} in ${f1(padded)} s; B loaded it and went quiet in ${f1((performance.now() - t2) / 1000)} s (waited ${f1(settled)} s)`,
  );

  const p50s: Array<[string, number, number, number]> = [];
  for (const [label, filters] of [
    ["no filter", undefined],
    ["filter group eq 7 (1 %)", { type: "eq" as const, key: "group", value: 7 }],
  ] as const) {
    const q = (i: number) => questions[(i * 7) % questions.length]!.question;
    const r = await timeCalls(QUERIES, async (i) => (await cb.vectorStores.search(store.id, { query: q(i), max_num_results: 10, ...(filters && { filters }) })).data.length);
    p50s.push([label, r.p50, r.p99, r.mean]);
  }
  // The query embedding alone on the same instance, for reading the rows.
  const e50 = (await timeCalls(30, (i) => cb.embeddings.create({ model: "atrium-embed-use-lite", input: questions[i]!.question }).then(() => {}))).p50;
  for (const [label, p50, p99, results] of p50s)
    absoluteRow(`search p50, ${CHUNKS.toLocaleString("en-US")} chunks, ${label} (REST on B)`, `${f1(p50)} ms (p99 ${f1(p99)}, ${f1(results)} results)`, `POST /v1/embeddings alone: p50 ${f1(e50)} ms`, "≤ 50 ms", p50 <= 50);
  printRows(
    `3. Vector-store search on PostgreSQL, query embedding included, ${QUERIES} sequential queries each${CHUNKS === 100_000 ? "" : ` (--chunks ${CHUNKS}: the target is set at 100,000)`}`,
  );
}

// ---------- 4. jobs ----------

interface Worker {
  proc: ChildProcess;
  lines: AsyncIterator<string>;
}

async function startWorker(databaseUrl: string): Promise<Worker> {
  const proc = spawn(process.execPath, ["--import", "tsx", "bench/jobs-worker.ts", "--database-url", databaseUrl, "--pool", "4"], { cwd: ROOT, stdio: ["pipe", "pipe", "inherit"] });
  children.push(proc);
  const lines = createInterface({ input: proc.stdout! })[Symbol.asyncIterator]();
  const first = await lines.next();
  if (first.value !== "ready") throw new Error(`jobs worker: ${first.value ?? `exited (${proc.exitCode})`}`);
  return { proc, lines };
}

/** The machine's busy CPU time so far, in seconds, every core together (/proc/stat). */
function machineBusySeconds(): number {
  const f = fs.readFileSync("/proc/stat", "utf8").split("\n")[0]!.trim().split(/\s+/).slice(1).map(Number);
  return (f.reduce((x, y) => x + y, 0) - f[3]! - f[4]!) / 100; // all but idle and iowait, in USER_HZ
}

interface JobsRound {
  /** jobs/s */
  rate: number;
  /** Cores busy on the whole machine while the runners drained the queue, and the runners' share. */
  machineCores: number;
  runnerCores: number;
}

/** `instances` runners draining JOBS queued no-op jobs (the workers' start-up not timed). */
async function jobsRound(databaseUrl: string, db: pg.Client, instances: number): Promise<JobsRound> {
  await db.query("DELETE FROM jobs");
  await db.query(
    `INSERT INTO jobs (id, kind, project_id, payload, state, run_after, created_at, updated_at)
     SELECT 'job_bench_' || n, 'noop', 'proj_bench', '{}', 'queued', 0, 0, 0 FROM generate_series(1, $1) AS n`,
    [JOBS],
  );
  const workers = await Promise.all(Array.from({ length: instances }, () => startWorker(databaseUrl)));
  const busy0 = machineBusySeconds();
  const t0 = performance.now();
  for (const w of workers) w.proc.stdin!.write("go\n");
  const ends = await Promise.all(workers.map(async (w) => JSON.parse((await w.lines.next()).value as string) as { ran: number; cpuMs: number }));
  const s = (performance.now() - t0) / 1000;
  const machineCores = (machineBusySeconds() - busy0) / s;
  const ran = ends.map((e) => e.ran);
  const { rows } = await db.query<{ n: string }>("SELECT count(*) AS n FROM jobs WHERE state = 'succeeded'");
  if (Number(rows[0]!.n) !== JOBS || ran.reduce((x, y) => x + y, 0) !== JOBS) throw new Error(`jobs: ${rows[0]!.n} succeeded, runners ran ${ran.join(" + ")}, of ${JOBS}`);
  await Promise.all(workers.map((w) => new Promise((r) => (w.proc.exitCode !== null ? r(null) : w.proc.once("exit", r)))));
  return { rate: JOBS / s, machineCores, runnerCores: ends.reduce((x, e) => x + e.cpuMs, 0) / 1000 / s };
}

async function jobsBench(): Promise<void> {
  const pgs = await testPostgres();
  const url = await pgs.newDatabase("atrium_jobs_bench");
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  try {
    (await startWorker(url)).proc.kill(); // creates the jobs table
    await jobsRound(url, db, 1); // warm-up (database caches)
    const one: JobsRound[] = [];
    const two: JobsRound[] = [];
    for (let run = 0; run < RUNS; run++) {
      one.push(await jobsRound(url, db, 1));
      two.push(await jobsRound(url, db, 2));
    }
    const rate = (r: JobsRound[]) => median(r.map((x) => x.rate));
    row(`no-op jobs, 2 instances (processes, pool 4 each)`, "1 instance", rate(one), rate(two), "jobs/s", 1.5);
    printRows(`4. Job throughput on PostgresJobStore, ${JOBS.toLocaleString("en-US")} no-op jobs queued then drained, concurrency 16 per runner, median of ${RUNS}`);
    // What bounds the ratio: a runner and its database share the machine's cores, so once they are
    // all busy a second instance can only divide them.
    const cores = (r: JobsRound[]) => {
      const m = median(r.map((x) => x.machineCores));
      const w = median(r.map((x) => x.runnerCores));
      const cpuPerJob = median(r.map((x) => (x.machineCores / x.rate) * 1e6));
      return `${m.toFixed(2)} of ${os.cpus().length} cores busy (runners ${w.toFixed(2)}, the rest — PostgreSQL, this process — ${(m - w).toFixed(2)}), ${cpuPerJob.toFixed(0)} µs of CPU per job`;
    };
    console.log(`  machine while draining: 1 instance ${cores(one)}; 2 instances ${cores(two)}`);
    // The most a second instance could add: every core busy at one instance's CPU per job.
    const ceiling = os.cpus().length / median(one.map((x) => x.machineCores / x.rate)) / rate(one);
    console.log(`  ceiling on this machine: all ${os.cpus().length} cores at one instance's CPU per job would run ${ceiling.toFixed(2)}× one instance (target 1.5×)`);
  } finally {
    await db.end();
    await pgs.dropDatabase(url);
  }
}

// ---------- main ----------

async function main(): Promise<void> {
  const t0 = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-scale-out-bench-"));
  console.log(
    `Atrium scale-out bench — node ${process.version}, ${os.cpus()[0]?.model} ×${os.cpus().length}; servers on core 0, load on core 1, engines unpinned; ` +
      `${QUICK ? "quick run; " : ""}load average ${load()}. Figures on a shared machine are indicative; the ratios are measured side by side.`,
  );
  const loader = new Loader();
  const servers: Server[] = [];
  try {
    if (["rest", "files", "search"].every((k) => SKIP.has(k))) return await jobsBench();
    const engines = await scaledEngines();
    const swift = await testSwift();
    const s3 = swift.client();
    const embedded = await startAtrium(dir, "embedded");
    const a = await startAtrium(dir, "scaled-a", { env: engines.env });
    const b = await startAtrium(dir, "scaled-b", { env: engines.env });
    servers.push(embedded, a, b);
    await sleep(2000);
    const idle = new Map(servers.map((s) => [s.name, rssOf(s.proc.pid!).rss]));
    console.log(`engines up; instances started (${((Date.now() - t0) / 1000).toFixed(0)} s)`);

    if (!SKIP.has("rest")) await restBench(loader, dir, embedded, a, b, engines.env);
    if (!SKIP.has("files")) await fileBench(loader, a, b, s3, engines.bucket!);
    if (!SKIP.has("search")) await searchBench(a, b, engines.databaseUrl);
    console.log(`\n5. Memory per instance (RSS; 1 MB = 10^6 bytes)${SKIP.has("search") ? "" : `, after B searched the ${CHUNKS.toLocaleString("en-US")}-chunk store`}`);
    for (const s of servers) console.log(`  ${s.name.padEnd(28)} idle after start-up ${mb(idle.get(s.name)!)}, now ${mb(rssOf(s.proc.pid!).rss)}`);
    s3.destroy();
    if (!SKIP.has("jobs")) await jobsBench();
  } catch (e) {
    reportExited(servers);
    throw e;
  } finally {
    await endRun(loader, dir);
  }
  console.log(`\nwall time ${((Date.now() - t0) / 1000).toFixed(0)} s; load average ${load()}`);
}

try {
  await main();
  process.exit(0);
} catch (e) {
  console.error(e);
  process.exit(1);
}

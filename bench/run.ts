/**
 * `npm run bench` (after `npm run build`): Atrium's HTTP paths against bare baselines measured in
 * the same run, printed as ratios (docs/architecture.md, principle 8: absolute figures drift ±30 % on these
 * shared machines; ratios measured side by side do not).
 *
 *   node --import tsx bench/run.ts [--runs 3] [--window 2] [--warmup 0.4] [--connections 10]
 *        [--pipelining 1] [--file-mb 512] [--log-level warn] [--only http|files] [--no-info-logging]
 *
 * Processes: Atrium (`node dist/src/main.js` with `npm start`'s malloc settings, temp
 * ATRIUM_DATA_DIR, ATRIUM_API_KEY) and the bare baselines (bench/bare-server.ts) each run pinned
 * to core 0 (`taskset -c 0`); the load generator
 * (bench/load-worker.ts: autocannon's programmatic API, plus a streaming upload/download client)
 * runs pinned to core 1. Both sides get the same connections and pipelining. After one warm-up
 * pass over every request shape (JIT), every figure is the median of `--runs` measured windows,
 * each after its own short warm-up, with baseline and Atrium windows interleaved so drift hits
 * both alike. Next to req/s the table gives the server's CPU
 * time per request (user+system from /proc over the window): when other processes share the
 * cores, req/s swings while CPU/request moves much less. The file phase runs on fresh processes.
 *
 * Atrium runs with the default ATRIUM_LOG_LEVEL=info (one JSON line per request, to a file) for the
 * main figures: the default is what users run. A second Atrium at `warn` (no request log) is then
 * measured in windows interleaved with the first, to show what the request log costs (target:
 * info ≥ 0.92× warn).
 *
 * Rows and targets (issue 21, item 2; the default config: info log, rate limits and metrics on):
 *   REST GET /v1/models                              vs a bare Fastify route calling the same
 *                                                    implementation (same storage work)  ≥ 0.85×
 *   REST POST /v1/uploads                            the same, two inserts               ≥ 0.7×
 *   Connect unary ListModels, JSON and binary         vs the same bare GET route          ≥ 0.8×
 *   REST GET /v1/models/gpt-4o (a built-in model: no storage work, the transport alone)
 *                                                    vs the bare GET /v1/models/:model   ≥ 0.75×
 *   Connect unary GetModel, JSON and binary           vs the same bare route              ≥ 0.6×
 *   + for reference, stock @connectrpc/connect-fastify serving the same implementation, the
 *     same Atrium with ATRIUM_DIRECT_UNARY=off (REST GET, GetModel: what the direct path is worth),
 *     and the bare GET routes also sending the response headers every Atrium answer carries
 *     (what those headers alone cost: the room a target leaves for the rest is what is left)
 *   file download (GET /v1/files/{id}/content)        vs the best of fs.createReadStream routes
 *                                                    with 64 KiB and 1 MiB chunks        ≥ 0.8×
 *   multipart upload (POST /v1/files)                 vs the best of a busboy-to-disk route and
 *                                                    a raw PUT-to-disk route (both fsync, as
 *                                                    Atrium does)                        ≥ 0.8×
 *   Atrium's peak RSS over the upload+download rounds of a --file-mb file   ≤ 160 MB (issue 21;
 *                                                    < 150 MB before it), and about the same
 *                                                    as for a 64 MiB file
 *
 * Where the time goes: bench/profile.ts (CPU profile of one request shape under load).
 */
import * as fs from "node:fs";
import os from "node:os";
import path from "node:path";
import {
  BENCH_API_KEY,
  Loader,
  arg,
  checkOnce,
  endRun,
  fmt,
  freePort,
  measureHttp,
  median,
  printRows,
  reportExited,
  resetPeak,
  rssOf,
  row,
  startAtrium,
  startServer,
  stopServer,
  warmUp,
  type HttpLoad,
  type HttpResult,
  type HttpTarget,
  type Server,
} from "./harness.js";


const RUNS = Number(arg("runs", "3"));
const WINDOW_S = Number(arg("window", "2"));
const WARMUP_S = Number(arg("warmup", "0.4"));
const CONNECTIONS = Number(arg("connections", "10"));
const PIPELINING = Number(arg("pipelining", "1"));
const FILE_BYTES = Number(arg("file-mb", "512")) * 1024 * 1024;
const LOG_LEVEL = arg("log-level", "info");
const ONLY = arg("only", "");
const INFO_LOGGING = !process.argv.includes("--no-info-logging");

async function startBare(dir: string, tag: string): Promise<Server> {
  const port = await freePort();
  return startServer(
    "bare",
    [process.execPath, "--import", "tsx", "bench/bare-server.ts"],
    { BENCH_PORT: String(port), BENCH_DIR: path.join(dir, `bare-${tag}`) },
    `http://127.0.0.1:${port}`,
    path.join(dir, `bare-${tag}.log`),
  );
}


// ---------- what is measured ----------

const auth = { authorization: `Bearer ${BENCH_API_KEY}` };
const LOAD: HttpLoad = { connections: CONNECTIONS, pipelining: PIPELINING, warmupS: WARMUP_S, windowS: WINDOW_S };
const uploadBody = JSON.stringify({ bytes: 1024, filename: "bench.jsonl", mime_type: "application/jsonl", purpose: "batch" });

function httpTargets(atrium: () => Server, bare: () => Server): HttpTarget[] {
  const json = { "content-type": "application/json" };
  const proto = { "content-type": "application/proto" };
  const connect = { "connect-protocol-version": "1" };
  const list = "/atrium.v1.ModelsService/ListModels";
  const get = "/atrium.v1.ModelsService/GetModel";
  // GetModelRequest{model: "gpt-4o"} in the binary encoding: field 1, length 6.
  const getBin = Buffer.from([0x0a, 6, ...Buffer.from("gpt-4o")]).toString("base64");
  return [
    { key: "bare GET /v1/models", server: bare, path: "/v1/models", method: "GET", headers: {} },
    { key: "bare GET /v1/models/gpt-4o", server: bare, path: "/v1/models/gpt-4o", method: "GET", headers: {} },
    { key: "bare+headers GET /v1/models", server: bare, path: "/with-headers/v1/models", method: "GET", headers: {} },
    { key: "bare+headers GET /v1/models/gpt-4o", server: bare, path: "/with-headers/v1/models/gpt-4o", method: "GET", headers: {} },
    { key: "bare POST /v1/uploads", server: bare, path: "/v1/uploads", method: "POST", headers: json, body: uploadBody },
    { key: "REST GET /v1/models", server: atrium, path: "/v1/models", method: "GET", headers: auth },
    { key: "REST GET /v1/models/gpt-4o", server: atrium, path: "/v1/models/gpt-4o", method: "GET", headers: auth },
    { key: "REST POST /v1/uploads", server: atrium, path: "/v1/uploads", method: "POST", headers: { ...auth, ...json }, body: uploadBody },
    { key: "Connect JSON ListModels", server: atrium, path: list, method: "POST", headers: { ...auth, ...json, ...connect }, body: "{}" },
    { key: "Connect binary ListModels", server: atrium, path: list, method: "POST", headers: { ...auth, ...proto, ...connect }, bodyBase64: "" },
    { key: "Connect JSON GetModel", server: atrium, path: get, method: "POST", headers: { ...auth, ...json, ...connect }, body: '{"model":"gpt-4o"}' },
    { key: "Connect binary GetModel", server: atrium, path: get, method: "POST", headers: { ...auth, ...proto, ...connect }, bodyBase64: getBin },
    { key: "stock JSON ListModels", server: bare, path: list, method: "POST", headers: { ...json, ...connect }, body: "{}" },
    { key: "stock binary ListModels", server: bare, path: list, method: "POST", headers: { ...proto, ...connect }, bodyBase64: "" },
  ];
}

// ---------- main ----------

async function main() {
  const t0 = Date.now();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-bench-"));
  console.log(
    `Atrium HTTP bench — node ${process.version}, ${os.cpus()[0]?.model} ×${os.cpus().length}; servers on core 0, load on core 1; ` +
      `${CONNECTIONS} connections, pipelining ${PIPELINING}; ${WARMUP_S}s warm-up + ${WINDOW_S}s window, median of ${RUNS}; ATRIUM_LOG_LEVEL=${LOG_LEVEL}`,
  );
  const loader = new Loader();
  const servers: Server[] = [];
  const track = (s: Server) => (servers.push(s), s);
  try {
    if (ONLY !== "files") {
      const atrium = track(await startAtrium(dir, "http", { logLevel: LOG_LEVEL }));
      const bare = track(await startBare(dir, "http"));
      await httpBench(loader, dir, atrium, bare);
      await stopServer(atrium);
      await stopServer(bare);
      console.log(`  (${((Date.now() - t0) / 1000).toFixed(0)} s)`);
    }
    if (ONLY !== "http") {
      // Fresh processes, so the RSS figures are the file transfers' and not the request phase's.
      const atrium = track(await startAtrium(dir, "files", { logLevel: LOG_LEVEL }));
      const bare = track(await startBare(dir, "files"));
      await fileBench(loader, atrium, bare);
    }
  } catch (e) {
    // A server that died mid-run (e.g. dist/ rebuilt under it by a concurrent `npm run build`).
    reportExited(servers);
    throw e;
  } finally {
    await endRun(loader, dir);
  }
  console.log(`\nwall time ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}

async function httpBench(loader: Loader, dir: string, atrium: Server, bare: Server) {
  const targets = httpTargets(() => atrium, () => bare);
  for (const t of targets) await checkOnce(t);
  for (const t of targets) await warmUp(loader, t, 0.75, LOAD);
  const results = new Map<string, HttpResult[]>(targets.map((t) => [t.key, []]));
  for (let run = 0; run < RUNS; run++) for (const t of targets) results.get(t.key)!.push(await measureHttp(loader, t, LOAD));
  const m = (k: string) => median(results.get(k)!.map((r) => r.rps));
  const c = (k: string) => median(results.get(k)!.map((r) => r.cpuUs));
  const line = (name: string, base: string, atrium: string, target: number) =>
    row(name, base, m(base), m(atrium), "req/s", target, { base: c(base), atrium: c(atrium) });
  line("REST GET /v1/models", "bare GET /v1/models", "REST GET /v1/models", 0.85);
  line("REST POST /v1/uploads", "bare POST /v1/uploads", "REST POST /v1/uploads", 0.7);
  line("Connect unary ListModels, JSON", "bare GET /v1/models", "Connect JSON ListModels", 0.8);
  line("Connect unary ListModels, binary", "bare GET /v1/models", "Connect binary ListModels", 0.8);
  line("REST GET /v1/models/gpt-4o", "bare GET /v1/models/gpt-4o", "REST GET /v1/models/gpt-4o", 0.75);
  line("Connect unary GetModel, JSON", "bare GET /v1/models/gpt-4o", "Connect JSON GetModel", 0.6);
  line("Connect unary GetModel, binary", "bare GET /v1/models/gpt-4o", "Connect binary GetModel", 0.6);
  printRows(
    `Request rate, Atrium with ATRIUM_LOG_LEVEL=${LOG_LEVEL}. ListModels/POST do storage work (a SQLite query / two inserts) on both sides;\n` +
      `GetModel of a built-in model does none, so its rows show the transport alone. CPU/request is the server's user+system time\n` +
      `over the window divided by the requests served: it holds steadier than req/s when other processes share the cores`,
  );
  // Reference figures, not Atrium's: req/s, ratio to a bare route, CPU per request.
  const reference = (k: string, bare: string) => `${fmt(m(k), "req/s")} (${(m(k) / m(bare)).toFixed(2)}× of the bare route, CPU ${c(k).toFixed(0)} µs/request)`;
  // What the response headers the spec asks of every answer cost a route that does nothing else:
  // the distance from these to a target is all the room left for auth, limits, metrics and the log.
  console.log(
    `  reference, not Atrium: the same bare routes also sending the headers every Atrium answer carries (request id, version, organization,\n` +
      `  six x-ratelimit-*, processing time) and nothing else: GET /v1/models ${reference("bare+headers GET /v1/models", "bare GET /v1/models")},\n` +
      `  GET /v1/models/gpt-4o ${reference("bare+headers GET /v1/models/gpt-4o", "bare GET /v1/models/gpt-4o")}`,
  );
  console.log(
    `  reference, not Atrium: stock @connectrpc/connect-fastify serving the same ListModels implementation in the bare process (no auth):\n` +
      `  JSON ${reference("stock JSON ListModels", "bare GET /v1/models")}, binary ${reference("stock binary ListModels", "bare GET /v1/models")}`,
  );

  // What the direct unary path (src/transport/direct-unary.ts) is worth: the same server with
  // every request through Fastify's lifecycle, windows interleaved with the main one's.
  const fastifyOnly = await startAtrium(dir, "http-fastify-only", { logLevel: LOG_LEVEL, env: { ATRIUM_DIRECT_UNARY: "off" } });
  try {
    const keys = ["REST GET /v1/models", "REST GET /v1/models/gpt-4o", "Connect JSON GetModel"];
    const { mine: on, theirs: off } = await interleaved(loader, targets, httpTargets(() => fastifyOnly, () => bare), keys, 0.75);
    console.log("  reference: the direct unary path against the same server with ATRIUM_DIRECT_UNARY=off (every request through Fastify's lifecycle), interleaved windows:");
    for (const k of keys)
      console.log(
        `    ${k.padEnd(28)} ${fmt(on(k, "rps"), "req/s")} (${on(k, "cpuUs").toFixed(0)} µs) vs ${fmt(off(k, "rps"), "req/s")} (${off(k, "cpuUs").toFixed(0)} µs) → ${(on(k, "rps") / off(k, "rps")).toFixed(2)}×`,
      );
  } finally {
    await stopServer(fastifyOnly);
  }

  if (INFO_LOGGING) {
    // The request log's cost: the same server at the other level, windows interleaved with the
    // main one so drift hits both alike.
    const otherLevel = LOG_LEVEL === "info" ? "warn" : "info";
    const other = await startAtrium(dir, "http", { logLevel: otherLevel });
    try {
      const keys = ["REST GET /v1/models", "Connect JSON ListModels"];
      const { mine, theirs } = await interleaved(loader, targets, httpTargets(() => other, () => bare), keys, 1);
      const [info, warn] = LOG_LEVEL === "info" ? [mine, theirs] : [theirs, mine];
      for (const k of keys) row(`${k}, log info vs warn`, `same at warn`, warn(k, "rps"), info(k, "rps"), "req/s", 0.92, { base: warn(k, "cpuUs"), atrium: info(k, "cpuUs") });
      printRows("The request log's cost: Atrium at the default ATRIUM_LOG_LEVEL=info (one line per request, to a file) against the same at warn, interleaved windows");
    } finally {
      await stopServer(other);
    }
  }
}

/**
 * The `keys` targets of the main server (`targets`) and of another (`others`), in windows
 * interleaved so drift hits both alike; each side's median of a figure by key.
 */
async function interleaved(loader: Loader, targets: HttpTarget[], others: HttpTarget[], keys: string[], warmUpS: number) {
  const pick = (ts: HttpTarget[], k: string) => ts.find((t) => t.key === k)!;
  for (const k of keys) await checkOnce(pick(others, k));
  for (const k of keys) await warmUp(loader, pick(others, k), warmUpS, LOAD);
  const a = new Map<string, HttpResult[]>(keys.map((k) => [k, []]));
  const b = new Map<string, HttpResult[]>(keys.map((k) => [k, []]));
  for (let run = 0; run < RUNS; run++)
    for (const k of keys) {
      a.get(k)!.push(await measureHttp(loader, pick(targets, k), LOAD));
      b.get(k)!.push(await measureHttp(loader, pick(others, k), LOAD));
    }
  const med = (m: Map<string, HttpResult[]>) => (k: string, f: keyof HttpResult) => median(m.get(k)!.map((r) => r[f]));
  return { mine: med(a), theirs: med(b) };
}

async function fileBench(loader: Loader, atrium: Server, bare: Server) {
  const upload = async (s: Server, p: string, bytes: number, multipart: boolean, headers: Record<string, string> = {}) => {
    const r = await loader.run({
      kind: "upload",
      url: s.url + p,
      method: multipart ? "POST" : "PUT",
      headers,
      bytes,
      multipart: multipart ? { fields: { purpose: "user_data" }, fileField: "file", filename: "bench.bin" } : undefined,
    });
    if (r.status !== 200) throw new Error(`upload ${s.name} ${p}: HTTP ${r.status}: ${r.body}`);
    return r as { mbps: number; body: string };
  };
  const download = async (s: Server, p: string, headers: Record<string, string> = {}, times = 1) => {
    const r = await loader.run({ kind: "download", url: s.url + p, headers, times });
    if (r.status !== 200) throw new Error(`download ${s.name} ${p}: HTTP ${r.status}`);
    return r.mbps as number;
  };
  const del = async (s: Server, p: string, headers: Record<string, string> = {}) => {
    const r = await fetch(s.url + p, { method: "DELETE", headers });
    await r.arrayBuffer();
  };
  const atriumRound = async (bytes: number) => {
    const up = await upload(atrium, "/v1/files", bytes, true, auth);
    const id = JSON.parse(up.body).id as string;
    const down = await download(atrium, `/v1/files/${id}/content`, auth);
    await del(atrium, `/v1/files/${id}`, auth);
    return { up: up.mbps, down };
  };

  // Peak RSS for a small file first, then (reset) over the big rounds below. The bare process
  // is tracked over its own rounds for comparison.
  const pid = atrium.proc.pid!;
  const barePid = bare.proc.pid!;
  const idle = rssOf(pid).rss;
  const bareIdle = rssOf(barePid).rss;
  const canReset = resetPeak(pid);
  await atriumRound(64 * 1024 * 1024);
  const peakSmall = rssOf(pid).hwm;
  resetPeak(pid);
  resetPeak(barePid);

  const r = { up: [] as number[], down: [] as number[], put: [] as number[], mp: [] as number[], d64: [] as number[], d1m: [] as number[] };
  for (let run = 0; run < RUNS; run++) {
    const a = await atriumRound(FILE_BYTES);
    r.up.push(a.up);
    r.down.push(a.down);
    r.mp.push((await upload(bare, "/multipart/mp.bin?sync=1", FILE_BYTES, true)).mbps);
    r.put.push((await upload(bare, "/raw/raw.bin?sync=1", FILE_BYTES, false)).mbps);
    r.d64.push(await download(bare, `/files/raw.bin?hwm=${64 * 1024}`));
    r.d1m.push(await download(bare, `/files/raw.bin?hwm=${1024 * 1024}`));
    await del(bare, "/files/raw.bin");
    await del(bare, "/files/mp.bin");
  }
  const peakBig = rssOf(pid).hwm;
  const barePeak = rssOf(barePid).hwm;
  const m = (xs: number[]) => median(xs);
  const bestDown = m(r.d1m) >= m(r.d64) ? ["createReadStream 1 MiB", m(r.d1m)] : ["createReadStream 64 KiB", m(r.d64)];
  const bestUp = m(r.put) >= m(r.mp) ? ["raw PUT", m(r.put)] : ["busboy multipart", m(r.mp)];
  const mb = FILE_BYTES / 1024 / 1024;
  row(`download ${mb} MiB`, bestDown[0] as string, bestDown[1] as number, m(r.down), "MB/s", 0.8);
  row(`multipart upload ${mb} MiB`, bestUp[0] as string, bestUp[1] as number, m(r.up), "MB/s", 0.8);
  printRows("File throughput (MB/s, 1 stream)");
  console.log(
    `  plain routes: createReadStream 64 KiB ${fmt(m(r.d64), "MB/s")}, 1 MiB ${fmt(m(r.d1m), "MB/s")}; ` +
      `busboy multipart→disk ${fmt(m(r.mp), "MB/s")}, raw PUT→disk ${fmt(m(r.put), "MB/s")} (all fsync before answering)`,
  );
  const MB = 1e6;
  const mbs = (n: number) => `${(n / MB).toFixed(0)} MB`;
  console.log(
    `\nAtrium peak RSS (VmHWM${canReset ? ", reset between phases" : ", lifetime: reset not permitted"}; 1 MB = 10^6 bytes):\n` +
      `  ${mbs(peakBig)} over ${RUNS} uploads+downloads of ${mb} MiB; ${mbs(peakSmall)} over one of 64 MiB; idle after start-up ${mbs(idle)}\n` +
      `  so the transfers add ${mbs(peakBig - idle)} (${mb} MiB) and ${mbs(peakSmall - idle)} (64 MiB) to the idle process\n` +
      `  target ≤ 160 MB: ${peakBig <= 160 * MB ? "yes" : "NO"} (the earlier < 150 MB: ${peakBig < 150 * MB ? "yes" : "no"}); flat in file size (${mb} MiB peak within 15 % of the 64 MiB one): ${peakBig <= peakSmall * 1.15 ? "yes" : "NO"}\n` +
      `  for comparison, the bare process over its plain rounds: ${mbs(barePeak)} (idle ${mbs(bareIdle)}, +${mbs(barePeak - bareIdle)})`,
  );
}

await main();

/**
 * POST /v1/responses/input_tokens throughput against the raw tokenizer, measured in the same run.
 *
 *   node --import tsx bench/input-tokens.bench.ts [--mb 1] [--runs 5] [--warmup 2]
 *
 * The server is Atrium's own `startServer` (src/server.ts) started IN PROCESS (temp data dir, one
 * API key, log level silent), so the figure is the TypeScript sources as they are now, not a
 * possibly stale `dist/`. Client and server share one thread: each request's time includes the
 * client's JSON.stringify and fetch as well as the server's JSON parse, the REST → proto decode
 * (google.protobuf.Value), the proto → JSON round trip in the handler and the count itself. That
 * is the conservative way round (a separate client process would hide the client's share).
 *
 * Text: ~1 MB of English prose (the Markdown under node_modules, as bench/tokenizer.bench.ts
 * builds it), sent as one user message to gpt-4o (o200k_base). Baseline: getEncoding("o200k_base")
 * .countTokens on the same string. One warm-up of the raw count and `--warmup` requests first
 * (JIT, piece cache, keep-alive connection), then `--runs` rounds, each timing one raw count and
 * one request back to back so that machine drift hits both alike; medians are compared.
 * Target: endpoint ≥ 0.9× the raw tokenizer's MB/s. The server counts a text this long in parts
 * on its counting workers (one per core but one, up to 4) at once, so with two workers or more its
 * count takes less wall time than the raw one: the CPU time per round is printed beside the ratio.
 *
 * `main(options)` returns the figures, so bench/run.ts can call it.
 *
 * `pinned(options)` (run after `main` when the built dist/ exists) measures it the way
 * bench/run.ts measures the HTTP paths: the server is `node dist/src/main.js` pinned to core 0,
 * the raw tokenizer runs in its own process pinned to core 0 as well, and the client (this
 * process) moves to core 1 — so the ratio is the server's counting throughput against the raw
 * tokenizer's on the same core, without the client's JSON and fetch work in it (and without the
 * parts' gain: every thread of the server shares core 0).
 *
 * `loopLatency(options)` (also on dist/) times an unrelated GET /v1/models every 10 ms, first on an
 * idle server and then while 1 MB counts run back to back; target p99 < 20 ms under the counts.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import pino from "pino";
import { configFromEnv } from "../src/config.js";
import { startServer } from "../src/server.js";
import { getEncoding, splitAtPieceBoundaries } from "../src/engines/tokenizer/index.js";
import { LONG_TEXT_CHARS } from "../src/services/responses/counting.js";
import { COUNTING_WORKERS } from "../src/services/responses/workers.js";
import { proseText } from "./tokenizer.bench.js";
import { startChildServer, tempDir } from "../test/shared/server.js";
import { pct, serverNodeFlags } from "./harness.js";

export interface InputTokensBenchOptions {
  /** Size of the input text in MB (10^6 bytes of UTF-8). */
  mb?: number;
  /** Timed rounds (one raw count + one request each). */
  runs?: number;
  /** Untimed requests before the rounds. */
  warmup?: number;
  /** Print the result lines (default true). */
  print?: boolean;
}

export interface InputTokensBenchResult {
  bytes: number;
  tokens: number;
  rawMs: number;
  endpointMs: number;
  rawMBps: number;
  endpointMBps: number;
  /** endpointMBps / rawMBps (wall-clock medians): the figure the target applies to. */
  ratio: number;
  /** The same ratio from the process's CPU time (user + system) per round: less sensitive to
   *  other processes on a shared machine, though it also counts GC helper threads. */
  cpuRatio: number;
  loadAvg: number;
  target: number;
  pass: boolean;
}

const TARGET = 0.9;
const KEY = "sk-atrium-bench-input-tokens-0001";
const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
};

export async function main(options: InputTokensBenchOptions = {}): Promise<InputTokensBenchResult> {
  const { mb = 1, runs = 11, warmup = 3, print = true } = options;
  const text = proseText(Math.round(mb * 1e6));
  const bytes = Buffer.byteLength(text);
  const enc = getEncoding("o200k_base");
  const body = JSON.stringify({ model: "gpt-4o", input: [{ role: "user", content: text }] });

  const dataDir = mkdtempSync(join(tmpdir(), "atrium-bench-input-tokens-"));
  const server = await startServer(
    configFromEnv({ ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: KEY }),
    { logger: pino({ level: "silent" }) },
  );
  const url = `${server.url}/v1/responses/input_tokens`;
  const request = async (): Promise<number> => {
    const res = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" }, body });
    const json = (await res.json()) as { object?: string; input_tokens?: number };
    if (res.status !== 200 || json.object !== "response.input_tokens") throw new Error(`POST ${url}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
    return json.input_tokens!;
  };

  try {
    const tokens = enc.countTokens(text);
    for (let i = 0; i < warmup; i++) {
      const n = await request();
      // One user message: 3 + enc("user") + text + 3 reply priming. A wrong count is a failed bench.
      if (n !== tokens + 7) throw new Error(`endpoint counted ${n}, raw tokenizer ${tokens} (+7 message frame expected)`);
    }
    const raw: number[] = [];
    const endpoint: number[] = [];
    const rawCpu: number[] = [];
    const endpointCpu: number[] = [];
    const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;
    for (let i = 0; i < runs; i++) {
      let c = process.cpuUsage();
      let t = performance.now();
      if (enc.countTokens(text) !== tokens) throw new Error("raw count changed between runs");
      raw.push(performance.now() - t);
      rawCpu.push(cpuMs(process.cpuUsage(c)));
      c = process.cpuUsage();
      t = performance.now();
      if ((await request()) !== tokens + 7) throw new Error("endpoint count changed between runs");
      endpoint.push(performance.now() - t);
      endpointCpu.push(cpuMs(process.cpuUsage(c)));
    }
    const rawMs = median(raw);
    const endpointMs = median(endpoint);
    const rawMBps = bytes / 1e6 / (rawMs / 1000);
    const endpointMBps = bytes / 1e6 / (endpointMs / 1000);
    const ratio = endpointMBps / rawMBps;
    // Where a request's time goes, measured here on the same body: what the server must do besides
    // the count whatever its code — decode and parse the body, and move the text between threads (a
    // structured clone per hop: JSON worker → event loop, event loop → counting workers, the text
    // in as many parts as the server has counting workers) — and the count of the largest part.
    const bodyBytes = Buffer.from(body);
    const parts = splitAtPieceBoundaries(text, COUNTING_WORKERS, LONG_TEXT_CHARS / 2);
    const largest = parts.reduce((a, b) => (b.length > a.length ? b : a));
    const parseMs: number[] = [];
    const hopMs: number[] = [];
    const partMs: number[] = [];
    for (let i = 0; i < runs; i++) {
      let t = performance.now();
      const parsed = JSON.parse(bodyBytes.toString("utf8")) as unknown;
      parseMs.push(performance.now() - t);
      t = performance.now();
      structuredClone(parsed);
      hopMs.push(performance.now() - t);
      t = performance.now();
      enc.countTokens(largest);
      partMs.push(performance.now() - t);
    }
    const floorMs = median(parseMs) + median(hopMs) * (1 + largest.length / text.length) + median(partMs);
    const cpuRatio = median(rawCpu) / median(endpointCpu);
    const loadAvg = loadavg()[0]!;
    const result: InputTokensBenchResult = { bytes, tokens, rawMs, endpointMs, rawMBps, endpointMBps, ratio, cpuRatio, loadAvg, target: TARGET, pass: ratio >= TARGET };
    if (print) {
      console.log(`input_tokens bench: ${(bytes / 1e6).toFixed(2)} MB prose, ${tokens} tokens (o200k_base, gpt-4o), median of ${runs} after ${warmup} warm-up requests; server in process`);
      console.log(`  raw tokenizer  getEncoding("o200k_base").countTokens  ${rawMs.toFixed(1)} ms  ${rawMBps.toFixed(2)} MB/s   (runs: ${raw.map((x) => x.toFixed(0)).join(", ")} ms)`);
      console.log(`  endpoint       POST /v1/responses/input_tokens        ${endpointMs.toFixed(1)} ms  ${endpointMBps.toFixed(2)} MB/s   (runs: ${endpoint.map((x) => x.toFixed(0)).join(", ")} ms)`);
      console.log(`  CPU time per round (median): raw ${median(rawCpu).toFixed(1)} ms, endpoint ${median(endpointCpu).toFixed(1)} ms → ${cpuRatio.toFixed(2)}×; load average ${loadAvg.toFixed(2)} on ${cpus().length} CPUs`);
      console.log(`  ratio endpoint/raw = ${ratio.toFixed(2)}× (target ≥ ${TARGET}×): ${result.pass ? "MET" : "NOT MET"}`);
      console.log(
        `  where it goes (same body, this thread): UTF-8 decode + JSON.parse ${median(parseMs).toFixed(1)} ms, one thread hop of the parsed body ${median(hopMs).toFixed(1)} ms, ` +
          (parts.length > 1
            ? `the count ${rawMs.toFixed(1)} ms whole or ${median(partMs).toFixed(1)} ms for the largest of the ${parts.length} parts the server's ${COUNTING_WORKERS} counting workers take at once → `
            : `the count ${median(partMs).toFixed(1)} ms (the server has one counting worker: the text goes whole) → `) +
          `${floorMs.toFixed(1)} ms before reading the socket or any other work: at most ${(rawMs / floorMs).toFixed(2)}× with the count in parts off the event loop, ${(rawMs / (median(parseMs) + rawMs)).toFixed(2)}× with everything on one thread`,
      );
    }
    return result;
  } finally {
    await server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));
const tasksetOk = spawnSync("taskset", ["-c", "0", "true"]).status === 0;
const pin = (core: number, cmd: string[]) => (tasksetOk ? ["taskset", "-c", String(core), ...cmd] : cmd);

/** Child mode: count the text `runs` times after a warm-up and print the timings as JSON. */
async function rawWorker(mb: number, runs: number) {
  const text = proseText(Math.round(mb * 1e6));
  const enc = getEncoding("o200k_base");
  enc.countTokens(text);
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    enc.countTokens(text);
    ms.push(performance.now() - t);
  }
  process.stdout.write(JSON.stringify({ ms }) + "\n");
}

function runChild(cmd: string[], env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const c = spawn(cmd[0]!, cmd.slice(1), { env, stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    c.stdout.on("data", (d) => (out += d));
    c.on("exit", (code) => (code === 0 ? resolvePromise(out) : reject(new Error(`${cmd.join(" ")} exited ${code}`))));
  });
}

export async function pinned(options: InputTokensBenchOptions = {}): Promise<InputTokensBenchResult | undefined> {
  const { mb = 1, runs = 11, warmup = 3, print = true } = options;
  const main = join(ROOT, "dist/src/main.js");
  if (!existsSync(main)) {
    if (print) console.log("  (pinned run skipped: build first with `npm run build`)");
    return undefined;
  }
  if (tasksetOk) spawnSync("taskset", ["-cp", "1", String(process.pid)], { stdio: "ignore" });
  const text = proseText(Math.round(mb * 1e6));
  const bytes = Buffer.byteLength(text);
  const body = JSON.stringify({ model: "gpt-4o", input: [{ role: "user", content: text }] });
  const rawOut = await runChild(pin(0, [process.execPath, "--import", "tsx", fileURLToPath(import.meta.url), "--raw-worker", "--mb", String(mb), "--runs", String(runs)]));
  const raw = (JSON.parse(rawOut.trim().split("\n").pop()!) as { ms: number[] }).ms;

  const { base, pid, stop } = await startDistServer((cmd) => pin(0, cmd));
  try {
    const idleRss = rssMb(pid);
    const url = `${base}/v1/responses/input_tokens`;
    const request = async () => {
      const res = await fetch(url, { method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" }, body });
      const json = (await res.json()) as { input_tokens?: number };
      if (res.status !== 200) throw new Error(`POST ${url}: ${res.status}`);
      return json.input_tokens!;
    };
    for (let i = 0; i < warmup; i++) await request();
    const endpoint: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t = performance.now();
      await request();
      endpoint.push(performance.now() - t);
    }
    await new Promise((r) => setTimeout(r, 1000));
    const countedRss = rssMb(pid);
    const rawMs = median(raw);
    const endpointMs = median(endpoint);
    const rawMBps = bytes / 1e6 / (rawMs / 1000);
    const endpointMBps = bytes / 1e6 / (endpointMs / 1000);
    const ratio = endpointMBps / rawMBps;
    const result: InputTokensBenchResult = { bytes, tokens: 0, rawMs, endpointMs, rawMBps, endpointMBps, ratio, cpuRatio: NaN, loadAvg: loadavg()[0]!, target: TARGET, pass: ratio >= TARGET };
    if (print) {
      console.log(`input_tokens bench, pinned: server (dist, default info log) and raw tokenizer each on core 0${tasksetOk ? "" : " (taskset unavailable: not pinned)"}, client on core 1`);
      console.log(`  raw tokenizer  ${rawMs.toFixed(1)} ms  ${rawMBps.toFixed(2)} MB/s   (runs: ${raw.map((x) => x.toFixed(0)).join(", ")} ms)`);
      console.log(`  endpoint       ${endpointMs.toFixed(1)} ms  ${endpointMBps.toFixed(2)} MB/s   (runs: ${endpoint.map((x) => x.toFixed(0)).join(", ")} ms)`);
      console.log(`  ratio endpoint/raw = ${ratio.toFixed(2)}× (target ≥ ${TARGET}×): ${result.pass ? "MET" : "NOT MET"}`);
      console.log(`  server RSS (VmRSS, 1 MB = 10^6 bytes): ${idleRss.toFixed(0)} MB after start-up, ${countedRss.toFixed(0)} MB 1 s after its ${warmup + runs} counts (counting and JSON workers included)`);
    }
    return result;
  } finally {
    await stop();
  }
}

/** `node dist/src/main.js` on a temp data dir at the default info log level, rate limits off; stop() also removes the dir. */
async function startDistServer(wrap: (cmd: string[]) => string[] = (c) => c) {
  const dataDir = tempDir("atrium-bench-input-tokens-");
  const flags = serverNodeFlags();
  const withFlags = (cmd: string[]) => wrap([cmd[0]!, ...flags, ...cmd.slice(1)]);
  // Rate limits off: back-to-back 1 MB counts spend the default 10,000,000 tokens a minute in
  // seconds, and this bench measures counting, not the limiter.
  const child = await startChildServer(dataDir, { ATRIUM_API_KEY: KEY, ATRIUM_LOG_LEVEL: "info", ATRIUM_RATE_LIMITS: "off" }, { wrap: withFlags });
  const stop = async () => {
    await child.stop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  return { base: child.url, pid: child.proc.pid!, stop };
}

/** VmRSS of a process, MB (10^6 bytes). */
const rssMb = (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) * 1024 / 1e6;

const LOOP_TARGET_P99_MS = 20;

/** GET /v1/models every 10 ms for argv[3] ms against argv[1] (key argv[2]); prints the latencies (ms) as JSON. */
const PROBE = `
const [base, key, ms] = process.argv.slice(1);
const until = Date.now() + Number(ms);
const out = [];
(async () => {
  while (Date.now() < until) {
    const t = performance.now();
    const r = await fetch(base + "/v1/models", { headers: { authorization: "Bearer " + key } });
    await r.arrayBuffer();
    if (r.status !== 200) throw new Error("GET /v1/models: " + r.status);
    out.push(performance.now() - t);
    await new Promise((r) => setTimeout(r, 10));
  }
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`;

/**
 * An unrelated GET /v1/models while 1 MB counts run back to back: its latency must stay low, since
 * large counts run on a counting worker and not on the event loop. Compared with the same GETs on
 * an idle server in the same run.
 */
export async function loopLatency(options: InputTokensBenchOptions & { seconds?: number } = {}) {
  const { mb = 1, seconds = 5, print = true } = options;
  const main = join(ROOT, "dist/src/main.js");
  if (!existsSync(main)) {
    if (print) console.log("  (event-loop phase skipped: build first with `npm run build`)");
    return undefined;
  }
  const body = JSON.stringify({ model: "gpt-4o", input: [{ role: "user", content: proseText(Math.round(mb * 1e6)) }] });
  const { base, stop } = await startDistServer();
  const headers = { authorization: `Bearer ${KEY}` };
  // The GETs are timed by a process of their own: this one sends the 1 MB bodies, and its own
  // event loop and collector (stringifying, sending, a heap holding the test text) would
  // otherwise be measured as the server's.
  const models = (ms: number) =>
    new Promise<number[]>((resolvePromise, reject) => {
      const probe = spawn(process.execPath, ["-e", PROBE, base, KEY, String(ms)], { stdio: ["ignore", "pipe", "inherit"] });
      let out = "";
      probe.stdout.on("data", (d) => (out += d));
      probe.once("error", reject);
      probe.once("exit", (code) => (code === 0 ? resolvePromise((JSON.parse(out) as number[]).sort((a, b) => a - b)) : reject(new Error(`GET probe exited with ${code}`))));
    });
  try {
    await models(500);
    const idle = await models(seconds * 1000);
    let counts = 0;
    let counting = true;
    const load = (async () => {
      while (counting) {
        const r = await fetch(`${base}/v1/responses/input_tokens`, { method: "POST", headers: { ...headers, "content-type": "application/json" }, body });
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`POST input_tokens: ${r.status}`);
        counts++;
      }
    })();
    // A failed count stops the loop without an unhandled rejection (which would leave the server
    // running); `await load` below reports it.
    load.catch(() => (counting = false));
    const busy = await models(seconds * 1000);
    counting = false;
    await load;
    const p99 = pct(busy, 99);
    if (print) {
      console.log(`input_tokens bench, event loop: GET /v1/models every 10 ms for ${seconds} s (server: dist, default info log; load average ${loadavg()[0]!.toFixed(2)})`);
      console.log(`  idle server                       p50 ${pct(idle, 50).toFixed(1)} ms  p99 ${pct(idle, 99).toFixed(1)} ms  (${idle.length} requests)`);
      console.log(`  while ${mb} MB counts run back to back  p50 ${pct(busy, 50).toFixed(1)} ms  p99 ${p99.toFixed(1)} ms  (${busy.length} requests, ${counts} counts)`);
      console.log(`  p99 under counting load ${p99.toFixed(1)} ms (target < ${LOOP_TARGET_P99_MS} ms): ${p99 < LOOP_TARGET_P99_MS ? "MET" : "NOT MET"}`);
    }
    return { idleP99: pct(idle, 99), busyP99: p99, pass: p99 < LOOP_TARGET_P99_MS };
  } finally {
    await stop();
  }
}

function arg(name: string): number | undefined {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] !== undefined ? Number(process.argv[i + 1]) : undefined;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  if (process.argv.includes("--raw-worker")) await rawWorker(arg("--mb") ?? 1, arg("--runs") ?? 11);
  else {
    const r = await main({ mb: arg("--mb"), runs: arg("--runs"), warmup: arg("--warmup") });
    const p = await pinned({ mb: arg("--mb"), runs: arg("--runs"), warmup: arg("--warmup") });
    await loopLatency({ mb: arg("--mb"), seconds: arg("--seconds") });
    process.exitCode = r.pass || p?.pass ? 0 : 1;
  }
}

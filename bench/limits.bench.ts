/**
 * The cost of rate limiting and metrics on REST GET /v1/models, as ratios to the same server with
 * both off (ATRIUM_RATE_LIMITS=off ATRIUM_METRICS=off), measured in the same run with windows
 * interleaved (docs/architecture.md, principle 8):
 *
 *   node --import tsx bench/limits.bench.ts [--runs 3] [--window 2] [--warmup 0.5] [--connections 10]
 *        [--cases 0,1,2,3,4]   (rows to run, by index; the baseline, 0, is always run)
 *
 * Servers (`node --import tsx src/main.ts`, so no build is needed; all alike) are pinned to core 0,
 * the load generator (bench/load-worker.ts, autocannon) to core 1. redis-server, for the Redis
 * row, runs on core 1 too, so that Atrium's core runs only Atrium, as when Redis is another host.
 * The organization's limits are set far above the load (1e9 requests and tokens per minute): every
 * request takes the whole limiter path — plan, store, headers — and none is refused.
 *
 * Rows and targets (from the issue): limits + metrics in memory ≥ 0.9×; with Redis ≥ 0.7×. The
 * rows "limits only" and "metrics only" split the in-memory cost. Where other processes load the
 * machine, req/s swings by tens of percent between windows; the server CPU time per request holds
 * better, and the last lines give the limiter's own cost per call measured in this process
 * (RateLimits.admit with its six header writes), which no neighbour can inflate much.
 */
import { create } from "@bufbuild/protobuf";
import { ModelsService } from "../gen/atrium/v1/models_pb.js";
import { MemoryLimitStore } from "../src/limits/memory.js";
import { RateLimits } from "../src/limits/rate-limits.js";
import { RedisLimitStore } from "../src/limits/redis.js";
import { ResponseHeaders } from "../src/transport/response-headers.js";
import type { Principal } from "../src/auth/principal.js";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Loader, arg, children, median } from "./harness.js";
import { freePort } from "../test/shared/ports.js";

const ROOT = path.resolve(fileURLToPath(new URL("..", import.meta.url)));
const API_KEY = "sk-atrium-bench-limits-key-000001";

const RUNS = Number(arg("runs", "3"));
const WINDOW_S = Number(arg("window", "2"));
const WARMUP_S = Number(arg("warmup", "0.5"));
const CONNECTIONS = Number(arg("connections", "10"));
const CASES = arg("cases", "");




/** CPU seconds (user + system) a process has used so far. */
function cpuSeconds(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100;
}

interface Server {
  name: string;
  url: string;
  proc: ChildProcess;
  logFile: string;
}

async function startAtrium(dir: string, name: string, env: Record<string, string>): Promise<Server> {
  const port = await freePort();
  const dataDir = path.join(dir, name.replace(/\W+/g, "-"));
  fs.mkdirSync(dataDir, { recursive: true });
  const config = path.join(dataDir, "atrium.json");
  fs.writeFileSync(
    config,
    JSON.stringify({ organizations: [{ id: "org-default", rate_limits: { requests_per_minute: 1e9, tokens_per_minute: 1e9 }, projects: [{ id: "proj_default" }] }] }),
  );
  const logFile = path.join(dir, `${name.replace(/\W+/g, "-")}.log`);
  const log = fs.openSync(logFile, "w");
  const proc = spawn("taskset", ["-c", "0", process.execPath, "--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: String(port), ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: API_KEY, ATRIUM_CONFIG: config, ATRIUM_LOG_LEVEL: "warn", ...env },
    stdio: ["ignore", log, log],
  });
  fs.closeSync(log);
  children.push(proc);
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${name} exited:\n${fs.readFileSync(logFile, "utf8").slice(-3000)}`);
    try {
      const r = await fetch(`${url}/healthz`);
      await r.arrayBuffer();
      if (r.status === 200) break;
    } catch {}
    if (Date.now() > deadline) throw new Error(`${name} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name, url, proc, logFile };
}

async function startRedis(): Promise<{ url: string; proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn("taskset", ["-c", "1", "redis-server", "--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  children.push(proc);
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise<boolean>((resolve) => {
      const c = net.connect(port, "127.0.0.1");
      c.once("connect", () => c.end("PING\r\n"));
      c.once("data", (d) => resolve(d.toString().startsWith("+PONG")));
      c.once("error", () => resolve(false));
    });
    if (ok) return { url: `redis://127.0.0.1:${port}`, proc };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error("redis-server did not start");
}


const job = (s: Server, warmupS: number, windowS: number) => ({
  kind: "http",
  url: `${s.url}/v1/models`,
  method: "GET",
  headers: { authorization: `Bearer ${API_KEY}` },
  connections: CONNECTIONS,
  pipelining: 1,
  warmupS,
  windowS,
});

async function measure(loader: Loader, s: Server): Promise<{ rps: number; cpuUs: number }> {
  if (WARMUP_S > 0) await loader.run(job(s, 0, WARMUP_S));
  const c0 = cpuSeconds(s.proc.pid!);
  const r = await loader.run(job(s, 0, WINDOW_S));
  const cpu = cpuSeconds(s.proc.pid!) - c0;
  if (r.non2xx || r.errors) throw new Error(`${s.name}: ${r.non2xx} non-2xx responses, ${r.errors} errors`);
  return { rps: r.rps, cpuUs: (cpu / r.total) * 1e6 };
}

/**
 * µs per RateLimits.admit: store, plan, and the six headers written into the transports' own
 * ResponseHeaders and read back as they copy them onto the answer. The memory store answers
 * synchronously, so its loop awaits nothing (as the hot path does not).
 */
async function admitCost(redisUrl?: string): Promise<number> {
  const store = redisUrl ? await RedisLimitStore.open(redisUrl, { prefix: `bench:${Date.now()}:` }) : new MemoryLimitStore();
  const limits = new RateLimits(store, { organizations: [{ id: "o", rate_limits: { requests_per_minute: 1e9, tokens_per_minute: 1e9 } }] });
  const p: Principal = { kind: "key", credentialId: "k", organizationId: "o", projectId: "p", role: "member", scopes: null };
  const method = ModelsService.method.listModels;
  const req = create(method.input);
  const once = (): void | Promise<void> => {
    const h = new ResponseHeaders();
    const read = () => h.forEach(() => {});
    const w = limits.admit(p, method, req, h);
    if (w) return w.then(read);
    read();
  };
  const n = redisUrl ? 5000 : 100_000;
  const loop = async (count: number) => {
    for (let i = 0; i < count; i++) {
      const w = once();
      if (w) await w;
    }
  };
  await loop(n / 10);
  const t0 = process.hrtime.bigint();
  await loop(n);
  const us = Number(process.hrtime.bigint() - t0) / n / 1000;
  await limits.close();
  return us;
}

async function main() {
  if (spawnSync("taskset", ["--version"]).status !== 0) throw new Error("taskset (util-linux) is needed to pin the processes");
  const haveRedis = spawnSync("redis-server", ["--version"]).status === 0;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-bench-limits-"));
  console.log(
    `Rate limits + metrics bench — node ${process.version}, ${os.cpus()[0]?.model} ×${os.cpus().length}; servers on core 0, load${haveRedis ? " and redis-server" : ""} on core 1; ` +
      `REST GET /v1/models, ${CONNECTIONS} connections; ${WARMUP_S}s warm-up + ${WINDOW_S}s window, median of ${RUNS}`,
  );
  const loader = new Loader();
  try {
    const off = { ATRIUM_RATE_LIMITS: "off", ATRIUM_METRICS: "off" };
    const cases: Array<{ name: string; env: Record<string, string>; target?: number }> = [
      { name: "both off (baseline)", env: off },
      { name: "limits (memory) + metrics", env: {}, target: 0.9 },
      { name: "limits (memory) only", env: { ATRIUM_METRICS: "off" } },
      { name: "metrics only", env: { ATRIUM_RATE_LIMITS: "off" } },
    ];
    let redisUrl: string | undefined;
    if (haveRedis) {
      redisUrl = (await startRedis()).url;
      cases.push({ name: "limits (Redis) + metrics", env: { ATRIUM_REDIS_URL: redisUrl }, target: 0.7 });
    } else console.log("  (redis-server not installed: the Redis row is skipped; apt-get install -y redis-server)");
    if (CASES) {
      const keep = new Set([0, ...CASES.split(",").map(Number)]);
      for (let i = cases.length - 1; i >= 0; i--) if (!keep.has(i)) cases.splice(i, 1);
    }
    const servers: Server[] = [];
    for (const c of cases) servers.push(await startAtrium(dir, c.name, c.env));
    for (const s of servers) await loader.run(job(s, 0, 1)); // JIT warm-up of every server
    const results = servers.map(() => [] as Array<{ rps: number; cpuUs: number }>);
    for (let run = 0; run < RUNS; run++) for (let i = 0; i < servers.length; i++) results[i]!.push(await measure(loader, servers[i]!));
    const rps = results.map((r) => median(r.map((x) => x.rps)));
    const cpu = results.map((r) => median(r.map((x) => x.cpuUs)));
    const rows = [["case", "req/s", "ratio to baseline", "target", "meets", "server CPU/request (ratio)"]];
    for (let i = 0; i < cases.length; i++) {
      const ratio = rps[i]! / rps[0]!;
      const c = cases[i]!;
      rows.push([
        c.name,
        Math.round(rps[i]!).toLocaleString("en-US"),
        i === 0 ? "1.00×" : `${ratio.toFixed(2)}×`,
        c.target ? `≥ ${c.target}×` : "",
        c.target ? (ratio >= c.target ? "yes" : "NO") : "",
        `${cpu[i]!.toFixed(0)} µs (${(cpu[0]! / cpu[i]!).toFixed(2)}×)`,
      ]);
    }
    const w = rows[0]!.map((_, j) => Math.max(...rows.map((r) => r[j]!.length)));
    console.log("");
    for (const [i, r] of rows.entries()) {
      console.log(("  " + r.map((cell, j) => cell.padEnd(w[j]!)).join("  ")).trimEnd());
      if (i === 0) console.log("  " + w.map((n) => "-".repeat(n)).join("  "));
    }
    const memoryUs = await admitCost();
    console.log(
      `\n  in-process, per call: RateLimits.admit (memory store, headers written and read) ${memoryUs.toFixed(2)} µs = ` +
        `${((memoryUs / cpu[0]!) * 100).toFixed(1)} % of the baseline's ${cpu[0]!.toFixed(0)} µs of server CPU per GET /v1/models`,
    );
    if (redisUrl) console.log(`  in-process, per call, one at a time: RateLimits.admit (Redis store, one script round trip) ${(await admitCost(redisUrl)).toFixed(1)} µs of latency`);
  } finally {
    loader.close();
    for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 300));
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

// What the benches share: command-line options and, for the HTTP ones, the child processes to
// kill on exit, medians, and the load generator — one long-lived child
// (bench/load-worker.ts) pinned to core 1 while the servers under test run on core 0; jobs go in
// as JSON lines, results come back the same way. Also what several benches print and measure: Atrium
// servers started from dist/, HTTP windows with the server's CPU time, RSS, MB/s of a transfer, and
// the table of rows against their targets.
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { freePort } from "../test/shared/ports.js";
import { MALLOC_ENV } from "../test/shared/malloc-env.js";

export { freePort };

export const ROOT = path.resolve(fileURLToPath(new URL("..", import.meta.url)));

/** The standard key every Atrium a bench starts is seeded with (ATRIUM_API_KEY). */
export const BENCH_API_KEY = "sk-atrium-bench-standard-key-000001";

/** Every process a bench starts; killed when the bench exits, however it exits. */
export const children: ChildProcess[] = [];
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});

/** `--name value` from the command line, else `def`. */
export function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

/** The `p`-th percentile of `xs` (nearest rank). */
export const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]!;

/**
 * `n` sequential calls of `call(i)`, each timed: p50 and p99 in ms, and the mean of the numbers the
 * calls return (e.g. results per search).
 */
export async function timeCalls(n: number, call: (i: number) => Promise<number | void>): Promise<{ p50: number; p99: number; mean: number }> {
  const times: number[] = [];
  let total = 0;
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    total += (await call(i)) ?? 0;
    times.push(performance.now() - t);
  }
  return { p50: pct(times, 50), p99: pct(times, 99), mean: total / n };
}


export class Loader {
  readonly proc: ChildProcess = spawn("taskset", ["-c", "1", process.execPath, "--import", "tsx", "bench/load-worker.ts"], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "inherit"],
  });
  private buf = "";
  private waiting: Array<(v: any) => void> = [];

  constructor() {
    children.push(this.proc);
    this.proc.stdout!.setEncoding("utf8");
    this.proc.stdout!.on("data", (d: string) => {
      this.buf += d;
      for (let i = this.buf.indexOf("\n"); i >= 0; i = this.buf.indexOf("\n")) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        this.waiting.shift()?.(JSON.parse(line));
      }
    });
  }

  run(job: object): Promise<any> {
    return new Promise((resolve, reject) => {
      this.waiting.push((v) => (v.error ? reject(new Error(v.error)) : resolve(v)));
      this.proc.stdin!.write(JSON.stringify(job) + "\n");
    });
  }

  close() {
    this.proc.stdin!.end();
  }
}

// ---------- servers ----------

export interface Server {
  name: string;
  url: string;
  proc: ChildProcess;
  logFile: string;
}

/** Prints the end of the log of each of `servers` that has exited: a run that fails on refused connections says which server died and why. */
export function reportExited(servers: Server[]): void {
  for (const s of servers)
    if (s.proc.exitCode !== null || s.proc.signalCode !== null)
      console.error(`\n${s.name} exited (${s.proc.exitCode ?? s.proc.signalCode}); its log ends:\n${fs.readFileSync(s.logFile, "utf8").slice(-3000)}`);
}

/** Ends a bench's run: the load generator, every child process, then the run's temp dir. */
export async function endRun(loader: Loader, dir: string): Promise<void> {
  loader.close();
  for (const c of children) if (c.exitCode === null) c.kill("SIGTERM");
  await new Promise((r) => setTimeout(r, 300));
  fs.rmSync(dir, { recursive: true, force: true });
}

/** Starts `cmd` pinned to core 0 (the load runs on core 1) and waits for `/healthz`. */
export async function startServer(name: string, cmd: string[], env: Record<string, string>, url: string, logFile: string): Promise<Server> {
  const log = fs.openSync(logFile, "w");
  const proc = spawn("taskset", ["-c", "0", ...cmd], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", log, log] });
  fs.closeSync(log);
  children.push(proc);
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${name} exited (${proc.exitCode ?? proc.signalCode}):\n${fs.readFileSync(logFile, "utf8").slice(-4000)}`);
    try {
      const r = await fetch(`${url}/healthz`);
      await r.arrayBuffer();
      if (r.status === 200 || r.status === 404) break;
    } catch {}
    if (Date.now() > deadline) throw new Error(`${name} did not start:\n${fs.readFileSync(logFile, "utf8").slice(-4000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return { name, url, proc, logFile };
}

export async function stopServer(s: Server) {
  if (s.proc.exitCode !== null) return;
  const exited = new Promise((r) => s.proc.once("exit", r));
  s.proc.kill("SIGTERM");
  await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
}

/**
 * Extra node flags for the Atrium servers a bench starts, from ATRIUM_BENCH_SERVER_FLAGS (e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof`, which NODE_OPTIONS does not allow).
 */
export const serverNodeFlags = () => (process.env.ATRIUM_BENCH_SERVER_FLAGS ?? "").split(" ").filter(Boolean);

/**
 * Atrium from dist/ (`npm run build` first) on a free port, seeded with BENCH_API_KEY, its data dir
 * and log under `dir`, with the malloc settings `npm start` runs it with. `env` adds variables (e.g.
 * the scale-out engines).
 */
export async function startAtrium(dir: string, tag: string, opts: { logLevel?: string; env?: Record<string, string> } = {}): Promise<Server> {
  const logLevel = opts.logLevel ?? "info";
  const port = await freePort();
  const dataDir = path.join(dir, `atrium-${tag}-${logLevel}`);
  // Rate limits far above the load: every request takes the limiter's path, none is refused
  // (the default 10,000 requests per minute would refuse most of a bench window).
  const config = path.join(dir, `atrium-${tag}-${logLevel}.json`);
  fs.writeFileSync(config, JSON.stringify({ organizations: [{ id: "org-default", rate_limits: { requests_per_minute: 1e9, tokens_per_minute: 1e9, uploads_per_minute: 1e9 }, projects: [{ id: "proj_default" }] }] }));
  return startServer(
    `atrium ${tag} (log ${logLevel})`,
    [process.execPath, ...serverNodeFlags(), "dist/src/main.js"],
    { ...MALLOC_ENV, ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: String(port), ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: BENCH_API_KEY, ATRIUM_LOG_LEVEL: logLevel, ATRIUM_CONFIG: config, ...opts.env },
    `http://127.0.0.1:${port}`,
    path.join(dir, `atrium-${tag}-${logLevel}.log`),
  );
}

// ---------- HTTP windows ----------

export interface HttpTarget {
  key: string;
  server: () => Server;
  path: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
  bodyBase64?: string;
}

/** How every window loads the server: the same for baseline and candidate. */
export interface HttpLoad {
  connections: number;
  pipelining: number;
  /** Load before each measured window, unmeasured (seconds). */
  warmupS: number;
  windowS: number;
}

export interface HttpResult {
  rps: number;
  /** Server CPU time per request (µs) over the measured window. */
  cpuUs: number;
}

/** One request, which must answer 200; returns the body's length. */
export async function checkOnce(t: HttpTarget) {
  const r = await fetch(t.server().url + t.path, {
    method: t.method,
    headers: t.headers,
    body: t.bodyBase64 !== undefined ? Buffer.from(t.bodyBase64, "base64") : t.body,
  });
  const b = Buffer.from(await r.arrayBuffer());
  if (r.status !== 200) throw new Error(`${t.key}: HTTP ${r.status}: ${b.toString().slice(0, 500)}`);
  return b.length;
}

/** CPU seconds (user + system, all threads) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ = 100)
}

function httpJob(t: HttpTarget, seconds: number, load: HttpLoad) {
  return {
    kind: "http",
    url: t.server().url + t.path,
    method: t.method,
    headers: t.headers,
    body: t.body,
    bodyBase64: t.bodyBase64,
    connections: load.connections,
    pipelining: load.pipelining,
    warmupS: 0,
    windowS: seconds,
  };
}

/** Load without measuring: the first requests of a path run unoptimized code (JIT). */
export async function warmUp(loader: Loader, t: HttpTarget, seconds: number, load: HttpLoad) {
  await loader.run(httpJob(t, seconds, load));
}

export async function measureHttp(loader: Loader, t: HttpTarget, load: HttpLoad): Promise<HttpResult> {
  const pid = t.server().proc.pid!;
  if (load.warmupS > 0) await warmUp(loader, t, load.warmupS, load);
  const c0 = cpuSeconds(pid);
  const r = await loader.run(httpJob(t, load.windowS, load));
  const cpu = cpuSeconds(pid) - c0;
  if (r.non2xx || r.errors) throw new Error(`${t.key}: ${r.non2xx} non-2xx responses, ${r.errors} errors`);
  return { rps: r.rps, cpuUs: (cpu / r.total) * 1e6 };
}

// ---------- RSS ----------

export function rssOf(pid: number): { rss: number; hwm: number } {
  const s = fs.readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (k: string) => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, "m").exec(s)?.[1] ?? NaN) * 1024;
  return { rss: kb("VmRSS"), hwm: kb("VmHWM") };
}

/** Resets the kernel's peak-RSS mark (VmHWM); false where not permitted. */
export function resetPeak(pid: number): boolean {
  try {
    fs.writeFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

// ---------- transfers ----------

/** Reads a stream to its end; returns the bytes read. */
export async function drain(stream: AsyncIterable<unknown>): Promise<number> {
  let n = 0;
  for await (const c of stream) n += (c as Buffer).length;
  return n;
}

/** MB/s (10^6 bytes) of moving `bytes` in `f`. */
export async function timed(bytes: number, f: () => Promise<unknown>): Promise<number> {
  const t0 = process.hrtime.bigint();
  await f();
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return bytes / 1e6 / s;
}

// ---------- output ----------

export const fmt = (n: number, unit: string) => (unit === "req/s" ? `${Math.round(n).toLocaleString("en-US")} req/s` : unit === "MB/s" ? `${n.toFixed(0)} MB/s` : `${n.toFixed(1)} ${unit}`);
const rows: string[][] = [];
/** One row against a baseline of the same run, meeting `target` when atrium/baseline ≥ it; `cpu` adds the server CPU time per request of both sides and their ratio. */
export function row(name: string, base: string, baseV: number, atrium: number, unit: string, target: number, cpu?: { base: number; atrium: number }) {
  const ratio = atrium / baseV;
  const r = [name, `${fmt(atrium, unit)}`, `${fmt(baseV, unit)} (${base})`, `${ratio.toFixed(2)}×`, `≥ ${target}×`, ratio >= target ? "yes" : "NO"];
  if (cpu) r.push(`${cpu.atrium.toFixed(0)} vs ${cpu.base.toFixed(0)} µs → ${(cpu.base / cpu.atrium).toFixed(2)}×`);
  rows.push(r);
}
/** A row with an absolute target and no baseline (`meets` says whether it holds). */
export function absoluteRow(name: string, value: string, note: string, target: string, meets: boolean) {
  rows.push([name, value, note, "", target, meets ? "yes" : "NO"]);
}
export function printRows(title: string) {
  const head = ["case", "Atrium", "baseline (same run)", "ratio", "target", "meets"];
  if (rows.some((r) => r.length > head.length)) head.push("server CPU/request, Atrium vs baseline → ratio");
  const all = [head, ...rows.map((r) => [...r, ...Array(head.length - r.length).fill("")])];
  const w = head.map((_, i) => Math.max(...all.map((r) => r[i]!.length)));
  console.log(`\n${title}\n  (load average ${os.loadavg().map((n) => n.toFixed(2)).join(" ")})`);
  for (const [i, r] of all.entries()) {
    console.log(("  " + r.map((c, j) => c.padEnd(w[j]!)).join("  ")).trimEnd());
    if (i === 0) console.log("  " + w.map((n) => "-".repeat(n)).join("  "));
  }
  rows.length = 0;
}

// The soak (issue 22): a mixed workload (bench/soak-workload.ts) for --minutes against the built
// server as a child process. Every 10 s it samples the server's RSS, V8 heap, descriptors and
// threads (/proc and /metrics), the event loop's p99 lag (prom-client's gauge), and each action's
// p50/p99 and errors in the window. At the end it checks every acknowledged file by sha256,
// restarts the server on the same data directory and checks them again, then writes
// <out>/soak.json, <out>/soak.md and <out>/soak.png (RSS and latency over time).
//   npm run build && nice -n 10 node --import tsx bench/soak.ts --minutes 60 --out soak-results [--workers 3] [--malloc default]
// Not part of `npm run bench`: the lead runs it for an hour; it prints figures, it asserts nothing.
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { memoryMap, sampleProcess } from "../test/shared/fuzz/process.js";
import { API_KEY, startChildServer, tempDir, type ChildServer } from "../test/shared/server.js";
import { MALLOC_ENV } from "../test/shared/malloc-env.js";
import { arg, children, pct } from "./harness.js";
import { soakSvg, writeChart, type Series } from "./soak-chart.js";
import { ACTIONS, Workload, type Action, type ActionResult } from "./soak-workload.js";

const minutes = Number(arg("minutes", "5"));
const outDir = resolve(arg("out", "soak-results"));
const workers = Number(arg("workers", "3"));
const SAMPLE_MS = 10_000;

interface ActionWindow {
  n: number;
  errors: number;
  p50: number;
  p99: number;
}

interface Sample {
  t: number;
  rssMb: number;
  heapMb: number;
  externalMb: number;
  fds: number;
  threads: number;
  eventLoopP99Ms: number;
  /** Resident memory by kind of mapping (MiB): where native growth sits. */
  map: ReturnType<typeof memoryMap>;
  /** Per worker pool: the memory its largest worker reported (MiB), and workers recycled so far. */
  workers: Record<string, { memoryMb: number; recycled: number }>;
  actions: Partial<Record<Action, ActionWindow>>;
}


/** `name{pool="x"} value` lines → { x: value }. */
function byPool(text: string, name: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const m of text.matchAll(new RegExp(`^${name}\\{pool="([^"]+)"\\} ([0-9.e+-]+)$`, "gm"))) out[m[1]!] = Number(m[2]);
  return out;
}

/** A gauge's value from Prometheus text (the first series of that name). */
function gauge(text: string, name: string): number {
  return Number(new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+-]+)$`, "m").exec(text)?.[1] ?? NaN);
}

function windowOf(results: ActionResult[]): Partial<Record<Action, ActionWindow>> {
  const out: Partial<Record<Action, ActionWindow>> = {};
  for (const a of ACTIONS) {
    const rs = results.filter((r) => r.action === a);
    if (rs.length) out[a] = { n: rs.length, errors: rs.filter((r) => !r.ok).length, p50: Math.round(pct(rs.map((r) => r.ms), 50)), p99: Math.round(pct(rs.map((r) => r.ms), 99)) };
  }
  return out;
}

async function sample(server: ChildServer, t: number, window: ActionResult[]): Promise<Sample> {
  const proc = sampleProcess(server.proc.pid!);
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  return {
    t,
    rssMb: Math.round(proc.rssMb),
    heapMb: Math.round(gauge(metrics, "nodejs_heap_size_used_bytes") / 2 ** 20),
    externalMb: Math.round(gauge(metrics, "nodejs_external_memory_bytes") / 2 ** 20),
    fds: proc.fds,
    threads: proc.threads,
    eventLoopP99Ms: Math.round(gauge(metrics, "nodejs_eventloop_lag_p99_seconds") * 1000),
    map: Object.fromEntries(Object.entries(memoryMap(server.proc.pid!)).map(([k, v]) => [k, Math.round(v)])) as Sample["map"],
    workers: Object.fromEntries(
      Object.entries(byPool(metrics, "atrium_worker_memory_bytes")).map(([pool, bytes]) => [pool, { memoryMb: Math.round(bytes / 2 ** 20), recycled: byPool(metrics, "atrium_worker_recycled_total")[pool] ?? 0 }]),
    ),
    actions: windowOf(window),
  };
}

/** Least-squares slope of RSS (MB per minute) over the samples' second half. */
function secondHalfSlope(samples: Sample[]): number {
  const half = samples.slice(Math.floor(samples.length / 2));
  if (half.length < 2) return 0;
  const xs = half.map((s) => s.t / 60);
  const ys = half.map((s) => s.rssMb);
  const mx = xs.reduce((a, b) => a + b) / xs.length;
  const my = ys.reduce((a, b) => a + b) / ys.length;
  const num = xs.reduce((acc, x, i) => acc + (x - mx) * (ys[i]! - my), 0);
  const den = xs.reduce((acc, x) => acc + (x - mx) ** 2, 0);
  return den ? num / den : 0;
}

async function drive(server: () => ChildServer, workload: Workload, samples: Sample[], all: ActionResult[]) {
  const started = Date.now();
  const until = started + minutes * 60_000;
  let window: ActionResult[] = [];
  const loops = Array.from({ length: workers }, async () => {
    while (Date.now() < until) {
      const r = await workload.run(workload.pickAction());
      window.push(r);
      all.push(r);
    }
  });
  const sampler = (async () => {
    while (Date.now() < until) {
      await new Promise((r) => setTimeout(r, Math.min(SAMPLE_MS, Math.max(0, until - Date.now()))));
      const s = await sample(server(), Math.round((Date.now() - started) / 1000), window);
      window = [];
      samples.push(s);
      const acts = Object.entries(s.actions).map(([a, w]) => `${a} ${w.n}/${w.errors}e p50 ${w.p50} p99 ${w.p99}`).join(" | ");
      const map = Object.entries(s.map).map(([k, v]) => `${k} ${v}`).join(" ");
      const pools = Object.entries(s.workers).map(([k, w]) => `${k.replace(/^atrium-/, "")} ${w.memoryMb}/${w.recycled}r`).join(" ");
      console.log(`[${s.t} s] RSS ${s.rssMb} MB heap ${s.heapMb} MB ext ${s.externalMb} MB (${map}) workers ${pools} fds ${s.fds} threads ${s.threads} loop p99 ${s.eventLoopP99Ms} ms | ${acts}`);
    }
  })();
  await Promise.all([...loops, sampler]);
}

const dataDir = tempDir("atrium-soak-");
// The server runs as `npm start` runs it (with MALLOC_ENV) unless --malloc default.
const env = { ATRIUM_RATE_LIMITS: "off", ATRIUM_LOG_LEVEL: "info", ...(arg("malloc", "tuned") === "default" ? {} : MALLOC_ENV) };
let server = await startChildServer(dataDir, env);
children.push(server.proc);
const workload = new Workload(() => server.url, API_KEY);
const samples: Sample[] = [];
const results: ActionResult[] = [];
console.log(`soak: ${minutes} min, ${workers} workers, ${server.url}, data ${dataDir}, out ${outDir}, malloc ${arg("malloc", "tuned")}`);
await drive(() => server, workload, samples, results);
// Jobs still running finish on their own; the files were acknowledged, so they must all be there.
const before = await workload.verifyAll();
server.proc.kill("SIGTERM");
await server.exited;
server = await startChildServer(dataDir, env);
children.push(server.proc);
const after = await workload.verifyAll();
server.proc.kill("SIGTERM");
await server.exited;
rmSync(dataDir, { recursive: true, force: true });

const totals = windowOf(results);
const errorsByKind: Record<string, number> = {};
for (const r of results) if (r.error) errorsByKind[`${r.action}: ${r.error}`] = (errorsByKind[`${r.action}: ${r.error}`] ?? 0) + 1;
const rss = samples.map((s) => s.rssMb);
const figures = {
  minutes,
  workers,
  actions: results.length,
  errors: results.filter((r) => !r.ok).length,
  errorsByKind,
  rssMb: { start: rss[0], peak: Math.max(...rss), end: rss.at(-1), secondHalfSlopeMbPerMin: Number(secondHalfSlope(samples).toFixed(2)) },
  heapMb: { start: samples[0]?.heapMb, end: samples.at(-1)?.heapMb },
  memoryMapMb: { start: samples[0]?.map, end: samples.at(-1)?.map },
  eventLoopP99Ms: { max: Math.max(...samples.map((s) => s.eventLoopP99Ms)) },
  fds: { start: samples[0]?.fds, end: samples.at(-1)?.fds },
  perAction: totals,
  verify: { beforeRestart: before, afterRestart: after },
};
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, "soak.json"), JSON.stringify({ figures, samples }, null, 2));
const md = [
  `# Soak: ${minutes} min, ${workers} workers`,
  "",
  `- actions: ${figures.actions}, errors: ${figures.errors}${Object.keys(errorsByKind).length ? ` (${Object.entries(errorsByKind).map(([k, n]) => `${n} × ${k}`).join("; ")})` : ""}`,
  `- RSS: ${figures.rssMb.start} MB start, ${figures.rssMb.peak} MB peak, ${figures.rssMb.end} MB end; second half slope ${figures.rssMb.secondHalfSlopeMbPerMin} MB/min; V8 heap ${figures.heapMb.start} → ${figures.heapMb.end} MB`,
  `- resident by kind (MiB), start → end: ${Object.keys(figures.memoryMapMb.end ?? {}).map((k) => `${k} ${figures.memoryMapMb.start?.[k as keyof Sample["map"]]} → ${figures.memoryMapMb.end?.[k as keyof Sample["map"]]}`).join(", ")}`,
  `- event loop p99 (max of the 10 s samples): ${figures.eventLoopP99Ms.max} ms; fds ${figures.fds.start} → ${figures.fds.end}`,
  `- files checked by sha256: ${before.checked} (${(before.bytes / 2 ** 20).toFixed(1)} MiB), bad ${before.bad.length}; after a restart: ${after.checked}, bad ${after.bad.length}`,
  "",
  "| action | n | errors | p50 ms | p99 ms |",
  "| --- | --- | --- | --- | --- |",
  ...Object.entries(totals).map(([a, w]) => `| ${a} | ${w.n} | ${w.errors} | ${w.p50} | ${w.p99} |`),
  "",
].join("\n");
writeFileSync(join(outDir, "soak.md"), md);
const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"];
const memory: Series[] = [
  { name: "RSS", color: COLORS[0]!, points: samples.map((s) => [s.t, s.rssMb]) },
  { name: "V8 heap used", color: COLORS[1]!, points: samples.map((s) => [s.t, s.heapMb]) },
  { name: "external", color: COLORS[2]!, points: samples.map((s) => [s.t, s.externalMb]) },
];
const latency: Series[] = ACTIONS.map((a, i) => ({ name: a, color: COLORS[i % COLORS.length]!, points: samples.filter((s) => s.actions[a]).map((s): [number, number] => [s.t, s.actions[a]!.p99]) }));
await writeChart(soakSvg(memory, latency), join(outDir, "soak"));
console.log(md);
console.log(`wrote ${join(outDir, "soak.json")}, soak.md, soak.png`);

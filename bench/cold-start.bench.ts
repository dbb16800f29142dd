/**
 * Cold start: what a user waits for after `npm start`, and what an idle server costs.
 *
 *   npm run build && node --import tsx bench/cold-start.bench.ts [--runs 3]
 *
 * Each run starts fresh processes on a fresh data directory (no model cache; Atrium with the malloc
 * settings `npm start` sets) and prints medians:
 * - start-to-ready: process spawn → first `GET /readyz` 200 (no model loaded), target ≤ 1 s;
 * - idle RSS: VmRSS from /proc/<pid>/status after /readyz is ok and 2 s idle, target ≤ 110 MB;
 * - first moderation: a new server, `POST /v1/moderations` (one text) sent the moment /readyz is
 *   ok → its answer, target ≤ 1.5 s; the same from spawn is printed too.
 * Baselines, measured in the same run: bench/bare-server.ts (bare Fastify with the same model and
 * upload routes, under tsx, as bench/run.ts starts it) and a bare Fastify process with one route
 * (plain node): their spawn → first 200 and idle RSS; for the moderation, the local sentence
 * encoder alone in a fresh process (spawn → its first vector), the floor of a text that must be
 * embedded. 1 MB = 10^6 bytes. The load average is printed beside the table: timings on a busy
 * machine are slower, RSS is not.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import { loadavg, tmpdir } from "node:os";
import * as path from "node:path";
import { MALLOC_ENV } from "../test/shared/malloc-env.js";
import { arg, children, freePort, median } from "./harness.js";

const RUNS = Number(arg("runs", "3"));
const IDLE_MS = 2000;
const API_KEY = "sk-bench-cold-start";
const TARGETS = { readyMs: 1000, idleMb: 110, moderationMs: 1500 };

const rssMb = (pid: number) => Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? NaN) * 1024 / 1e6;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Started {
  proc: ChildProcess;
  url: string;
  spawnedAt: number;
  readyMs: number;
}

/** Spawns `argv`, polls `probe` every 5 ms until it answers 200; the time from spawn. */
async function start(argv: string[], env: Record<string, string>, probe: string, logFile: string): Promise<Started> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const log = fs.openSync(logFile, "w");
  const spawnedAt = performance.now();
  const proc = spawn(argv[0]!, argv.slice(1), { env: { ...process.env, ...env, PORT: String(port), ATRIUM_PORT: String(port), BENCH_PORT: String(port) }, stdio: ["ignore", log, log] });
  children.push(proc);
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`${argv.join(" ")} exited (${proc.exitCode}): ${fs.readFileSync(logFile, "utf8").slice(-2000)}`);
    try {
      const r = await fetch(url + probe, { headers: { authorization: `Bearer ${API_KEY}` } });
      await r.arrayBuffer();
      if (r.status === 200) return { proc, url, spawnedAt, readyMs: performance.now() - spawnedAt };
    } catch {
      // not listening yet
    }
    if (performance.now() - spawnedAt > 120_000) throw new Error(`${argv.join(" ")}: not ready after 120 s`);
    await sleep(5);
  }
}

async function stop(s: Started) {
  if (s.proc.exitCode !== null) return;
  const exited = new Promise((r) => s.proc.once("exit", r));
  s.proc.kill("SIGTERM");
  await Promise.race([exited, sleep(5000)]);
  if (s.proc.exitCode === null) s.proc.kill("SIGKILL");
}

const BARE_ONE_ROUTE = `
import Fastify from "fastify";
const app = Fastify();
app.get("/readyz", async () => ({ status: "ok" }));
await app.listen({ host: "127.0.0.1", port: Number(process.env.PORT) });
`;

const ENCODER_ALONE = `
const { LocalSentenceEncoder } = await import(${JSON.stringify(path.resolve("dist/src/engines/embeddings/index.js"))});
const e = new LocalSentenceEncoder();
await e.embed(["Is this sentence harmful?"], { model: "atrium-embed-use-lite" });
process.stdout.write("embedded\\n");
await e.close();
`;

function atriumEnv(dir: string): Record<string, string> {
  return { ...MALLOC_ENV, ATRIUM_HOST: "127.0.0.1", ATRIUM_DATA_DIR: fs.mkdtempSync(path.join(dir, "atrium-")), ATRIUM_API_KEY: API_KEY, ATRIUM_LOG_LEVEL: "warn" };
}

interface Round {
  atriumReadyMs: number;
  atriumIdleMb: number;
  bareReadyMs: number;
  bareIdleMb: number;
  oneRouteReadyMs: number;
  oneRouteIdleMb: number;
  moderationMs: number;
  moderationFromSpawnMs: number;
  encoderFromSpawnMs: number;
}

async function readyAndIdle(argv: string[], env: Record<string, string>, probe: string, log: string) {
  const s = await start(argv, env, probe, log);
  await sleep(IDLE_MS);
  const idleMb = rssMb(s.proc.pid!);
  await stop(s);
  return { readyMs: s.readyMs, idleMb };
}

async function firstModeration(dir: string) {
  const s = await start([process.execPath, "dist/src/main.js"], atriumEnv(dir), "/readyz", path.join(dir, "moderation.log"));
  const t = performance.now();
  const r = await fetch(`${s.url}/v1/moderations`, {
    method: "POST",
    headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "omni-moderation-latest", input: "I will find you and hurt you." }),
  });
  const body = (await r.json()) as { results?: Array<{ flagged: boolean }> };
  const done = performance.now();
  await stop(s);
  if (r.status !== 200 || !body.results?.length) throw new Error(`first moderation: ${r.status} ${JSON.stringify(body).slice(0, 300)}`);
  return { ms: done - t, fromSpawnMs: done - s.spawnedAt };
}

async function encoderAlone(dir: string): Promise<number> {
  const t = performance.now();
  const proc = spawn(process.execPath, ["--input-type=module", "-e", ENCODER_ALONE], { stdio: ["ignore", "pipe", fs.openSync(path.join(dir, "encoder.log"), "w")] });
  children.push(proc);
  return new Promise((resolve, reject) => {
    proc.stdout!.on("data", (d: Buffer) => d.toString().includes("embedded") && resolve(performance.now() - t));
    proc.once("exit", (code) => reject(new Error(`the encoder process exited (${code}) before its first vector`)));
  });
}

async function round(dir: string): Promise<Round> {
  const atrium = await readyAndIdle([process.execPath, "dist/src/main.js"], atriumEnv(dir), "/readyz", path.join(dir, "atrium.log"));
  const bare = await readyAndIdle([process.execPath, "--import", "tsx", "bench/bare-server.ts"], { BENCH_DIR: fs.mkdtempSync(path.join(dir, "bare-")) }, "/v1/models", path.join(dir, "bare.log"));
  const oneRoute = await readyAndIdle([process.execPath, "--input-type=module", "-e", BARE_ONE_ROUTE], {}, "/readyz", path.join(dir, "one-route.log"));
  const moderation = await firstModeration(dir);
  const encoderFromSpawnMs = await encoderAlone(dir);
  return {
    atriumReadyMs: atrium.readyMs,
    atriumIdleMb: atrium.idleMb,
    bareReadyMs: bare.readyMs,
    bareIdleMb: bare.idleMb,
    oneRouteReadyMs: oneRoute.readyMs,
    oneRouteIdleMb: oneRoute.idleMb,
    moderationMs: moderation.ms,
    moderationFromSpawnMs: moderation.fromSpawnMs,
    encoderFromSpawnMs,
  };
}

function table(rows: string[][]) {
  const w = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const [i, r] of rows.entries()) {
    console.log(("  " + r.map((c, j) => c.padEnd(w[j]!)).join("  ")).trimEnd());
    if (i === 0) console.log("  " + w.map((n) => "-".repeat(n)).join("  "));
  }
}

async function main() {
  if (!fs.existsSync("dist/src/main.js")) throw new Error("dist/src/main.js is missing: run `npm run build` first");
  const dir = fs.mkdtempSync(path.join(tmpdir(), "atrium-cold-start-"));
  const before = loadavg();
  const rounds: Round[] = [];
  try {
    for (let i = 0; i < RUNS; i++) rounds.push(await round(dir));
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const after = loadavg();
  const m = (k: keyof Round) => median(rounds.map((r) => r[k]));
  const ms = (x: number) => `${Math.round(x)} ms`;
  const mb = (x: number) => `${x.toFixed(1)} MB`;
  const meets = (ok: boolean) => (ok ? "yes" : "NO");
  console.log(
    `\nCold start — node ${process.version}, median of ${RUNS} runs, fresh data directories; ` +
      `load average ${before.map((x) => x.toFixed(2)).join(" ")} before, ${after.map((x) => x.toFixed(2)).join(" ")} after`,
  );
  table([
    ["case", "Atrium", "baseline (same run)", "ratio", "target", "meets"],
    ["start-to-ready (spawn → /readyz 200)", ms(m("atriumReadyMs")), `${ms(m("bareReadyMs"))} bare-server.ts (tsx); ${ms(m("oneRouteReadyMs"))} bare Fastify, one route`, `${(m("atriumReadyMs") / m("bareReadyMs")).toFixed(2)}×`, `≤ ${TARGETS.readyMs} ms`, meets(m("atriumReadyMs") <= TARGETS.readyMs)],
    ["idle RSS (ready + 2 s)", mb(m("atriumIdleMb")), `${mb(m("bareIdleMb"))} bare-server.ts (tsx); ${mb(m("oneRouteIdleMb"))} bare Fastify, one route`, `${(m("atriumIdleMb") / m("bareIdleMb")).toFixed(2)}×`, `≤ ${TARGETS.idleMb} MB`, meets(m("atriumIdleMb") <= TARGETS.idleMb)],
    ["first text moderation (sent at ready → answer)", ms(m("moderationMs")), `${ms(m("encoderFromSpawnMs"))} the encoder alone, spawn → first vector`, `${(m("moderationMs") / m("encoderFromSpawnMs")).toFixed(2)}×`, `≤ ${TARGETS.moderationMs} ms`, meets(m("moderationMs") <= TARGETS.moderationMs)],
  ]);
  console.log(`  first moderation from spawn: ${ms(m("moderationFromSpawnMs"))}; per run (ready, idle, moderation): ${rounds.map((r) => `${ms(r.atriumReadyMs)}/${mb(r.atriumIdleMb)}/${ms(r.moderationMs)}`).join(", ")}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

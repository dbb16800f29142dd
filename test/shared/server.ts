// Starting the real server for black-box tests: in-process (fast; lets a test move the clock)
// or as a child process running the built `dist/` (for kill -9 and restart tests).
//
// With ATRIUM_TEST_ENGINES=scaled, startTestServer starts TWO instances sharing a fresh PostgreSQL
// database, a Swift bucket and a Redis key prefix (test/shared/scaled.ts), behind a per-request
// round-robin proxy (test/shared/round-robin.ts): `url`/`baseURL` are the proxy's, so each call
// of a test goes to the other instance than the one before. The rest of the TestServer (app,
// deps, jobs, ...) is instance A's; `instances` has both.
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pino, { type Logger } from "pino";
import { configFromEnv } from "../../src/config.js";
import { startServer, type RunningServer } from "../../src/server.js";
import { areaConfigSections } from "../../src/services/index.js";
import type { ApiArea } from "../../src/services/area.js";
import type { Clock } from "../../src/services/deps.js";
import type { ExpirySweeper } from "../../src/jobs/expiry.js";
import { waitReady } from "./poll.js";
import { startRoundRobinProxy } from "./round-robin.js";

/** ATRIUM_TEST_ENGINES=scaled: test servers are two instances on PostgreSQL, Swift (S3) and Redis. */
export const SCALED = process.env.ATRIUM_TEST_ENGINES === "scaled";

export const API_KEY = "sk-atrium-test-standard-key-0001";
export const ADMIN_KEY = "sk-admin-test-admin-key-0001";
/** Keys declared by testConfig(): a second project in the same org, a reader, an owner, another org. */
export const KEYS = {
  projectB: "sk-atrium-test-project-b-key-0001",
  reader: "sk-atrium-test-reader-key-00001",
  owner: "sk-atrium-test-owner-key-000001",
  otherOrg: "sk-atrium-test-other-org-key-001",
  multi: "sk-atrium-test-multi-project-0001",
};

/** Shared by every test server: vectors derived from the shipped models, keyed by content. */
export const MODEL_CACHE_DIR = join(tmpdir(), "atrium-test-model-cache");

export function tempDir(prefix = "atrium-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

/** An ATRIUM_CONFIG file with several organizations, projects and keys; returns its path. */
export function testConfig(dir: string): string {
  const path = join(dir, "atrium.json");
  writeFileSync(
    path,
    JSON.stringify({
      organizations: [
        { id: "org-default", projects: [{ id: "proj_default" }, { id: "proj_b" }] },
        { id: "org-other", projects: [{ id: "proj_other" }] },
      ],
      keys: [
        { key: KEYS.projectB, organization: "org-default", projects: ["proj_b"], role: "member" },
        { key: KEYS.reader, organization: "org-default", projects: ["proj_default"], role: "reader" },
        { key: KEYS.owner, organization: "org-default", projects: ["proj_default"], role: "owner" },
        { key: KEYS.otherOrg, organization: "org-other", projects: ["proj_other"], role: "member" },
        { key: KEYS.multi, organization: "org-default", projects: ["proj_default", "proj_b"], role: "member" },
      ],
    }),
  );
  return path;
}

export interface TestServer extends RunningServer {
  dataDir: string;
  /** Base URL for the official SDK: http://127.0.0.1:PORT/v1 */
  baseURL: string;
  /** The instances behind `url`: one embedded, two in the scaled set-up. */
  instances: RunningServer[];
  stop(): Promise<void>;
}

/** A manual clock for expiry tests: starts at real time, moves only when told. */
export class ManualClock implements Clock {
  t = Math.floor(Date.now() / 1000);
  now() {
    return this.t;
  }
  advance(seconds: number) {
    this.t += seconds;
  }
}

export interface TestServerOptions {
  clock?: Clock;
  /** The server's whole environment on top of the defaults below (the test process's is not read). */
  env?: Record<string, string>;
  /** To read what the server logs (default: silent, or ATRIUM_TEST_LOG's level). */
  logger?: Logger;
  /** ATRIUM_CONFIG's content (written to the data dir); default: testConfig(). */
  config?: object;
  /** Reuse a data dir (a restart); default: a new temp dir. */
  dataDir?: string;
  areas?: ApiArea[];
}

export async function startTestServer(opts: TestServerOptions = {}): Promise<TestServer> {
  if (SCALED) return startScaledTestServer(opts);
  const dataDir = opts.dataDir ?? tempDir();
  const server = await startTestInstance(opts, dataDir, {});
  return {
    ...server,
    dataDir,
    baseURL: `${server.url}/v1`,
    instances: [server],
    async stop() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One instance on `dataDir`, with `engineEnv` under the test's own env (tests of several instances start each with it). */
export async function startTestInstance(opts: TestServerOptions, dataDir: string, engineEnv: Record<string, string>): Promise<RunningServer> {
  const configPath = testConfig(dataDir);
  if (opts.config) writeFileSync(configPath, JSON.stringify(opts.config));
  const env = {
    ATRIUM_HOST: "127.0.0.1",
    ATRIUM_PORT: "0",
    ATRIUM_DATA_DIR: dataDir,
    ATRIUM_API_KEY: API_KEY,
    ATRIUM_ADMIN_KEY: ADMIN_KEY,
    ATRIUM_CONFIG: configPath,
    ATRIUM_MODEL_CACHE_DIR: MODEL_CACHE_DIR,
    // A small disk reserve: the suite starts many servers, each writing its reserve file.
    ATRIUM_DISK_RESERVE_BYTES: String(1 << 20),
    ...engineEnv,
    ...opts.env,
  };
  const cfg = configFromEnv(env, areaConfigSections());
  const logger = opts.logger ?? pino({ level: process.env.ATRIUM_TEST_LOG ?? "silent" });
  return startServer(cfg, { clock: opts.clock, logger, env, areas: opts.areas });
}

/** The engines of each scaled test server, by instance A's data dir, so a restart on that dir finds its database again. */
const scaledByDataDir = new Map<string, { engines: ScaledEnginesOf; dataDirB: string }>();
type ScaledEnginesOf = Awaited<ReturnType<typeof import("./scaled.js").scaledEngines>>;

async function startScaledTestServer(opts: TestServerOptions): Promise<TestServer> {
  const dataDir = opts.dataDir ?? tempDir();
  let known = scaledByDataDir.get(dataDir);
  if (!known) {
    const { scaledEngines } = await import("./scaled.js");
    known = { engines: await scaledEngines(), dataDirB: tempDir() };
    scaledByDataDir.set(dataDir, known);
  }
  const { engines, dataDirB } = known;
  const a = await startTestInstance(opts, dataDir, engines.env);
  let b: RunningServer;
  try {
    b = await startTestInstance(opts, dataDirB, engines.env);
  } catch (e) {
    await a.close();
    throw e;
  }
  const proxy = await startRoundRobinProxy([a.url, b.url]);
  const close = async () => {
    await proxy.close();
    await Promise.all([a.close(), b.close()]);
  };
  // A test that stops "the" sweeper means every instance's: B's would otherwise sweep behind its back.
  // Every method runs on the real sweepers (each keeps its own state).
  const sweeper: ExpirySweeper = Object.create(a.sweeper, {
    on: { value: (...args: Parameters<ExpirySweeper["on"]>) => a.sweeper.on(...args) },
    runOnce: { value: () => a.sweeper.runOnce() },
    start: { value: (ms?: number) => (a.sweeper.start(ms), b.sweeper.start(ms)) },
    stop: { value: () => Promise.all([a.sweeper.stop(), b.sweeper.stop()]).then(() => undefined) },
  });
  return {
    ...a,
    url: proxy.url,
    port: proxy.port,
    dataDir,
    baseURL: `${proxy.url}/v1`,
    instances: [a, b],
    sweeper,
    close,
    async stop() {
      await close();
      scaledByDataDir.delete(dataDir);
      await engines.dispose();
      rmSync(dataDir, { recursive: true, force: true });
      rmSync(dataDirB, { recursive: true, force: true });
    },
  };
}

export interface ChildServer {
  proc: ChildProcess;
  url: string;
  baseURL: string;
  port: number;
  output: () => string;
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
  /** SIGTERM, then waits for the exit (at once if it has exited already). */
  stop(): Promise<void>;
}

/**
 * Runs `node dist/src/main.js` (npm test builds first) and waits until it listens. `wrap` changes
 * the command line (a bench pins the server to a core with taskset).
 */
export async function startChildServer(dataDir: string, env: Record<string, string> = {}, opts: { wrap?: (cmd: string[]) => string[] } = {}): Promise<ChildServer> {
  const main = fileURLToPath(new URL("../../dist/src/main.js", import.meta.url));
  const [command, ...args] = (opts.wrap ?? ((c) => c))([process.execPath, main]);
  const proc = spawn(command!, args, {
    env: { ...process.env, ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: API_KEY, ATRIUM_ADMIN_KEY: ADMIN_KEY, ATRIUM_MODEL_CACHE_DIR: MODEL_CACHE_DIR, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
  const stop = async () => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGTERM");
    await exited;
  };
  const listening = () => /"url":"(http:\/\/127\.0\.0\.1:(\d+))"/.exec(out);
  const started = async () => {
    if (!listening() && proc.exitCode !== null) throw new Error(`server exited early (${proc.exitCode}):\n${out}`);
    return listening() !== null;
  };
  // Nobody holds it otherwise: one that did not start is stopped rather than left running after the test.
  await waitReady(started, 20_000, () => `server did not start in time:\n${out}`, 50).catch((e: unknown) => {
    proc.kill("SIGKILL");
    throw e;
  });
  const m = listening()!;
  return { proc, url: m[1]!, baseURL: `${m[1]}/v1`, port: Number(m[2]), output: () => out, exited, stop };
}

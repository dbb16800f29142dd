// Starting the real server for black-box tests: in-process (fast; lets a test move the clock)
// or as a child process running the built `dist/` (for kill -9 and restart tests).
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
  const dataDir = opts.dataDir ?? tempDir();
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
    ...opts.env,
  };
  const cfg = configFromEnv(env, areaConfigSections());
  const logger = opts.logger ?? pino({ level: process.env.ATRIUM_TEST_LOG ?? "silent" });
  const server = await startServer(cfg, { clock: opts.clock, logger, env, areas: opts.areas });
  return {
    ...server,
    dataDir,
    baseURL: `${server.url}/v1`,
    async stop() {
      await server.close();
      rmSync(dataDir, { recursive: true, force: true });
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
}

/** Runs `node dist/src/main.js` (npm test builds first) and waits until it listens. */
export async function startChildServer(dataDir: string, env: Record<string, string> = {}): Promise<ChildServer> {
  const main = fileURLToPath(new URL("../../dist/src/main.js", import.meta.url));
  const proc = spawn(process.execPath, [main], {
    env: { ...process.env, ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: API_KEY, ATRIUM_ADMIN_KEY: ADMIN_KEY, ATRIUM_MODEL_CACHE_DIR: MODEL_CACHE_DIR, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const exited = new Promise<number | null>((r) => proc.once("exit", (code) => r(code)));
  const deadline = Date.now() + 20_000;
  for (;;) {
    const m = /"url":"(http:\/\/127\.0\.0\.1:(\d+))"/.exec(out);
    if (m) return { proc, url: m[1], baseURL: `${m[1]}/v1`, port: Number(m[2]), output: () => out, exited };
    if (proc.exitCode !== null) throw new Error(`server exited early (${proc.exitCode}):\n${out}`);
    if (Date.now() > deadline) throw new Error(`server did not start in time:\n${out}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

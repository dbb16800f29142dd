// Helpers of the limits and operability tests: a server started with its own ATRIUM_CONFIG and
// operability environment (ATRIUM_RATE_LIMITS, ATRIUM_REDIS_URL, ATRIUM_METRICS_TOKEN, ...), and a
// throw-away redis-server on a free port.
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import net from "node:net";
import type { ApiArea } from "../../src/services/area.js";
import { waitReady } from "./poll.js";
import { freePort } from "./ports.js";
import { startTestServer, type TestServer } from "./server.js";

/**
 * A server whose ATRIUM_CONFIG is `config` (written to its data dir) and whose operability
 * settings come from `env` only (not the test process's environment).
 */
export async function startConfiguredServer(
  config: object,
  env: Record<string, string> = {},
  opts: { dataDir?: string; areas?: ApiArea[] } = {},
): Promise<TestServer> {
  return startTestServer({ config, env, ...opts });
}

export const REDIS_INSTALL_HINT = "redis-server is not installed: `apt-get install -y redis-server` (.ci/run installs it)";

export const hasRedis = (): boolean => spawnSync("redis-server", ["--version"], { encoding: "utf8" }).status === 0;

export interface RedisProcess {
  url: string;
  port: number;
  proc: ChildProcess;
  stop(): Promise<void>;
}

/**
 * redis-server on a free port, no persistence; resolves once it answers PING. `detached` puts it
 * in a process group of its own, so it outlives this process (its caller stops it).
 */
export async function startRedis(opts: { detached?: boolean } = {}): Promise<RedisProcess> {
  const port = await freePort();
  const proc = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore", detached: opts.detached });
  // Generous: on a loaded machine (a CI run with other engines starting) it can take a while.
  const pong = () =>
    new Promise<boolean>((resolve) => {
      const c = net.connect(port, "127.0.0.1");
      c.once("connect", () => c.end("PING\r\n"));
      c.once("data", (d) => resolve(d.toString().startsWith("+PONG")));
      c.once("error", () => resolve(false));
      c.once("close", () => resolve(false));
    });
  // A server that never answered is stopped, not left behind.
  await waitReady(
    async () => {
      if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`);
      return pong();
    },
    30_000,
    () => `redis-server did not answer PING on port ${port} after 30 s`,
    50,
  ).catch((e: unknown) => {
    proc.kill("SIGKILL");
    throw e;
  });
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    proc,
    stop: () =>
      new Promise<void>((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once("exit", () => resolve());
        proc.kill("SIGTERM");
      }),
  };
}

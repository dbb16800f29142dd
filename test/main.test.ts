// Start-up of the built server (`node dist/src/main.js`) when a shared engine cannot be used: one
// clear line on stderr naming the variable, no stack, and an exit code other than 0. Ports that
// nothing listens on stand for engines that are down.
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { tempDir } from "./shared/server.js";
import { rmSync } from "node:fs";

const MAIN = fileURLToPath(new URL("../dist/src/main.js", import.meta.url));
const dataDir = tempDir();
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** A port that was free a moment ago: nothing listens on it. */
async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  const proc = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? "", ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_LOG_LEVEL: "silent", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  let stdout = "";
  proc.stderr!.on("data", (d) => (stderr += d));
  proc.stdout!.on("data", (d) => (stdout += d));
  const timer = setTimeout(() => proc.kill("SIGKILL"), 45_000);
  const code = await new Promise<number | null>((r) => proc.once("exit", (c) => r(c)));
  clearTimeout(timer);
  return { code, stderr, stdout };
}

describe("start-up with an engine that cannot be used", () => {
  it("ATRIUM_DATABASE_URL without ATRIUM_SECRET_KEY: exit 2 and the rule", async () => {
    const r = await start({ ATRIUM_DATABASE_URL: "postgres://postgres@127.0.0.1:1/atrium" });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^atrium: ATRIUM_SECRET_KEY must be set when ATRIUM_DATABASE_URL is: [^\n]+\n$/);
  });

  it("PostgreSQL unreachable: exit 1, one line naming ATRIUM_DATABASE_URL, the password hidden", async () => {
    const port = await closedPort();
    const r = await start({ ATRIUM_DATABASE_URL: `postgres://atrium:hunter2-pw@127.0.0.1:${port}/atrium`, ATRIUM_SECRET_KEY: "test-secret" });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^atrium: cannot open the PostgreSQL database at postgres://atrium:\\*\\*\\*\\*@127\\.0\\.0\\.1:${port}/atrium \\(ATRIUM_DATABASE_URL\\): [^\\n]+\\n$`));
    expect(r.stderr + r.stdout).not.toContain("hunter2-pw");
  });

  it("the S3 endpoint unreachable: exit 1, one line naming ATRIUM_BLOB_URL", async () => {
    const port = await closedPort();
    const r = await start({
      ATRIUM_BLOB_URL: "s3://atrium-blobs",
      AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${port}`,
      AWS_ACCESS_KEY_ID: "test",
      AWS_SECRET_ACCESS_KEY: "test",
      AWS_REGION: "us-east-1",
      ATRIUM_S3_FORCE_PATH_STYLE: "true",
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^atrium: cannot open the blob store \\(ATRIUM_BLOB_URL\\): cannot reach s3://atrium-blobs at http://127\\.0\\.0\\.1:${port}[^\\n]*\\n$`));
  });

  it("Redis unreachable: exit 1, one line naming ATRIUM_REDIS_URL", async () => {
    const port = await closedPort();
    const r = await start({ ATRIUM_REDIS_URL: `redis://127.0.0.1:${port}` });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^atrium: cannot connect to Redis at redis://127\\.0\\.0\\.1:${port} \\(ATRIUM_REDIS_URL\\): [^\\n]+\\n$`));
  });
});

// Renders survive restarts: SIGKILL the server in the middle of a render, start
// another on the same data directory, and the video completes, whole; stop a server gracefully in
// the middle of a render, and the next one finishes it. No asset is ever visible half-written.
// The servers run from the sources (node --import tsx), so no build is needed.
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { spawnSync } from "node:child_process";
import { afterAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { API_KEY, tempDir } from "../../shared/server.js";
import { blobKeys, sdk } from "../../shared/rest.js";
import { pollUntil, sleep } from "../../shared/poll.js";
import { untilVideoEnds } from "../../shared/videos.js";
import { FFPROBE } from "../../shared/media.js";

const MAIN = fileURLToPath(new URL("../../../src/main.ts", import.meta.url));

interface Child {
  proc: ChildProcess;
  baseURL: string;
  exited: Promise<unknown>;
}

const dataDir = tempDir("atrium-videos-restart-");
const children: Child[] = [];

async function startChild(): Promise<Child> {
  const config = join(dataDir, "atrium.json");
  // A short lease, so the job of a killed server is taken over within seconds.
  writeFileSync(config, JSON.stringify({ videos: { job_lease_seconds: 3 } }));
  const proc = spawn(process.execPath, ["--import", "tsx", MAIN], {
    env: { ...process.env, ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: API_KEY, ATRIUM_CONFIG: config, ATRIUM_LOG_LEVEL: "info" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  proc.stdout!.on("data", (d) => (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const exited = new Promise((r) => proc.once("exit", r));
  // Registered at once, so afterAll stops it even if it never reports its address.
  const child = { proc, baseURL: "", exited };
  children.push(child);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out);
    if (m) {
      child.baseURL = `${m[1]}/v1`;
      return child;
    }
    if (proc.exitCode !== null) throw new Error(`server exited early (${proc.exitCode}):\n${out}`);
    if (Date.now() > deadline) throw new Error(`server did not start in time:\n${out}`);
    await sleep(50);
  }
}

afterAll(async () => {
  for (const c of children) {
    if (c.proc.exitCode === null && c.proc.signalCode === null) {
      c.proc.kill("SIGTERM");
      await Promise.race([c.exited, sleep(10_000)]);
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

/** Reads the video every 50 ms until it is rendering (progress above 0). */
async function untilRendering(client: OpenAI, id: string): Promise<void> {
  const notFailed = async () => {
    const v = await client.videos.retrieve(id);
    expect(v.status).not.toBe("failed");
    return v;
  };
  const v = await pollUntil(notFailed, (v) => v.status === "completed" || (v.status === "in_progress" && v.progress > 0), `video ${id}`, { intervalMs: 50 });
  if (v.status === "completed") throw new Error("the render finished before the test could interrupt it");
}

async function checkWhole(client: OpenAI, id: string): Promise<void> {
  const bytes = Buffer.from(await (await client.videos.downloadContent(id)).arrayBuffer());
  const path = join(dataDir, `${id}-check.mp4`);
  writeFileSync(path, bytes);
  const r = spawnSync(FFPROBE, ["-v", "error", "-count_frames", "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height,nb_read_frames", "-of", "json", path], { encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  expect(JSON.parse(r.stdout).streams[0]).toMatchObject({ codec_name: "h264", width: 720, height: 1280, nb_read_frames: "96" });
  rmSync(path);
}

const assetsOf = (id: string) => blobKeys(dataDir).filter((k) => k.startsWith(`${id}.`) && !k.endsWith(".input"));
const leftovers = () => {
  const renders = join(dataDir, "video-work", "renders");
  return existsSync(renders) ? readdirSync(renders) : [];
};

describe("a render interrupted by a crash or a restart completes", () => {
  it("SIGKILL mid-render: no asset stored; the next server renders it again and completes it, whole", async () => {
    const first = await startChild();
    const c1 = sdk(first.baseURL);
    const v = await c1.videos.create({ prompt: "A lighthouse in a storm, interrupted" });
    await untilRendering(c1, v.id);
    first.proc.kill("SIGKILL");
    await first.exited;
    expect(assetsOf(v.id)).toEqual([]);

    const second = await startChild();
    const c2 = sdk(second.baseURL);
    const done = await untilVideoEnds(c2, v.id);
    expect(done.status, JSON.stringify(done.error)).toBe("completed");
    expect(done.progress).toBe(100);
    expect(assetsOf(v.id).sort()).toEqual([`${v.id}.spritesheet`, `${v.id}.thumbnail`, `${v.id}.video`]);
    await checkWhole(c2, v.id);
    expect(leftovers()).toEqual([]);
  }, 240_000);

  it("a graceful stop mid-render releases the job; the next server finishes it", async () => {
    const server = children.at(-1)!;
    const c = sdk(server.baseURL);
    const v = await c.videos.create({ prompt: "A lighthouse in calm weather, restarted" });
    await untilRendering(c, v.id);
    server.proc.kill("SIGTERM");
    await server.exited;
    expect(assetsOf(v.id)).toEqual([]);

    const next = await startChild();
    const done = await untilVideoEnds(sdk(next.baseURL), v.id);
    expect(done.status, JSON.stringify(done.error)).toBe("completed");
    await checkWhole(sdk(next.baseURL), v.id);
  }, 240_000);
});

// SIGKILL mid-render, counted (issue 22's fault tests): the built server renders two videos (one at
// a time), is killed with -9 while the first renders, and a new server on the same data directory
// takes over. Every video ends exactly once: completed (or failed, cleanly: never stuck
// in_progress), one render job each that succeeded, exactly its three assets, no temp or render
// leftovers, and a third start changes nothing (no render runs again, completed_at stays).
// Runs the built server (`npm run build` first; `npm test` does).
import { existsSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { startChildServer, tempDir, type ChildServer } from "../../shared/server.js";
import { blobKeys, sdk } from "../../shared/rest.js";
import { pollUntil, sleep } from "../../shared/poll.js";
import { untilVideoEnds } from "../../shared/videos.js";

const MAIN = fileURLToPath(new URL("../../../dist/src/main.js", import.meta.url));
const dataDir = tempDir("atrium-videos-crash-");
const children: ChildServer[] = [];

afterAll(async () => {
  for (const c of children) {
    if (c.proc.exitCode === null && c.proc.signalCode === null) {
      c.proc.kill("SIGTERM");
      await Promise.race([c.exited, sleep(10_000)]);
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
});

async function start(): Promise<ChildServer> {
  const config = join(dataDir, "atrium.json");
  // A short lease, so the killed server's job is taken over within seconds.
  writeFileSync(config, JSON.stringify({ videos: { job_lease_seconds: 3, concurrency: 1 } }));
  const child = await startChildServer(dataDir, { ATRIUM_CONFIG: config });
  children.push(child);
  return child;
}

/** Read-only look at the database (WAL lets it sit beside a running server). */
function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(join(dataDir, "atrium.db"), { readonly: true, fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

async function untilRendering(client: OpenAI, id: string): Promise<void> {
  const v = await pollUntil(() => client.videos.retrieve(id), (v) => v.status !== "queued" && (v.status !== "in_progress" || v.progress > 0), `video ${id}`, { intervalMs: 50 });
  if (v.status !== "in_progress") throw new Error(`the render ended (${v.status}) before the test could interrupt it`);
}

const assetsOf = (id: string) => blobKeys(dataDir).filter((k) => k.startsWith(`${id}.`) && !k.endsWith(".input"));
const dirEntries = (...p: string[]) => (existsSync(join(dataDir, ...p)) ? readdirSync(join(dataDir, ...p)) : []);

describe("SIGKILL mid-render (issue 22, fault tests)", () => {
  it("every video ends exactly once, whole, after a kill -9 and a restart", async () => {
    expect(existsSync(MAIN), `${MAIN} is missing: run \`npm run build\` first`).toBe(true);
    const first = await start();
    const c1 = sdk(first.baseURL);
    const a = await c1.videos.create({ prompt: "A red kite over a beach, killed mid-render" });
    const b = await c1.videos.create({ prompt: "A blue kite over a field, queued behind it" });
    await untilRendering(c1, a.id);
    first.proc.kill("SIGKILL");
    await first.exited;
    expect(assetsOf(a.id)).toEqual([]);

    const second = await start();
    const c2 = sdk(second.baseURL);
    const ended = new Map<string, OpenAI.Videos.Video>();
    for (const id of [a.id, b.id]) ended.set(id, await untilVideoEnds(c2, id, 240_000));
    for (const [id, v] of ended) {
      expect(["completed", "failed"]).toContain(v.status);
      if (v.status === "failed") {
        expect(v.error?.code).toBeTruthy();
        expect(assetsOf(id)).toEqual([]);
      } else expect(assetsOf(id).sort()).toEqual([`${id}.spritesheet`, `${id}.thumbnail`, `${id}.video`]);
    }
    // The killed render ran again (it cannot resume a local render) and completed.
    expect(ended.get(a.id)!.status).toBe("completed");

    const jobs = query<{ id: string; state: string; attempts: number }>(
      `SELECT id, state, attempts FROM jobs WHERE kind = 'videos.render' ORDER BY created_at`,
    );
    expect(jobs.map((j) => j.state)).toEqual(["succeeded", "succeeded"]);
    expect(jobs[0]!.attempts).toBeGreaterThanOrEqual(2);
    expect(query<{ n: number }>(`SELECT count(*) AS n FROM records WHERE kind = 'video'`)[0]!.n).toBe(2);
    const listed = await c2.videos.list();
    expect(listed.data.map((v) => v.id).sort()).toEqual([a.id, b.id].sort());
    expect(dirEntries("tmp")).toEqual([]);
    expect(dirEntries("video-work", "renders")).toEqual([]);

    // A third start finds nothing to do: no render runs again, nothing changes.
    second.proc.kill("SIGTERM");
    await second.exited;
    const third = await start();
    const c3 = sdk(third.baseURL);
    await sleep(1500);
    for (const [id, v] of ended) {
      const again = await c3.videos.retrieve(id);
      expect(again.status).toBe(v.status);
      expect(again.completed_at).toBe(v.completed_at);
    }
    expect(query<{ state: string; attempts: number }>(`SELECT state, attempts FROM jobs WHERE kind = 'videos.render' ORDER BY created_at`)).toEqual(
      jobs.map(({ state, attempts }) => ({ state, attempts })),
    );
  }, 400_000);
});

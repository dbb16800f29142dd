// Exactly once in effect across a crash: a worker process runs 50 jobs of 5 steps, each step
// recording its effect and its checkpoint in one transaction; it is SIGKILLed mid-way; a second
// worker on the same data directory takes the interrupted jobs over once their leases expire and
// finishes everything. Every job must succeed and every effect exist exactly once.
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { sleep } from "../shared/poll.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const WORKER = path.join(ROOT, "test/fixtures/jobs-worker.ts");
const JOBS = 50;
const STEPS = 5;

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-jobs-crash-"));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  fs.rmSync(dataDir, { recursive: true, force: true });
});

function worker(mode: "enqueue" | "resume"): { proc: ChildProcess; exited: Promise<{ code: number | null; signal: string | null; output: string }> } {
  const proc = spawn(process.execPath, ["--import", "tsx", WORKER, dataDir, mode, String(JOBS), String(STEPS)], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(proc);
  let output = "";
  proc.stdout!.on("data", (d) => (output += d));
  proc.stderr!.on("data", (d) => (output += d));
  const exited = new Promise<{ code: number | null; signal: string | null; output: string }>((resolve) =>
    proc.on("exit", (code, signal) => resolve({ code, signal, output })),
  );
  return { proc, exited };
}

/** Read-only look at the shared database while a worker writes to it (WAL allows it). */
function query<T>(sql: string): T[] {
  const db = new Database(path.join(dataDir, "atrium.db"), { readonly: true, fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    return db.prepare(sql).all() as T[];
  } finally {
    db.close();
  }
}

const effectCount = () => {
  try {
    return query<{ n: number }>(`SELECT COUNT(*) AS n FROM records WHERE kind = 'crash_effect'`)[0]!.n;
  } catch {
    return 0; // database or table not created yet
  }
};

describe("jobs: crash and takeover", () => {
  it("SIGKILL mid-way, a new worker finishes: every job succeeded, every effect exactly once", async () => {
    const first = worker("enqueue");
    const deadline = Date.now() + 30_000;
    // Let a good part of the work happen, not all of it.
    while (effectCount() < 60) {
      if (first.proc.exitCode !== null) throw new Error(`worker exited early:\n${(await first.exited).output}`);
      if (Date.now() > deadline) throw new Error("the first worker made no progress");
      await sleep(10);
    }
    first.proc.kill("SIGKILL");
    const killed = await first.exited;
    expect(killed.signal).toBe("SIGKILL");

    const before = query<{ state: string; n: number }>(`SELECT state, COUNT(*) AS n FROM jobs GROUP BY state`);
    const stateCounts = Object.fromEntries(before.map((r) => [r.state, r.n]));
    expect(stateCounts.running, "some jobs were interrupted mid-run").toBeGreaterThan(0);
    expect(effectCount()).toBeLessThan(JOBS * STEPS);

    const second = worker("resume");
    const done = await Promise.race([second.exited, sleep(60_000).then(() => undefined)]);
    expect(done, "the second worker did not finish within 60 s").toBeDefined();
    expect(done!.code, done!.output).toBe(0);
    expect(done!.output).toContain("drained");

    const jobs = query<{ id: string; state: string; attempts: number; checkpoint: string }>(
      `SELECT id, state, attempts, checkpoint FROM jobs WHERE kind = 'crash.steps'`,
    );
    expect(jobs).toHaveLength(JOBS);
    for (const j of jobs) {
      expect(j.state, j.id).toBe("succeeded");
      expect(JSON.parse(j.checkpoint)).toEqual({ next: STEPS });
    }
    // The interrupted runs count as attempts: their jobs were taken over, not restarted from scratch.
    expect(jobs.filter((j) => j.attempts === 2).length).toBe(stateCounts.running);

    const effects = query<{ tag: string; n: number }>(`SELECT tag, COUNT(*) AS n FROM records WHERE kind = 'crash_effect' GROUP BY tag`);
    const duplicated = effects.filter((e) => e.n !== 1);
    expect(duplicated, "effects recorded more than once").toEqual([]);
    const expected = new Set<string>();
    for (let i = 0; i < JOBS; i++) for (let s = 0; s < STEPS; s++) expected.add(`crash-${i}#${s}`);
    expect(new Set(effects.map((e) => e.tag))).toEqual(expected);

    // Both processes did part of the work.
    const byPid = query<{ pid: number; n: number }>(
      `SELECT json_extract(data, '$.pid') AS pid, COUNT(*) AS n FROM records WHERE kind = 'crash_effect' GROUP BY pid`,
    );
    expect(byPid).toHaveLength(2);
  });
});

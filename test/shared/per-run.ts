// One engine per test run, shared by the run's test processes. vitest runs each test file in a
// process of its own, forked from the run's main process; the scaled suites and the scale-out
// tests all want PostgreSQL, Swift and Redis, and starting Swift alone costs seconds of CPU that
// the other file running beside it would rather have. So the first process to ask starts the
// engine and records where it listens in a folder named after the run's main process; the others
// wait for that record. The engine is stopped when the main process is gone (the owner PID handed
// to `start`), not when the test process that started it ends. Outside vitest (the benches) the
// process itself is the run. Callers keep apart inside one engine by names of their own
// (databases, buckets, key prefixes).
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { tmpdir } from "node:os";
import { isMainThread } from "node:worker_threads";
import { join } from "node:path";
import { waitReady } from "./poll.js";

interface Run {
  /** The PID whose end stops the engines. */
  owner: number;
  /** The folder of the run's records; undefined when this process is the whole run. */
  dir?: string;
}

/** The kernel's start time of `pid` (so a PID reused after the run is not mistaken for it). */
function startTime(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19] ?? "";
  } catch {
    return "";
  }
}

let run: Run | undefined;

function thisRun(): Run {
  if (run) return run;
  if (!process.env.VITEST_POOL_ID) return (run = { owner: process.pid });
  // Forked test processes share the main one's lifetime; test threads share this process's.
  const owner = isMainThread ? process.ppid : process.pid;
  const dir = join(tmpdir(), `atrium-test-run-${owner}-${startTime(owner)}`);
  try {
    mkdirSync(dir);
    // The folder's maker removes it once the run is over.
    afterExit(owner, `rm -rf '${dir}'`);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  return (run = { owner, dir });
}

/**
 * Runs the shell command `then` once process `pid` is gone, however it ends (a test runner may end
 * its workers without an 'exit' event): a detached watcher polls for the PID.
 */
export function afterExit(pid: number, then: string): void {
  spawn("sh", ["-c", `while kill -0 ${pid} 2>/dev/null; do sleep 0.5; done; ${then}`], { detached: true, stdio: "ignore" }).unref();
}

function writeRecord(path: string, value: unknown): void {
  writeFileSync(`${path}.${process.pid}`, JSON.stringify(value));
  renameSync(`${path}.${process.pid}`, path);
}

const mine = new Map<string, Promise<unknown>>();

/**
 * The run's engine `name`: started here by `start(ownerPid)` if no other test process of the run
 * has, else what that process's `start` resolved to (JSON-serializable), once it has. A start that
 * failed fails every process that asks, with its message.
 */
export function onePerRun<T>(name: string, start: (ownerPid: number) => Promise<T>, waitMs = 150_000): Promise<T> {
  let p = mine.get(name) as Promise<T> | undefined;
  if (!p) {
    p = sharedStart(name, start, waitMs);
    mine.set(name, p);
  }
  return p;
}

async function sharedStart<T>(name: string, start: (ownerPid: number) => Promise<T>, waitMs: number): Promise<T> {
  const { owner, dir } = thisRun();
  if (!dir) return start(owner);
  const record = join(dir, `${name}.json`);
  let claimed = false;
  try {
    closeSync(openSync(join(dir, `${name}.lock`), "wx"));
    claimed = true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  if (claimed) {
    try {
      const value = await start(owner);
      writeRecord(record, { value });
      return value;
    } catch (e) {
      writeRecord(record, { error: (e as Error).message });
      throw e;
    }
  }
  await waitReady(async () => existsSync(record), waitMs, () => `${name} was not started by another test process of this run within ${waitMs / 1000} s (${dir})`);
  const got = JSON.parse(readFileSync(record, "utf8")) as { value: T } | { error: string };
  if ("error" in got) throw new Error(`${name} did not start (in another test process of this run): ${got.error}`);
  return got.value;
}

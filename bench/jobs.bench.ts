/**
 * Job runner overhead: no-op jobs per second through the runner, against calling the same handler
 * in a loop (the baseline), in the same run.
 *
 *   node --import tsx bench/jobs.bench.ts [--jobs 5000] [--runs 5] [--concurrency 16]
 *
 * Each timed run starts from a fresh data directory: enqueue N jobs (one enqueue() call per job,
 * or one enqueueMany()), start the runner and wait for drain(). The loop baseline calls the handler
 * 100·N times (N calls take too little time to measure) and is scaled to N. For scale, a last line
 * measures the floor any SQLite-backed durable queue pays: inserting the N rows in one transaction,
 * then one UPDATE per job to record its end. The candidates take turns (one run each per round, after
 * a warm-up round), so drift on a shared machine hits them alike; the median per candidate is printed.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { JobRunner, SqliteJobStore, type JobContext } from "../src/jobs/index.js";
import { openStorage } from "../src/storage/index.js";

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}
const JOBS = arg("jobs", 5000);
const RUNS = arg("runs", 5);
const CONCURRENCY = arg("concurrency", 16);
const scope = { projectId: "proj_bench" };

let sink = 0;
const handler = async (ctx: JobContext<{ n: number }>) => {
  sink += ctx.job.payload.n;
};

async function withDataDir<T>(fn: (dir: string) => Promise<T>): Promise<T> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-jobs-bench-"));
  try {
    return await fn(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const LOOP_REPEAT = 100;

async function loopBaseline(): Promise<number> {
  const signal = new AbortController().signal;
  const noop = async () => {};
  const t0 = performance.now();
  for (let n = 0; n < JOBS * LOOP_REPEAT; n++) {
    await handler({
      job: { id: `j${n}`, kind: "noop", scope, payload: { n }, attempt: 1, checkpoint: undefined },
      signal,
      progress: noop,
      checkpoint: noop,
      complete: noop,
    });
  }
  return (performance.now() - t0) / LOOP_REPEAT;
}

async function throughRunner(batched: boolean): Promise<number> {
  return withDataDir(async (dir) => {
    const { records } = await openStorage(dir);
    const runner = new JobRunner(new SqliteJobStore(records));
    runner.register("noop", handler, { concurrency: CONCURRENCY });
    const jobs = Array.from({ length: JOBS }, (_, n) => ({ scope, kind: "noop", payload: { n } }));
    const t0 = performance.now();
    if (batched) await runner.enqueueMany(jobs);
    else for (const j of jobs) await runner.enqueue(j.scope, j.kind, j.payload);
    runner.start();
    await runner.drain();
    const ms = performance.now() - t0;
    const done = records.db.prepare(`SELECT COUNT(*) FROM jobs WHERE state = 'succeeded'`).pluck().get();
    if (done !== JOBS) throw new Error(`only ${done} of ${JOBS} jobs succeeded`);
    await runner.stop();
    await records.close();
    return ms;
  });
}

async function sqliteFloor(): Promise<number> {
  return withDataDir(async (dir) => {
    const { records } = await openStorage(dir);
    new SqliteJobStore(records); // the jobs table
    const db = records.db;
    const insert = db.prepare(`INSERT INTO jobs (id, kind, project_id, payload, state, run_after, created_at, updated_at) VALUES (?, 'noop', ?, ?, 'queued', 0, 0, 0)`);
    const finish = db.prepare(`UPDATE jobs SET state = 'succeeded', finished_at = ? WHERE id = ?`);
    const t0 = performance.now();
    db.transaction(() => {
      for (let n = 0; n < JOBS; n++) insert.run(`j${n}`, scope.projectId, JSON.stringify({ n }));
    })();
    for (let n = 0; n < JOBS; n++) finish.run(n, `j${n}`);
    const ms = performance.now() - t0;
    await records.close();
    return ms;
  });
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const candidates: Array<[string, () => Promise<number>]> = [
  ["handler called in a loop (baseline)", loopBaseline],
  ["runner: enqueue() x N, then drain", () => throughRunner(false)],
  ["runner: enqueueMany(N), then drain", () => throughRunner(true)],
  ["SQLite floor: N inserts in 1 tx + N updates", sqliteFloor],
];
const times = candidates.map(() => [] as number[]);
for (let round = 0; round <= RUNS; round++) {
  for (const [i, [, fn]] of candidates.entries()) {
    const ms = await fn();
    if (round > 0) times[i]!.push(ms); // round 0 warms up: JIT, statement preparation, file caches
  }
}
const rows: Array<[string, number]> = candidates.map(([name], i) => [name, median(times[i]!)]);
const loop = rows[0]![1];
const floor = rows[3]![1];
const perSec = (ms: number) => Math.round((JOBS / ms) * 1000);
console.log(`\n${JOBS} no-op jobs, concurrency ${CONCURRENCY}, median of ${RUNS} runs (node ${process.version}, ${os.cpus().length} cpus)\n`);
console.log(`${"".padEnd(46)}${"ms".padStart(9)}${"jobs/s".padStart(11)}${"x loop".padStart(9)}${"x floor".padStart(9)}`);
for (const [name, ms] of rows) {
  console.log(
    `${name.padEnd(46)}${ms.toFixed(ms < 10 ? 2 : 1).padStart(9)}${perSec(ms).toLocaleString("en-US").padStart(11)}${(ms / loop).toFixed(0).padStart(9)}${(ms / floor).toFixed(2).padStart(9)}`,
  );
}
if (sink < 0) console.log(sink);

/**
 * The orphan-blob sweeper (storage.sweep-orphans) over a large blob store: one pass over N blobs
 * (default 100,000: 90 % held by a File record, 10 % orphans, all past the grace period), against
 * the floor any such pass pays, measured in the same run: walking blobs/ with readdir + stat.
 *
 *   node --import tsx bench/orphan-sweep.bench.ts [--blobs 100000] [--runs 3]
 *
 * The blobs are tiny files written straight into their shard directories, and their records
 * inserted in one transaction, so setting up 100k takes seconds. Each round rebuilds the orphans
 * the previous pass removed; the two candidates alternate, and medians are printed.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import pino from "pino";
import { JobRunner, OrphanBlobSweeper, SqliteJobStore } from "../src/jobs/index.js";
import { openStorage, type WriteOp } from "../src/storage/index.js";
import { keysOfPresentRecords } from "../src/common/blobs.js";
import { arg, median } from "./harness.js";

const BLOBS = Number(arg("blobs", "100000"));
const RUNS = Number(arg("runs", "3"));
const scope = { projectId: "proj_bench" };

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-sweep-bench-"));
try {
  const { records, blobs } = await openStorage(dir, { migrations: [] });
  const runner = new JobRunner(new SqliteJobStore(records), { log: pino({ level: "silent" }) });
  const sweeper = new OrphanBlobSweeper(blobs, runner, pino({ level: "silent" }), { graceMs: 60_000 });
  sweeper.own({ prefix: "file-", held: (keys) => keysOfPresentRecords(records, "file", keys) });

  const keys = Array.from({ length: BLOBS }, (_, i) => `file-bench${String(i).padStart(8, "0")}`);
  const orphans = keys.filter((_, i) => i % 10 === 0);
  const old = new Date(Date.now() - 3600_000);
  const writeBlob = (key: string) => {
    const p = blobs.pathOf(key);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, "x");
    fs.utimesSync(p, old, old);
  };
  for (const key of keys) writeBlob(key);
  const ops: WriteOp[] = keys.filter((_, i) => i % 10 !== 0).map((id) => ({ op: "insert", kind: "file", scope, record: { id, createdAt: 1, data: {} } }));
  for (let i = 0; i < ops.length; i += 10_000) await records.atomically(ops.slice(i, i + 10_000));

  const restoreOrphans = () => {
    for (const key of orphans) if (!fs.existsSync(blobs.pathOf(key))) writeBlob(key);
  };

  async function walk(): Promise<number> {
    restoreOrphans();
    const t0 = performance.now();
    let n = 0;
    const root = path.join(dir, "blobs");
    for (const shard of await fs.promises.readdir(root)) {
      for (const name of await fs.promises.readdir(path.join(root, shard))) {
        await fs.promises.stat(path.join(root, shard, name));
        n++;
      }
    }
    if (n !== BLOBS) throw new Error(`walked ${n} of ${BLOBS}`);
    return performance.now() - t0;
  }

  async function sweep(): Promise<number> {
    restoreOrphans();
    const t0 = performance.now();
    const r = await sweeper.sweep();
    const ms = performance.now() - t0;
    if (r.removed !== orphans.length) throw new Error(`removed ${r.removed}, expected ${orphans.length}`);
    return ms;
  }

  await walk();
  await sweep(); // warm-up
  const walks: number[] = [];
  const sweeps: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    walks.push(await walk());
    sweeps.push(await sweep());
  }
  const w = median(walks);
  const s = median(sweeps);
  console.log(`blobs: ${BLOBS} (${orphans.length} orphans), runs: ${RUNS}`);
  console.log(`walk (readdir + stat), the floor: ${w.toFixed(0)} ms`);
  console.log(`sweep (list, held lookups, unlink the orphans): ${s.toFixed(0)} ms = ${(s / w).toFixed(2)}x the walk; ${((s / BLOBS) * 1000).toFixed(1)} µs per blob`);
  await records.close();
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}

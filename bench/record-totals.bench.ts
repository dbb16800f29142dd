/**
 * What the project storage cap costs a File's write (src/limits/storage.ts): the record store
 * keeping the running total of File bytes by triggers, plus the `cap` op read in the same batch,
 * against the same store without the total (the write as it was before), in the same run.
 *
 *   node --import tsx bench/record-totals.bench.ts [--files 2000] [--writers 8] [--rounds 3]
 *
 * Per engine: `--files` File records created one batch each, then deleted one by one, by
 * `--writers` concurrent writers into one project (the case where writers queue on the total's
 * row); rounds alternate baseline and totals. PostgreSQL is a private throwaway cluster
 * (test/shared/postgres.ts), skipped when PostgreSQL 15 is not installed.
 * Prints writes per second and the ratio totals / baseline, with the load average.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { FILE_BYTES, FILE_BYTES_MIGRATION } from "../src/limits/storage.js";
import { openPostgresRecordStore } from "../src/storage/postgres/index.js";
import { openSqliteRecordStore } from "../src/storage/sqlite-records.js";
import type { RecordStore, WriteOp } from "../src/storage/types.js";
import { hasPostgres, testPostgres } from "../test/shared/postgres.js";
import { arg, median } from "./harness.js";

const FILES = Number(arg("files", "2000"));
const WRITERS = Number(arg("writers", "8"));
const ROUNDS = Number(arg("rounds", "3"));
const scope = { projectId: "proj_bench" };

interface Engine {
  name: string;
  /** A fresh store, with the File bytes total or without. */
  open(withTotal: boolean): Promise<{ store: RecordStore; close(): Promise<void> }>;
}

/** Creates then deletes FILES File records with WRITERS writers; returns writes per second. */
async function run(store: RecordStore, withTotal: boolean, round: number): Promise<number> {
  const ids = Array.from({ length: FILES }, (_, i) => `file-r${round}-${i}`);
  const start = performance.now();
  let next = 0;
  const writer = async (f: (id: string) => Promise<void>) => {
    for (let i = next++; i < ids.length; i = next++) await f(ids[i]!);
  };
  const create = async (id: string) => {
    const ops: WriteOp[] = [{ op: "insert", kind: FILE_BYTES.kind, scope, record: { id, createdAt: 1, tag: "user_data", data: { id, bytes: 1000, filename: "a.bin", purpose: "user_data" } } }];
    if (withTotal) ops.push({ op: "cap", scope, total: FILE_BYTES.name, max: Number.MAX_SAFE_INTEGER });
    await store.atomically(ops);
  };
  await Promise.all(Array.from({ length: WRITERS }, () => writer(create)));
  next = 0;
  await Promise.all(Array.from({ length: WRITERS }, () => writer(async (id) => void (await store.collection(FILE_BYTES.kind).delete(scope, id)))));
  const seconds = (performance.now() - start) / 1000;
  if (withTotal && (await store.total(scope, FILE_BYTES.name)) !== 0) throw new Error("the total did not come back to 0");
  return (2 * FILES) / seconds;
}

async function bench(engine: Engine): Promise<void> {
  const plain = await engine.open(false);
  const totals = await engine.open(true);
  try {
    const rates: Record<"plain" | "totals", number[]> = { plain: [], totals: [] };
    for (let r = 0; r < ROUNDS; r++) {
      rates.plain.push(await run(plain.store, false, r));
      rates.totals.push(await run(totals.store, true, r));
    }
    const p = median(rates.plain);
    const t = median(rates.totals);
    console.log(
      `${engine.name}: ${FILES} File creates + deletes, ${WRITERS} writers, median of ${ROUNDS}: baseline ${p.toFixed(0)} writes/s, with the total and cap op ${t.toFixed(0)} writes/s — ${(t / p).toFixed(2)}× (load average ${loadavg().map((x) => x.toFixed(1)).join(" ")})`,
    );
  } finally {
    await plain.close();
    await totals.close();
  }
}

const sqlite: Engine = {
  name: "SQLite",
  async open(withTotal) {
    const dir = mkdtempSync(join(tmpdir(), "atrium-totals-bench-"));
    const store = openSqliteRecordStore(join(dir, "atrium.db"), { migrations: withTotal ? [FILE_BYTES_MIGRATION] : [] });
    return { store, close: async () => (await store.close(), rmSync(dir, { recursive: true, force: true })) };
  },
};

async function postgres(): Promise<Engine | undefined> {
  if (!hasPostgres()) return undefined;
  const tp = await testPostgres();
  return {
    name: "PostgreSQL",
    async open(withTotal) {
      const url = await tp.newDatabase("totals_bench");
      const store = await openPostgresRecordStore(url, { migrations: withTotal ? [FILE_BYTES_MIGRATION] : [], poolSize: WRITERS });
      return { store, close: async () => (await store.close(), await tp.dropDatabase(url)) };
    },
  };
}

await bench(sqlite);
const pgEngine = await postgres();
if (pgEngine) await bench(pgEngine);
else console.log("PostgreSQL: skipped (no local PostgreSQL 15)");
process.exit(0);

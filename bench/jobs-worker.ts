// One Atrium-like job instance for bench/scale-out.bench.ts: a JobRunner on PostgresJobStore with
// its own pool, in its own process, running no-op jobs. Protocol on stdio, one line each:
// it prints "ready" once the store is open; on "go" it starts the runner, waits until no job is
// left anywhere (drain), prints {"ran": <jobs this runner ran>, "cpuMs": <its CPU time meanwhile>}
// and exits.
//   node --import tsx bench/jobs-worker.ts --database-url postgres://… [--pool 4] [--concurrency 16]
import { createInterface } from "node:readline";
import { JobRunner } from "../src/jobs/index.js";
import { PostgresJobStore } from "../src/jobs/postgres-job-store.js";
import { openPostgresRecordStore } from "../src/storage/postgres/index.js";
import { arg } from "./harness.js";

const records = await openPostgresRecordStore(arg("database-url", ""), { poolSize: Number(arg("pool", "4")) });
const runner = new JobRunner(await new PostgresJobStore(records).open());
let ran = 0;
runner.register(
  "noop",
  async () => {
    ran++;
  },
  { concurrency: Number(arg("concurrency", "16")) },
);
console.log("ready");
for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim() !== "go") continue;
  const cpu = process.cpuUsage();
  runner.start();
  await runner.drain();
  const used = process.cpuUsage(cpu);
  console.log(JSON.stringify({ ran, cpuMs: (used.user + used.system) / 1000 }));
  break;
}
await runner.stop();
await records.close();
process.exit(0);

// The long schema fuzz run (issue 22): the same campaign as test/transport/fuzz.test.ts, for
// --minutes (default 10) against the built server as a child process, printing every 10 s and at
// the end: requests, per-status counts, 5xx, hangs, the slowest request, descriptors, temp files
// and RSS (start, peak, end). Not part of `npm run bench`: it is a hunt, not a ratio.
//   npm run build && nice -n 10 node --import tsx bench/fuzz.ts --minutes 10 [--seed N] [--json out.json] [--malloc default]
import { rmSync, writeFileSync } from "node:fs";
import { startChildServer, tempDir, API_KEY } from "../test/shared/server.js";
import { MALLOC_ENV } from "../test/shared/malloc-env.js";
import { runFuzz, summary } from "../test/shared/fuzz/run.js";
import { arg, children } from "./harness.js";

const minutes = Number(arg("minutes", "10"));
const seed = Number(arg("seed", String(Date.now() % 2 ** 31)));
const jsonOut = arg("json", "");

const dataDir = tempDir("atrium-fuzz-");
// The server runs as `npm start` runs it (with MALLOC_ENV) unless --malloc default.
const server = await startChildServer(dataDir, { ATRIUM_RATE_LIMITS: "off", ATRIUM_LOG_LEVEL: "info", ...(arg("malloc", "tuned") === "default" ? {} : MALLOC_ENV) });
children.push(server.proc);
const started = Date.now();
console.log(`fuzzing ${server.url} for ${minutes} min, seed ${seed} (replay: --seed ${seed}), malloc ${arg("malloc", "tuned")}`);
const report = await runFuzz(
  { port: server.port, pid: server.proc.pid!, dataDir, apiKey: API_KEY },
  {
    seed,
    perVariant: 2,
    rounds: Number.MAX_SAFE_INTEGER,
    untilMs: started + minutes * 60_000,
    hangMs: 2_000,
    concurrency: 4,
    progress: (r) => console.log(`[${((Date.now() - started) / 1000).toFixed(0)} s] ${r.requests} requests, 5xx ${r.fiveXx}, hangs ${r.hangs}, findings ${r.findingCount}, RSS peak ${r.rssMb.peak.toFixed(0)} MB`),
  },
);
console.log(summary(report));
for (const f of report.findings) console.log(`- ${f.why}\n    at ${f.where}\n    ${f.request}`);
if (jsonOut) writeFileSync(jsonOut, JSON.stringify(report, null, 2));
const errors = server.output().split("\n").filter((l) => /"level":(50|60)/.test(l));
console.log(`server error log lines: ${errors.length}`);
for (const l of errors.slice(0, 20)) console.log(`  ${l.slice(0, 400)}`);
server.proc.kill("SIGTERM");
await server.exited;
rmSync(dataDir, { recursive: true, force: true });

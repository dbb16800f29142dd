/**
 * Batch throughput: a batch of 10,000 /v1/responses/input_tokens lines, from create to completed
 * (validation, the runs, the commits, the output file), against calling the same service
 * implementation in a loop on the same lines (parse the line, decode the body with the decoder REST and batches use, call
 * countInputTokens, one context for all calls) — the baseline, measured in the same run. Ratio = baseline time / batch time.
 *
 *   node --import tsx bench/batches.bench.ts [--lines 10000] [--runs 5] [--warmup 3]
 *
 * The batches run on one server, whose batch worker threads start with its first batch (that
 * time is printed too). The candidates take turns after `warmup` runs of each, and the median per
 * candidate is printed. BENCH_CONFIG names an ATRIUM_CONFIG file (e.g. `{"batches":{"workers":0}}`).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { create } from "@bufbuild/protobuf";
import { fromRestJson } from "../src/common/rest-json.js";
import { createContextValues, createHandlerContext } from "@connectrpc/connect";
import { ResponsesService } from "../gen/atrium/v1/responses_pb.js";
import { principalKey, type Principal } from "../src/auth/principal.js";
import { configFromEnv } from "../src/config.js";
import { warmUpTokenizer } from "../src/engines/tokenizer/index.js";
import { startServer } from "../src/server.js";
import { BATCH_KIND, type BatchRecord } from "../src/services/batches/records.js";
import { areaConfigSections } from "../src/services/index.js";
import { createResponsesService } from "../src/services/responses/handler.js";

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}
const LINES = arg("lines", 10_000);
const RUNS = arg("runs", 5);
const WARMUP = arg("warmup", 3);
const KEY = "sk-bench-batches-0001";

const WORDS = "the quick brown fox jumps over the lazy dog while batches count tokens of short prompts".split(" ");
const inputLines = Array.from({ length: LINES }, (_, i) =>
  JSON.stringify({
    custom_id: `req-${i}`,
    method: "POST",
    url: "/v1/responses/input_tokens",
    body: { model: "gpt-4o", input: [{ role: "user", content: Array.from({ length: 12 + (i % 20) }, (_, j) => WORDS[(i + j) % WORDS.length]).join(" ") }] },
  }),
);
const fileText = inputLines.join("\n") + "\n";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function withServer<T>(fn: (s: Awaited<ReturnType<typeof startServer>>) => Promise<T>): Promise<T> {
  const dir = mkdtempSync(join(tmpdir(), "atrium-batches-bench-"));
  const cfg = configFromEnv({ ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dir, ATRIUM_API_KEY: KEY, ...(process.env.BENCH_CONFIG ? { ATRIUM_CONFIG: process.env.BENCH_CONFIG } : {}) }, areaConfigSections());
  const s = await startServer(cfg, { logger: pino({ level: "silent" }) });
  try {
    return await fn(s);
  } finally {
    await s.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The longest the event loop waited during each batch run (ms): the batch must give it turns. */
const loopDelayMax: number[] = [];

/** ms from POST /v1/batches to status completed, on a running server (its batch workers warm after its first batch). */
async function batchRun(s: Awaited<ReturnType<typeof startServer>>): Promise<number> {
  const auth = { authorization: `Bearer ${KEY}` };
  const form = new FormData();
  form.append("purpose", "batch");
  form.append("file", new Blob([fileText]), "bench.jsonl");
  const file = (await (await fetch(`${s.url}/v1/files`, { method: "POST", headers: auth, body: form })).json()) as { id: string };
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const t0 = performance.now();
  const res = await fetch(`${s.url}/v1/batches`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ input_file_id: file.id, endpoint: "/v1/responses/input_tokens", completion_window: "24h" }),
  });
  const batch = (await res.json()) as { id: string; error?: unknown };
  if (!res.ok) throw new Error(JSON.stringify(batch));
  const records = s.deps.records.collection<BatchRecord>(BATCH_KIND);
  let projectId: string | undefined;
  for (;;) {
    projectId ??= (await s.deps.keys.lookup(KEY))!.memberships[0]!.projectId!;
    const b = (await records.get({ projectId }, batch.id))?.data;
    if (b && ["completed", "failed", "cancelled", "expired"].includes(b.status)) {
      if (b.status !== "completed" || b.requestCounts.completed !== LINES) throw new Error(`batch ended ${b.status}: ${JSON.stringify(b.requestCounts)}`);
      const ms = performance.now() - t0;
      loop.disable();
      loopDelayMax.push(loop.max / 1e6);
      return ms;
    }
    // Polled every millisecond: the record read is a few microseconds, and a coarser poll would
    // add up to its interval to a run of about 100 ms.
    await new Promise((r) => setTimeout(r, 1));
  }
}

/** ms to run the same lines through the same implementation in a loop. */
async function loopRun(): Promise<number> {
  return withServer(async (s) => {
    const impl = createResponsesService(s.deps);
    const principal: Principal = { kind: "key", credentialId: "bench", organizationId: "org", projectId: "proj", role: "member", scopes: null };
    // The cheapest loop: one context for every call (as the batch reuses one per worker and slice).
    const ctx = createHandlerContext({
      service: ResponsesService,
      method: ResponsesService.method.countInputTokens,
      protocolName: "loop",
      requestMethod: "POST",
      url: "/loop",
      contextValues: createContextValues().set(principalKey, principal),
    });
    const t0 = performance.now();
    for (const text of fileText.split("\n")) {
      if (!text) continue;
      const line = JSON.parse(text);
      await impl.countInputTokens(create(ResponsesService.method.countInputTokens.input, fromRestJson(ResponsesService.method.countInputTokens.input, line.body) as never), ctx);
    }
    return performance.now() - t0;
  });
}

warmUpTokenizer(["o200k_base"]);
const loop: number[] = [];
const batch: number[] = [];
let cold = 0;
await withServer(async (s) => {
  cold = await batchRun(s); // the server's first batch starts its worker threads
  // Both warm up alike before they are measured: the batch workers are threads of their own,
  // whose compiled code starts cold as the main thread's did.
  for (let r = 0; r < WARMUP; r++) {
    await loopRun();
    await batchRun(s);
  }
  loopDelayMax.length = 0;
  for (let r = 0; r < RUNS; r++) {
    loop.push(await loopRun());
    batch.push(await batchRun(s));
  }
});
const l = median(loop);
const b = median(batch);
console.log(`batch of ${LINES} input-token lines: ${b.toFixed(0)} ms (${((LINES / b) * 1000).toFixed(0)} req/s)`);
console.log(`same implementation in a loop:        ${l.toFixed(0)} ms (${((LINES / l) * 1000).toFixed(0)} req/s)`);
console.log(`ratio (batch throughput / loop): ${(l / b).toFixed(2)}×  (target ≥ 0.8×)`);
console.log(`a server's first batch (its worker threads start): ${cold.toFixed(0)} ms`);
console.log(`event-loop delay during a batch run, max (median of runs): ${median(loopDelayMax).toFixed(1)} ms`);

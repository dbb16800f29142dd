/**
 * The shared sentence encoder under mixed load (src/engines/pool/lanes.ts, src/engines/embeddings):
 * interactive requests (vector-store searches, /v1/embeddings, /v1/moderations) from several
 * projects while several stores ingest in the bulk lane.
 *
 *   node --import tsx bench/encoder-lanes.bench.ts [--seconds 60] [--idle-seconds 20]
 *        [--projects 3] [--stores 4] [--file-kb 64] [--interval-ms 2000]
 *
 * 1. Baseline: the same interactive load on the idle server (no ingestion), --idle-seconds.
 * 2. Loaded: --stores stores (spread over the projects) each ingest one --file-kb file of prose,
 *    and meanwhile each project runs, open loop (a request every --interval-ms whether or not the
 *    last one answered; the streams' starts spread over the interval), a search of its own small
 *    store, an embeddings request of three sentences, and every second interval a moderation.
 *    --seconds of this.
 * Printed per action: count, p50, p99, max, 503s (engine_overloaded), timeouts (30 s) and other
 * errors, p99 loaded ÷ p99 idle, and the targets (search and embeddings p99 ≤ 500 ms,
 * moderation p99 ≤ 1 s, no timeouts); then how many of the ingesting files completed meanwhile,
 * and the load average.
 *
 * The server runs in this process (as bench/vector-stores.bench.ts does); the client shares its
 * event loop, which makes the figures conservative.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import pino from "pino";
import { configFromEnv } from "../src/config.js";
import { startServer, type RunningServer } from "../src/server.js";
import type { Doc, Question } from "./data/retrieval/types.js";
import { arg } from "./harness.js";

const SECONDS = Number(arg("seconds", "60"));
const IDLE_SECONDS = Number(arg("idle-seconds", "20"));
const PROJECTS = Number(arg("projects", "3"));
const STORES = Number(arg("stores", "4"));
const FILE_KB = Number(arg("file-kb", "64"));
const INTERVAL_MS = Number(arg("interval-ms", "2000"));
const CLIENT_TIMEOUT_MS = 30_000;
const MODEL = "atrium-embed-use-lite";

const TARGETS: Record<Action, number> = { search: 500, embeddings: 500, moderation: 1000 };
type Action = "search" | "embeddings" | "moderation";
const ACTIONS: Action[] = ["search", "embeddings", "moderation"];

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const pct = (xs: number[], p: number) => {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const ms = (n: number) => (Number.isNaN(n) ? "-" : `${Math.round(n)}`);

const DATA = new URL("./data/retrieval/", import.meta.url);
const readJsonl = <T>(name: string): T[] =>
  readFileSync(new URL(name, DATA), "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as T);
const DOCS = readJsonl<Doc>("corpus.jsonl");
const QUESTIONS = readJsonl<Question>("questions.jsonl").map((q) => q.question);

/** About `kb` KB of the corpus's prose, in an order of its own for each seed. */
function proseFile(seed: number, kb: number): string {
  let out = "";
  for (let i = 0; out.length < kb * 1024; i++) {
    const d = DOCS[(i * 7919 + seed * 104_729) % DOCS.length]!;
    out += `${d.title}. ${d.text}\n\n`;
  }
  return out;
}

interface Sample {
  ms: number;
  outcome: "ok" | "busy" | "timeout" | "error";
}

interface Bench {
  s: RunningServer;
  dir: string;
  clients: OpenAI[];
}

async function start(): Promise<Bench> {
  const dir = mkdtempSync(join(tmpdir(), "atrium-lanes-bench-"));
  const key = (p: number) => `sk-bench-lanes-project-${String(p).padStart(2, "0")}-000001`;
  const lifted = { requests_per_minute: 1e9, tokens_per_minute: 1e9, uploads_per_minute: 1e9, vector_store_file_requests_per_minute: 1e9, vector_store_attached_files_per_minute: 1e9 };
  const projects = Array.from({ length: PROJECTS }, (_, p) => ({ id: `proj_${p}` }));
  const config = join(dir, "atrium.json");
  writeFileSync(
    config,
    JSON.stringify({
      organizations: [{ id: "org-bench", rate_limits: lifted, projects }],
      keys: projects.map((pr, p) => ({ key: key(p), organization: "org-bench", projects: [pr.id], role: "member" })),
    }),
  );
  const cfg = configFromEnv({
    ATRIUM_HOST: "127.0.0.1",
    ATRIUM_PORT: "0",
    ATRIUM_DATA_DIR: dir,
    ATRIUM_CONFIG: config,
    ATRIUM_MODEL_CACHE_DIR: join(tmpdir(), "atrium-bench-model-cache"),
  });
  const s = await startServer(cfg, { logger: pino({ level: "silent" }) });
  const clients = Array.from({ length: PROJECTS }, (_, p) => new OpenAI({ apiKey: key(p), baseURL: `${s.url}/v1`, maxRetries: 0, timeout: CLIENT_TIMEOUT_MS }));
  return { s, dir, clients };
}

async function untilIngested(client: OpenAI, storeId: string): Promise<void> {
  for (;;) {
    const vs = await client.vectorStores.retrieve(storeId);
    if (vs.file_counts.in_progress === 0) return;
    await sleep(200);
  }
}

/** One timed call; a 503 is "busy", a client timeout "timeout". */
async function timed(call: () => Promise<unknown>): Promise<Sample> {
  const t0 = performance.now();
  try {
    await call();
    return { ms: performance.now() - t0, outcome: "ok" };
  } catch (e) {
    const outcome = e instanceof OpenAI.APIConnectionTimeoutError ? "timeout" : e instanceof OpenAI.APIError && e.status === 503 ? "busy" : "error";
    if (outcome === "error") console.error(`  error: ${(e as Error).message}`);
    return { ms: performance.now() - t0, outcome };
  }
}

/**
 * Every project's interactive load, open loop, for `seconds`: one stream per project and action,
 * each a request every interval (moderation every second one) whether or not the last answered,
 * the streams' start times spread evenly over the interval as independent users' would be.
 */
async function interactiveLoad(b: Bench, searchStores: string[], seconds: number): Promise<Record<Action, Sample[]>> {
  const samples: Record<Action, Sample[]> = { search: [], embeddings: [], moderation: [] };
  const pending: Array<Promise<void>> = [];
  const end = performance.now() + seconds * 1000;
  const question = (n: number) => QUESTIONS[n % QUESTIONS.length]!;
  const call = (p: number, a: Action, tick: number): (() => Promise<unknown>) => {
    const c = b.clients[p]!;
    const n = tick * PROJECTS + p;
    if (a === "search") return () => c.vectorStores.search(searchStores[p]!, { query: question(n), max_num_results: 5 });
    if (a === "embeddings") return () => c.embeddings.create({ model: MODEL, input: [question(n + 1), question(n + 2), question(n + 3)], encoding_format: "base64" });
    return () => c.moderations.create({ model: "omni-moderation-latest", input: question(n + 4) });
  };
  const stream = async (p: number, a: Action, offsetMs: number) => {
    await sleep(offsetMs);
    for (let tick = 0; performance.now() < end; tick++) {
      if (a !== "moderation" || tick % 2 === 0) pending.push(timed(call(p, a, tick)).then((s) => void samples[a].push(s)));
      await sleep(INTERVAL_MS);
    }
  };
  const streams = Array.from({ length: PROJECTS }, (_, p) => ACTIONS.map((a) => [p, a] as const)).flat();
  await Promise.all(streams.map(([p, a], k) => stream(p, a, (k * INTERVAL_MS) / streams.length)));
  await Promise.all(pending);
  return samples;
}

function report(idle: Record<Action, Sample[]>, loaded: Record<Action, Sample[]>): boolean {
  console.log("| action | phase | n | p50 ms | p99 ms | max ms | 503 | timeouts | errors | p99 loaded ÷ idle | target p99 | met |");
  console.log("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
  let allMet = true;
  for (const a of ACTIONS) {
    for (const [phase, set] of [["idle", idle], ["loaded", loaded]] as const) {
      const xs = set[a];
      const ok = xs.filter((x) => x.outcome === "ok").map((x) => x.ms);
      const count = (o: Sample["outcome"]) => xs.filter((x) => x.outcome === o).length;
      const p99 = pct(ok, 99);
      const ratio = phase === "loaded" ? `${(p99 / pct(idle[a].filter((x) => x.outcome === "ok").map((x) => x.ms), 99)).toFixed(2)}×` : "";
      const met = phase === "loaded" ? p99 <= TARGETS[a] && count("timeout") === 0 && count("error") === 0 : undefined;
      if (met === false) allMet = false;
      console.log(
        `| ${a} | ${phase} | ${xs.length} | ${ms(pct(ok, 50))} | ${ms(p99)} | ${ms(Math.max(0, ...ok))} | ${count("busy")} | ${count("timeout")} | ${count("error")} | ${ratio} | ${phase === "loaded" ? `≤ ${TARGETS[a]}` : ""} | ${met === undefined ? "" : met ? "yes" : "NO"} |`,
      );
    }
  }
  return allMet;
}

async function main(): Promise<void> {
  console.log(`encoder lanes: ${PROJECTS} projects, ${STORES} ingesting stores of ${FILE_KB} KB, a request per action every ${INTERVAL_MS} ms per project (moderation every 2nd); idle ${IDLE_SECONDS} s, loaded ${SECONDS} s; load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  const b = await start();
  try {
    // Each project's own small store to search (dense: ingested through the encoder), and a warm-up.
    const searchStores: string[] = [];
    for (let p = 0; p < PROJECTS; p++) {
      const c = b.clients[p]!;
      const file = await c.files.create({ file: await toFile(Buffer.from(proseFile(100 + p, 8)), `search-${p}.txt`), purpose: "assistants" });
      const vs = await c.vectorStores.create({ name: `search ${p}`, file_ids: [file.id] });
      await untilIngested(c, vs.id);
      searchStores.push(vs.id);
    }
    await interactiveLoad(b, searchStores, 2);

    const idle = await interactiveLoad(b, searchStores, IDLE_SECONDS);

    const ingesting: Array<{ client: OpenAI; id: string }> = [];
    for (let k = 0; k < STORES; k++) {
      const c = b.clients[k % PROJECTS]!;
      const file = await c.files.create({ file: await toFile(Buffer.from(proseFile(k, FILE_KB)), `ingest-${k}.txt`), purpose: "assistants" });
      ingesting.push({ client: c, id: (await c.vectorStores.create({ name: `ingest ${k}`, file_ids: [file.id] })).id });
    }
    const t0 = performance.now();
    const loaded = await interactiveLoad(b, searchStores, SECONDS);
    const loadedS = (performance.now() - t0) / 1000;

    let done = 0;
    for (const st of ingesting) if ((await st.client.vectorStores.retrieve(st.id)).file_counts.completed === 1) done++;
    const allMet = report(idle, loaded);
    console.log(
      `ingestion: ${done} of ${STORES} files completed in ${loadedS.toFixed(0)} s of mixed load (${FILE_KB} KB each); load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`,
    );
    console.log(allMet ? "targets met" : "targets NOT met");
  } finally {
    await b.s.close();
    rmSync(b.dir, { recursive: true, force: true });
  }
}

await main();

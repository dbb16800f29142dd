/**
 * Vector-store search engine (src/engines/search): latency of the engine alone (no HTTP, no query
 * embedding), exact scan against the HNSW graph, measured in the same run on the same database.
 *
 *   node --import tsx bench/search.bench.ts [--sizes 10000,100000] [--queries 200] [--dim 512]
 *        [--latent 32] [--noise 0.3]     (a harder, less clustered space: --latent 128 --noise 1)
 *
 * Corpus (generated, deterministic; nothing on disk): files of 10 chunks; each chunk belongs to
 * one of 500 topics. Vectors are embedding-like: a `latent`-dimensional vector (topic centre +
 * noise) mapped to `dim` dimensions by a fixed random matrix, plus isotropic noise (`noise`),
 * L2-normalised.
 * Text is ~60 pseudo-words, half from the topic's vocabulary, half Zipf-distributed background.
 * Queries: a random chunk's latent plus noise, and 4 words of its topic (and, in the "common
 * words" rows, two background words found in ~90 % of chunks: the slow case for BM25). Attributes:
 * `shard` = file number mod 100 (the 1 % filter `shard eq 7`) and `half` (a 50 % filter).
 *
 * Rows: for each size, each mode (dense, hybrid, lexical) and filter (none, 1 %, 50 %), p50/p99
 * of `search(limit 10)` with the exact scan and with the graph (HNSW threshold forced below the
 * size when the size is under the default 20,000), the ratio graph/exact of the p50s, and
 * recall@10: the share of the exact top-10 chunk ids that the graph's top-10 also has.
 * Build figures: ingestion into SQLite (+FTS), loading the dense cache, building the graph (worker
 * thread), and reloading the kept graph file as after a restart.
 *
 * Footprint (issue 21, item 4: peak RSS ≤ 450 MB at 100k): a child process that has only the
 * database (no corpus, no exact baseline index) opens the index, loads the store's vectors, builds
 * the graph, serves the queries, then reopens the index as after a restart (kept graph file loaded)
 * and serves them again; its peak RSS (VmHWM) over all of that is what a server holding that store
 * needs.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { openSqliteRecordStore } from "../src/storage/sqlite-records.js";
import { SEARCH_MIGRATION, SqliteSearchIndex, type ChunkInput, type Filter, type SearchMode } from "../src/engines/search/index.js";
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { arg, rssOf } from "./harness.js";

const SIZES = arg("sizes", "10000,100000").split(",").map(Number);
const FOOTPRINT_TARGET_MB = 450;
const QUERIES = Number(arg("queries", "200"));
const DIM = Number(arg("dim", "512"));
const LATENT = Number(arg("latent", "32"));
const NOISE = Number(arg("noise", "0.3"));
const TOPICS = 500;
const CHUNKS_PER_FILE = 10;

// ---------- deterministic generator ----------

function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rnd = mulberry32(42);
const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());

const SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "sha", "dor", "fen", "gul", "hix", "jam", "qua", "bri", "cel"];
const word = (i: number) => {
  let w = "";
  for (let n = i + SYLLABLES.length; n > 0; n = Math.floor(n / SYLLABLES.length)) w += SYLLABLES[n % SYLLABLES.length];
  return w;
};
const BACKGROUND = Array.from({ length: 5000 }, (_, i) => word(i + 100_000));
const zipf = () => BACKGROUND[Math.min(BACKGROUND.length - 1, Math.floor(Math.exp(rnd() * Math.log(BACKGROUND.length))) - 1)]!;
const topicWords = Array.from({ length: TOPICS }, (_, t) => Array.from({ length: 12 }, (_, j) => word(t * 12 + j)));
const topicCentres = Array.from({ length: TOPICS }, () => Float32Array.from({ length: LATENT }, () => gauss()));
const projection = Float32Array.from({ length: DIM * LATENT }, () => gauss() / Math.sqrt(LATENT));

function embedLatent(z: Float32Array, noise: number): Float32Array {
  const v = new Float32Array(DIM);
  let norm = 0;
  for (let i = 0; i < DIM; i++) {
    let s = noise * gauss();
    for (let j = 0; j < LATENT; j++) s += projection[i * LATENT + j]! * z[j]!;
    v[i] = s;
    norm += s * s;
  }
  norm = Math.sqrt(norm);
  for (let i = 0; i < DIM; i++) v[i]! /= norm;
  return v;
}

interface Corpus {
  chunks: ChunkInput[];
  latents: Float32Array[];
  topics: number[];
}

function corpus(n: number): Corpus {
  const chunks: ChunkInput[] = [];
  const latents: Float32Array[] = [];
  const topics: number[] = [];
  for (let i = 0; i < n; i++) {
    const file = Math.floor(i / CHUNKS_PER_FILE);
    const t = Math.floor(rnd() * TOPICS);
    const z = topicCentres[t]!.map((c) => c + 0.7 * gauss());
    const words: string[] = [];
    for (let w = 0; w < 60; w++) words.push(rnd() < 0.5 ? topicWords[t]![Math.floor(rnd() * 12)]! : zipf());
    const text = words.join(" ");
    chunks.push({
      chunkId: `c${i}`,
      fileId: `file-${file}`,
      index: i % CHUNKS_PER_FILE,
      text,
      tokens: 60,
      vector: embedLatent(z, NOISE),
      attributes: { shard: file % 100, half: file % 2 === 0 },
    });
    latents.push(z);
    topics.push(t);
  }
  return { chunks, latents, topics };
}

/** `common`: two of the most frequent background words join the query (each is in ~90 % of chunks). */
function queries(c: Corpus, n: number, common: boolean): Array<{ text: string; vector: Float32Array }> {
  return Array.from({ length: n }, () => {
    const i = Math.floor(rnd() * c.chunks.length);
    const z = c.latents[i]!.map((x) => x + 0.3 * gauss());
    const words = Array.from({ length: 4 }, () => topicWords[c.topics[i]!]![Math.floor(rnd() * 12)]!);
    if (common) words.push(BACKGROUND[0]!, BACKGROUND[1]!);
    return { text: words.join(" "), vector: embedLatent(z, NOISE) };
  });
}

// ---------- measurement ----------

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};
const fmt = (ms: number) => (ms < 10 ? ms.toFixed(2) : ms.toFixed(1));
const mb = () => `${Math.round(process.memoryUsage().rss / 2 ** 20)} MB RSS`;

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const r = await fn();
  return [r, performance.now() - t0];
}

type Q = { text: string; vector: Float32Array };

async function run(index: SqliteSearchIndex, qs: Q[], mode: SearchMode, filter: Filter | undefined) {
  const times: number[] = [];
  const ids: string[][] = [];
  for (const [i, q] of qs.entries()) {
    const t0 = performance.now();
    const hits = await index.search("vs_bench", {
      text: [q.text],
      vector: mode === "lexical" ? undefined : [q.vector],
      limit: 10,
      mode,
      filter,
    });
    if (i >= 10) times.push(performance.now() - t0); // first 10: warm-up (JIT, page cache)
    ids.push(hits.map((h) => h.chunkId));
  }
  return { p50: pct(times, 50), p99: pct(times, 99), ids };
}

const recall = (got: string[][], ref: string[][]) => {
  let hit = 0;
  let total = 0;
  got.forEach((g, i) => {
    const s = new Set(g);
    for (const id of ref[i]!) if (s.has(id)) hit++;
    total += ref[i]!.length;
  });
  return total ? hit / total : 1;
};

async function benchSize(n: number): Promise<void> {
  console.log(`\n## ${n.toLocaleString("en")} chunks × ${DIM} dims`);
  const c = corpus(n);
  const qs = queries(c, QUERIES + 10, false);
  const qsCommon = queries(c, QUERIES + 10, true);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-search-bench-"));
  const store = openSqliteRecordStore(path.join(dir, "bench.db"), { migrations: [SEARCH_MIGRATION] });
  // The default threshold (20,000) where the size allows; below it, forced under the size.
  const annThreshold = n > 40_000 ? 20_000 : Math.floor(n / 10);
  try {
    const graph = new SqliteSearchIndex(store.db, { annThreshold });
    const [, ingestMs] = await timed(async () => {
      for (let i = 0; i < n; i += 1000) await graph.addChunks("vs_bench", c.chunks.slice(i, i + 1000));
    });
    c.chunks.length = 0; // let the inputs go
    console.log(`ingest (SQLite rows + FTS5, batches of 1000): ${(ingestMs / 1000).toFixed(1)} s, ${Math.round(n / (ingestMs / 1000))} chunks/s`);

    // Dense cache load (what the first search of a store pays), then the graph build in the worker.
    const t0 = performance.now();
    await graph.search("vs_bench", { text: [qs[0]!.text], vector: [qs[0]!.vector], limit: 10 });
    const loadMs = performance.now() - t0;
    const [, buildMs] = await timed(() => graph.settle());
    console.log(`dense cache load: ${(loadMs / 1000).toFixed(2)} s; HNSW build (worker thread, M=16, efConstruction=100, threshold ${annThreshold}): ${(buildMs / 1000).toFixed(1)} s; ${mb()}`);
    console.log(`graph state: ${JSON.stringify(graph.inspect("vs_bench"))}`);

    // A second index over the same database that never uses the graph: the exact baseline.
    const exact = new SqliteSearchIndex(store.db, { annThreshold: Number.MAX_SAFE_INTEGER, indexDir: null });
    await exact.settle("vs_bench");

    const rows: string[][] = [];
    const filters: Array<[string, Filter | undefined]> = [
      ["none", undefined],
      ["1 % (shard eq 7)", { type: "eq", key: "shard", value: 7 }],
      ["50 % (half eq true)", { type: "eq", key: "half", value: true }],
    ];
    const cases: Array<[SearchMode, string, Q[]]> = [
      ["dense", "", qs],
      ["hybrid", "", qs],
      ["hybrid", " + 2 common words", qsCommon],
      ["lexical", "", qs],
      ["lexical", " + 2 common words", qsCommon],
    ];
    for (const [mode, variant, list] of cases) {
      for (const [fname, filter] of filters) {
        if (mode === "lexical" && fname.startsWith("50")) continue;
        const e = await run(exact, list, mode, filter);
        const g = mode === "lexical" ? e : await run(graph, list, mode, filter);
        const r = recall(g.ids.slice(10), e.ids.slice(10));
        const path = mode === "lexical" ? "FTS5 only" : fname.startsWith("1 ") && n / 100 <= annThreshold ? "exact on the filtered set" : "graph";
        rows.push([mode + variant, fname, fmt(e.p50), fmt(e.p99), fmt(g.p50), fmt(g.p99), (g.p50 / e.p50).toFixed(2), r.toFixed(3), path]);
      }
    }
    console.log("");
    console.log("| mode | filter | exact p50 ms | exact p99 ms | HNSW p50 ms | HNSW p99 ms | HNSW/exact p50 | recall@10 | dense path with the graph |");
    console.log("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
    for (const r of rows) console.log(`| ${r.join(" | ")} |`);
    console.log(`counters (graph index): ${JSON.stringify(graph.inspect("vs_bench").counters)}`);
    await exact.close();
    await graph.close();

    // As after a restart: the kept graph file is loaded and reconciled instead of rebuilt.
    const reopened = new SqliteSearchIndex(store.db, { annThreshold });
    const [, reloadMs] = await timed(() => reopened.settle("vs_bench"));
    console.log(`\nrestart: dense cache + kept HNSW file loaded in ${(reloadMs / 1000).toFixed(2)} s (state ${reopened.inspect("vs_bench").ann}); ${mb()}`);
    await reopened.close();
    footprint(path.join(dir, "bench.db"), annThreshold, n);
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs the footprint child on the database and prints its peak RSS. */
function footprint(db: string, annThreshold: number, n: number): void {
  const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), "--footprint", db, "--threshold", String(annThreshold), "--dim", String(DIM), "--queries", String(QUERIES)], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  const r = JSON.parse(child.stdout.trim().split("\n").pop() ?? "{}") as { start?: number; loaded?: number; built?: number; restarted?: number; peak?: number };
  if (child.status !== 0 || r.peak === undefined) {
    console.log(`footprint child failed (exit ${child.status}): ${child.stdout}`);
    process.exitCode = 1;
    return;
  }
  const mbs = (b: number) => `${Math.round(b / 1e6)} MB`;
  const vectors = n * DIM * 4;
  console.log(
    `\nfootprint (a process with only the database: load, graph build, ${QUERIES} hybrid searches, restart with the kept graph, the searches again; 1 MB = 10^6 bytes):\n` +
      `  peak RSS ${mbs(r.peak)} (the vectors alone: ${mbs(vectors)}); RSS at start ${mbs(r.start!)}, after the load ${mbs(r.loaded!)}, after the build ${mbs(r.built!)}, after the restart ${mbs(r.restarted!)}\n` +
      `  target ≤ ${FOOTPRINT_TARGET_MB} MB at 100k: ${n === 100_000 ? (r.peak <= FOOTPRINT_TARGET_MB * 1e6 ? "meets" : "MISSED") : "(set at 100,000)"}`,
  );
}

/** The footprint child: only the database, then what a server does with the store (see the header). */
async function footprintChild(db: string): Promise<void> {
  const annThreshold = Number(arg("threshold", "20000"));
  const store = openSqliteRecordStore(db, { migrations: [SEARCH_MIGRATION] });
  const indexDir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-search-footprint-"));
  const rss = () => rssOf(process.pid).rss;
  const out: Record<string, number> = { start: rss() };
  try {
    // Queries like the corpus's (a topic's latent plus noise, four of its words), without the corpus.
    const qs = Array.from({ length: QUERIES }, () => {
      const t = Math.floor(rnd() * TOPICS);
      const z = topicCentres[t]!.map((c) => c + 0.7 * gauss() + 0.3 * gauss());
      return { text: Array.from({ length: 4 }, () => topicWords[t]![Math.floor(rnd() * 12)]!).join(" "), vector: embedLatent(z, NOISE) };
    });
    const serve = async (index: SqliteSearchIndex) => {
      for (const q of qs) await index.search("vs_bench", { text: [q.text], vector: [q.vector], limit: 10 });
    };
    let index = new SqliteSearchIndex(store.db, { annThreshold, indexDir });
    await index.search("vs_bench", { text: ["x"], vector: [qs[0]!.vector], limit: 10 });
    out.loaded = rss();
    await index.settle("vs_bench");
    await serve(index);
    out.built = rss();
    await index.close();
    index = new SqliteSearchIndex(store.db, { annThreshold, indexDir });
    await index.settle("vs_bench");
    await serve(index);
    out.restarted = rss();
    await index.close();
    out.peak = rssOf(process.pid).hwm;
  } finally {
    await store.close();
    fs.rmSync(indexDir, { recursive: true, force: true });
  }
  console.log(JSON.stringify(out));
}

if (process.argv.includes("--footprint")) {
  await footprintChild(arg("footprint", ""));
  process.exit(0);
}

console.log(`# search engine bench (node ${process.version}, ${os.cpus().length} CPUs, ${QUERIES} queries per row, limit 10)`);
for (const n of SIZES) await benchSize(n);

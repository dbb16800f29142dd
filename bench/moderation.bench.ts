/**
 * The local moderation classifier on its evaluation set (bench/data/moderation/eval.txt, written
 * for this project and kept apart from the example bank the classifier is built and calibrated
 * from), and its latency per input.
 *
 *   node --import tsx bench/moderation.bench.ts [--latency-runs 100] [--image-runs 20]
 *
 * Quality: every evaluation sentence goes through LocalModeration.moderate() (what
 * POST /v1/moderations calls; omni-moderation-latest), in requests of 128 strings; a category is
 * predicted when its boolean is true. Per category: precision, recall and F1 against the
 * sentence's labels (a subcategory's examples also count for their parent, as labelled); macro
 * F1 over the 13 categories; the false-positive rate on the benign look-alikes (share flagged in
 * any category). Latency: one input per request, one request at a time, after warm-up — text
 * (evaluation sentences in turn) and images (96×64 PNG and JPEG test patterns made with ffmpeg);
 * p50 and p90, each beside a baseline measured in the same run (the sentence encoder alone on the
 * same inputs; nsfwjs' forward pass alone as the worker times it). Load times (bank embedding + calibration, or the cache; nsfwjs) are printed too.
 * Targets: macro F1 >= 0.8, benign false positives <= 5 %, text p50 <= 30 ms.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { LocalSentenceEncoder } from "../src/engines/embeddings/index.js";
import { CATEGORIES, LocalModeration, parseExamples, type Example } from "../src/engines/moderation/index.js";

const require = createRequire(import.meta.url);

export interface CategoryFigures {
  precision: number;
  recall: number;
  f1: number;
  positives: number;
}

export interface ModerationBenchResult {
  categories: Record<string, CategoryFigures>;
  macroF1: number;
  benignFalsePositiveRate: number;
  benignCount: number;
  textP50: number;
  textP90: number;
  /** The sentence encoder alone on the same inputs, interleaved (the floor of this design). */
  encoderP50: number;
  /** Process CPU time (all threads) per text request, ms: drifts less than wall time on a shared machine. */
  textCpuMs: number;
  imageP50: number;
  imageP90: number;
  /** By format: PNG is decoded in JavaScript, JPEG by an ffmpeg child process. */
  pngP50: number;
  jpegP50: number;
  /** nsfwjs' forward pass alone (as the image worker times it), same run: the floor of the image path. */
  inferP50: number;
  textReadyMs: number;
  imageLoadMs: number;
}

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
}

const percentile = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

function testImage(codec: "png" | "mjpeg"): string {
  const ffmpeg = (require("@ffmpeg-installer/ffmpeg") as { path: string }).path;
  const pixFmt = codec === "png" ? "rgb24" : "yuvj420p";
  const bytes = execFileSync(ffmpeg, ["-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=96x64", "-frames:v", "1", "-pix_fmt", pixFmt, "-c:v", codec, "-f", "image2pipe", "pipe:1"]);
  return `data:image/${codec === "png" ? "png" : "jpeg"};base64,${bytes.toString("base64")}`;
}

export async function runModerationBench(opts: { latencyRuns?: number; imageRuns?: number; print?: boolean } = {}): Promise<ModerationBenchResult> {
  const print = opts.print ?? true;
  const examples: Example[] = parseExamples(readFileSync(new URL("./data/moderation/eval.txt", import.meta.url), "utf8"), "eval.txt");
  const encoder = new LocalSentenceEncoder({ workers: 1 });
  // A cache outside any data dir, so that repeated runs do not embed the bank again.
  const engine = new LocalModeration({ encoder: () => encoder, fetch: { timeoutMs: 10_000, allowPrivate: false }, cacheDir: join(tmpdir(), "atrium-moderation-bench-cache") });
  try {
    let t = performance.now();
    await engine.warmUp();
    const textReadyMs = performance.now() - t;

    // Quality.
    const predicted: boolean[][] = [];
    for (let start = 0; start < examples.length; start += 128) {
      const batch = examples.slice(start, start + 128);
      const res = await engine.moderate(
        batch.map((e) => e.text),
        { model: "omni-moderation-latest" },
      );
      for (const r of res.results) predicted.push(CATEGORIES.map((c) => r.categories[c] === true));
    }
    const categories: Record<string, CategoryFigures> = {};
    let f1Sum = 0;
    CATEGORIES.forEach((c, k) => {
      let tp = 0;
      let fp = 0;
      let fn = 0;
      examples.forEach((e, i) => {
        const p = predicted[i]![k]!;
        const y = e.labels.has(c);
        if (p && y) tp++;
        else if (p) fp++;
        else if (y) fn++;
      });
      const precision = tp + fp ? tp / (tp + fp) : 0;
      const recall = tp + fn ? tp / (tp + fn) : 0;
      const f1 = precision + recall ? (2 * precision * recall) / (precision + recall) : 0;
      categories[c] = { precision, recall, f1, positives: tp + fn };
      f1Sum += f1;
    });
    const benign = examples.map((e, i) => [e, i] as const).filter(([e]) => e.section === "benign");
    const benignFlagged = benign.filter(([, i]) => predicted[i]!.some(Boolean)).length;

    // Latency: text, one input per request.
    const latencyRuns = opts.latencyRuns ?? 100;
    const text: number[] = [];
    const encoderOnly: number[] = [];
    let cpu = 0;
    for (let i = 0; i < latencyRuns + 5; i++) {
      const input = examples[(i * 7) % examples.length]!.text;
      const cpuBefore = process.cpuUsage();
      t = performance.now();
      await engine.moderate(input, { model: "omni-moderation-latest" });
      const took = performance.now() - t;
      const used = process.cpuUsage(cpuBefore);
      t = performance.now();
      await encoder.embed([input], { model: "atrium-embed-use-lite" });
      const encoderTook = performance.now() - t;
      if (i < 5) continue; // the first few warm the JIT
      text.push(took);
      encoderOnly.push(encoderTook);
      cpu += (used.user + used.system) / 1000;
    }

    // Latency: images (the first request loads nsfwjs).
    const images = [testImage("png"), testImage("mjpeg")];
    t = performance.now();
    await engine.moderate([{ type: "image_url", image_url: { url: images[0]! } }], { model: "omni-moderation-latest" });
    const imageLoadMs = performance.now() - t;
    const image: number[] = [];
    const byFormat: [number[], number[]] = [[], []];
    for (let i = 0; i < (opts.imageRuns ?? 20); i++) {
      t = performance.now();
      await engine.moderate([{ type: "image_url", image_url: { url: images[i % 2]! } }], { model: "omni-moderation-latest" });
      image.push(performance.now() - t);
      byFormat[i % 2]!.push(performance.now() - t);
    }

    const png = Buffer.from(images[0]!.slice(images[0]!.indexOf(",") + 1), "base64");
    const infer: number[] = [];
    for (let i = 0; i < (opts.imageRuns ?? 20); i++) infer.push((await engine.images.classify(new Uint8Array(png), "bench")).inferMs);

    const result: ModerationBenchResult = {
      categories,
      macroF1: f1Sum / CATEGORIES.length,
      benignFalsePositiveRate: benignFlagged / benign.length,
      benignCount: benign.length,
      textP50: percentile(text, 50),
      textP90: percentile(text, 90),
      encoderP50: percentile(encoderOnly, 50),
      textCpuMs: cpu / text.length,
      imageP50: percentile(image, 50),
      imageP90: percentile(image, 90),
      pngP50: percentile(byFormat[0], 50),
      jpegP50: percentile(byFormat[1], 50),
      inferP50: percentile(infer, 50),
      textReadyMs,
      imageLoadMs,
    };
    if (print) report(result, examples.length);
    return result;
  } finally {
    await engine.close();
    await encoder.close();
  }
}

function report(r: ModerationBenchResult, total: number): void {
  const pct = (x: number) => `${(x * 100).toFixed(1)} %`;
  const met = (ok: boolean) => (ok ? "met" : "NOT met");
  console.log(`moderation: local classifier on the evaluation set (${total} sentences, ${r.benignCount} benign look-alikes); load average ${loadavg().map((x) => x.toFixed(1)).join(" ")}`);
  console.log(`${"category".padEnd(24)} ${"precision".padStart(9)} ${"recall".padStart(7)} ${"F1".padStart(6)} ${"positives".padStart(9)}`);
  for (const [c, f] of Object.entries(r.categories))
    console.log(`${c.padEnd(24)} ${f.precision.toFixed(3).padStart(9)} ${f.recall.toFixed(3).padStart(7)} ${f.f1.toFixed(3).padStart(6)} ${String(f.positives).padStart(9)}`);
  console.log(`macro F1 ${r.macroF1.toFixed(3)} (target >= 0.8: ${met(r.macroF1 >= 0.8)})`);
  console.log(`benign false positives ${pct(r.benignFalsePositiveRate)} (target <= 5 %: ${met(r.benignFalsePositiveRate <= 0.05)})`);
  console.log(`text latency per input: p50 ${r.textP50.toFixed(1)} ms, p90 ${r.textP90.toFixed(1)} ms (target p50 <= 30 ms: ${met(r.textP50 <= 30)}); CPU ${r.textCpuMs.toFixed(1)} ms per input`);
  console.log(`  baseline, the sentence encoder alone on the same inputs: p50 ${r.encoderP50.toFixed(1)} ms (moderation / encoder: ${(r.textP50 / r.encoderP50).toFixed(2)}x)`);
  console.log(`image latency per input: p50 ${r.imageP50.toFixed(1)} ms, p90 ${r.imageP90.toFixed(1)} ms (PNG, decoded here: p50 ${r.pngP50.toFixed(1)} ms; JPEG, through ffmpeg: p50 ${r.jpegP50.toFixed(1)} ms)`);
  console.log(`  baseline, nsfwjs' forward pass alone: p50 ${r.inferP50.toFixed(1)} ms (image request / forward pass: ${(r.imageP50 / r.inferP50).toFixed(2)}x)`);
  console.log(`loading: text classifier ready in ${(r.textReadyMs / 1000).toFixed(1)} s; first image (nsfwjs load) ${(r.imageLoadMs / 1000).toFixed(1)} s`);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await runModerationBench({ latencyRuns: arg("latency-runs", 100), imageRuns: arg("image-runs", 20) });
}

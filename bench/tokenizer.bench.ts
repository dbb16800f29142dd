/**
 * Tokenizer throughput: Atrium's counting engine against the tiktoken-compatible npm packages.
 *
 *   node --import tsx bench/tokenizer.bench.ts [--encoding o200k_base|cl100k_base|all] [--runs N] [--mb N]
 *
 * Every candidate runs in its own child process (same run, one after another) so that its RSS is
 * its own. Texts (~1 MB of UTF-8 each, built deterministically):
 *   - prose: English documentation prose, the Markdown files under node_modules with fenced code
 *     removed (the same files wherever `npm install` ran);
 *   - code: the JavaScript files under node_modules (minified lines dropped);
 *   - many-words: generated sentences of pseudo-words with a fresh seed for EVERY timed run, so no
 *     merge/piece cache can have seen the words (this is the cold-cache case).
 * prose and code get one untimed warm-up pass (caches warm, JIT done); many-words gets a warm-up
 * on a text of another seed (JIT done, caches useless). The median of the timed runs is printed,
 * with its ratio to the best candidate of the same text in this run, and RSS; then Atrium's ratio to
 * the best other package on each text against the ≥ 2× target.
 * A last section measures `countInputTokens` (1 MB input as a message) against the raw engine.
 */
import { spawnSync } from "node:child_process";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

type TextKind = "prose" | "code" | "many-words";
const KINDS: TextKind[] = ["prose", "code", "many-words"];
const CANDIDATES = ["atrium", "tiktoken-wasm", "js-tiktoken", "gpt-tokenizer"] as const;
type Candidate = (typeof CANDIDATES)[number];
type Enc = "o200k_base" | "cl100k_base";

const ROOT = resolve(fileURLToPath(new URL("..", import.meta.url)));

// ---------- texts ----------

function walk(dir: string, ext: string, out: string[]): void {
  let entries: string[];
  try {
    entries = readdirSync(dir).sort();
  } catch {
    return;
  }
  for (const name of entries) {
    const p = join(dir, name);
    let st;
    try {
      st = statSync(p);
    } catch {
      continue;
    }
    if (st.isDirectory()) walk(p, ext, out);
    else if (name.endsWith(ext) && !name.endsWith(".min.js")) out.push(p);
  }
}

function collect(ext: string, bytes: number, clean: (s: string) => string): string {
  const files: string[] = [];
  walk(join(ROOT, "node_modules"), ext, files);
  const parts: string[] = [];
  let size = 0;
  for (const f of files) {
    const t = clean(readFileSync(f, "utf8"));
    if (!t.trim()) continue;
    parts.push(t);
    size += Buffer.byteLength(t);
    if (size >= bytes) break;
  }
  let text = parts.join("\n\n");
  while (Buffer.byteLength(text) < bytes && text.length > 0) text += "\n\n" + text; // tiny installs
  return Buffer.from(text).subarray(0, bytes).toString("utf8").replace(/\uFFFD$/, "");
}

export const proseText = (bytes: number) =>
  collect(".md", bytes, (s) =>
    s
      .replace(/```[\s\S]*?```/g, "")
      .split("\n")
      .filter((l) => !/^\s*(\||<|!\[|\[!\[)/.test(l))
      .join("\n"),
  );

export const codeText = (bytes: number) =>
  collect(".js", bytes, (s) =>
    s
      .split("\n")
      .filter((l) => l.length < 200)
      .join("\n"),
  );

/** mulberry32 */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const ONSETS = ["b", "br", "c", "ch", "cl", "d", "dr", "f", "fl", "g", "gr", "h", "j", "k", "l", "m", "n", "p", "pl", "qu", "r", "s", "sh", "st", "t", "th", "tr", "v", "w", "z", ""];
const VOWELS = ["a", "e", "i", "o", "u", "ai", "ea", "ou", "y", "io"];
const CODAS = ["", "", "n", "r", "s", "l", "m", "t", "nd", "st", "ck", "x", "ng"];

export function manyWordsText(bytes: number, seed: number): string {
  const r = rng(seed);
  const pick = <T>(a: readonly T[]): T => a[Math.floor(r() * a.length)]!;
  const out: string[] = [];
  let size = 0;
  let sentence = 0;
  while (size < bytes) {
    const n = 2 + Math.floor(r() * 3);
    let w = "";
    for (let i = 0; i < n; i++) w += pick(ONSETS) + pick(VOWELS) + pick(CODAS);
    if (sentence === 0) w = w[0]!.toUpperCase() + w.slice(1);
    sentence++;
    let sep = " ";
    if (sentence > 6 && r() < 0.15) {
      sep = r() < 0.2 ? ".\n\n" : ". ";
      sentence = 0;
    } else if (r() < 0.08) sep = ", ";
    out.push(w + sep);
    size += w.length + sep.length;
  }
  return out.join("");
}

// ---------- worker ----------

interface Counter {
  count(text: string): number;
}

async function makeCounter(c: Candidate, enc: Enc): Promise<Counter> {
  switch (c) {
    case "atrium": {
      const { getEncoding } = await import("../src/engines/tokenizer/encoding.js");
      const e = getEncoding(enc);
      return { count: (t) => e.countTokens(t) };
    }
    case "tiktoken-wasm": {
      const { get_encoding } = await import("tiktoken");
      const e = get_encoding(enc);
      return { count: (t) => e.encode_ordinary(t).length };
    }
    case "js-tiktoken": {
      const { getEncoding } = await import("js-tiktoken");
      const e = getEncoding(enc);
      return { count: (t) => e.encode(t, [], []).length };
    }
    case "gpt-tokenizer": {
      const m =
        enc === "o200k_base"
          ? await import("gpt-tokenizer/encoding/o200k_base")
          : await import("gpt-tokenizer/encoding/cl100k_base");
      const opts = { disallowedSpecial: new Set<string>() };
      return { count: (t) => m.countTokens(t, opts) };
    }
  }
}

const median = (a: number[]) => {
  const s = [...a].sort((x, y) => x - y);
  return s[Math.floor(s.length / 2)]!;
};
const mb = () => process.memoryUsage().rss / 2 ** 20;

async function worker(c: Candidate, enc: Enc, runs: number, bytes: number): Promise<void> {
  const texts = { prose: proseText(bytes), code: codeText(bytes) };
  const fresh = Array.from({ length: runs + 1 }, (_, i) => manyWordsText(bytes, 1000 + i));
  const rssStart = mb();
  const counter = await makeCounter(c, enc);
  const rssLoaded = mb();
  const result: Record<string, unknown> = { candidate: c, rssStart, rssLoaded };
  for (const kind of KINDS) {
    const times: number[] = [];
    let tokens = 0;
    if (kind === "many-words") {
      counter.count(fresh[0]!); // JIT warm-up on another seed
      for (let i = 1; i <= runs; i++) {
        const t0 = performance.now();
        tokens = counter.count(fresh[i]!);
        times.push(performance.now() - t0);
      }
      const b = Buffer.byteLength(fresh[1]!);
      result[kind] = { mbps: b / 1e6 / (median(times) / 1e3), tokens, bytes: b };
    } else {
      const text = texts[kind];
      counter.count(text);
      for (let i = 0; i < runs; i++) {
        const t0 = performance.now();
        tokens = counter.count(text);
        times.push(performance.now() - t0);
      }
      const b = Buffer.byteLength(text);
      result[kind] = { mbps: b / 1e6 / (median(times) / 1e3), tokens, bytes: b };
    }
  }
  result.rssEnd = mb();
  if (c === "atrium") {
    const { getEncoding } = await import("../src/engines/tokenizer/encoding.js");
    const cc = getEncoding(enc).cache!;
    result.cacheStats = { hits: cc.hits, misses: cc.misses, clears: cc.clears, bytes: cc.byteSize };
  }
  if (c === "atrium") {
    // Request-level counting against the raw engine on the same ~1 MB prose, same process.
    const { countInputTokens } = await import("../src/engines/tokenizer/input-tokens.js");
    const { getEncoding } = await import("../src/engines/tokenizer/encoding.js");
    const e = getEncoding(enc);
    const model = enc === "o200k_base" ? "gpt-4o" : "gpt-4";
    const text = texts.prose;
    const request = { model, instructions: "Summarize.", input: [{ role: "user", content: text }] };
    const deps = {
      fetchImage: async () => new Uint8Array(),
      readFile: async () => ({ bytes: new Uint8Array(), filename: "" }),
    };
    await countInputTokens(request, deps);
    const raw: number[] = [];
    const req: number[] = [];
    for (let i = 0; i < runs; i++) {
      let t0 = performance.now();
      e.countTokens(text);
      raw.push(performance.now() - t0);
      t0 = performance.now();
      await countInputTokens(request, deps);
      req.push(performance.now() - t0);
    }
    result.request = { rawMs: median(raw), requestMs: median(req), ratio: median(raw) / median(req) };
    result.cacheEntries = e.cache?.size ?? 0;
  }
  process.stdout.write("RESULT " + JSON.stringify(result) + "\n");
}

// ---------- orchestrator ----------

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(name);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}

async function main(): Promise<void> {
  const runs = Number(arg("--runs", "5"));
  const bytes = Math.round(Number(arg("--mb", "1")) * 1e6);
  if (process.argv.includes("--worker")) {
    await worker(arg("--candidate", "atrium") as Candidate, arg("--encoding", "o200k_base") as Enc, runs, bytes);
    return;
  }
  const encArg = arg("--encoding", "o200k_base");
  const encs: Enc[] = encArg === "all" ? ["o200k_base", "cl100k_base"] : [encArg as Enc];
  const script = fileURLToPath(import.meta.url);
  console.log(`node ${process.version}, ${runs} timed runs per text, ~${bytes / 1e6} MB per text, MB = 10^6 bytes of UTF-8; load average ${loadavg()[0]!.toFixed(2)} on ${cpus().length} CPUs`);
  for (const enc of encs) {
    const rows: Record<string, any>[] = [];
    for (const c of CANDIDATES) {
      const r = spawnSync(
        process.execPath,
        [...process.execArgv, script, "--worker", "--candidate", c, "--encoding", enc, "--runs", String(runs), "--mb", String(bytes / 1e6)],
        { encoding: "utf8", maxBuffer: 1 << 24 },
      );
      const line = r.stdout.split("\n").find((l) => l.startsWith("RESULT "));
      if (!line) {
        console.error(`${c} failed:\n${r.stderr}`);
        continue;
      }
      rows.push(JSON.parse(line.slice(7)));
    }
    console.log(`\n== ${enc} == (load average after the candidates: ${loadavg()[0]!.toFixed(2)})`);
    const best: Record<string, number> = {};
    for (const k of KINDS) best[k] = Math.max(...rows.map((r) => r[k].mbps));
    const head = ["candidate".padEnd(14), ...KINDS.map((k) => `${k} MB/s (×best)`.padStart(24)), "RSS start→load→end MB".padStart(22)];
    console.log(head.join(" "));
    for (const r of rows) {
      const cells = KINDS.map((k) => `${r[k].mbps.toFixed(2)} (${(r[k].mbps / best[k]!).toFixed(2)})`.padStart(24));
      console.log([String(r.candidate).padEnd(14), ...cells, `${r.rssStart.toFixed(0)}→${r.rssLoaded.toFixed(0)}→${r.rssEnd.toFixed(0)}`.padStart(22)].join(" "));
    }
    const a = rows.find((r) => r.candidate === "atrium");
    const others = rows.filter((r) => r.candidate !== "atrium");
    if (a && others.length) {
      // Issue 21's target: each text at least twice the best other package's throughput.
      const vs = KINDS.map((k) => {
        const peer = others.reduce((x, y) => (y[k].mbps > x[k].mbps ? y : x));
        const ratio = a[k].mbps / peer[k].mbps;
        return { k, ratio, line: `${k} ${ratio.toFixed(2)}× (${peer.candidate})` };
      });
      const missed = vs.filter((v) => v.ratio < 2).map((v) => v.k);
      console.log(`atrium vs the best other package: ${vs.map((v) => v.line).join(", ")} — target ≥ 2× on each: ${missed.length ? `NO (${missed.join(", ")})` : "meets"}`);
    }
    const tokens = KINDS.map((k) => `${k}: ${[...new Set(rows.map((r) => r[k].tokens))].join("/")}`);
    console.log(`token counts (one value per text = all candidates agree): ${tokens.join(", ")}`);
    if (a?.request) {
      console.log(
        `countInputTokens on ~1 MB prose vs raw engine: ${a.request.requestMs.toFixed(1)} ms vs ${a.request.rawMs.toFixed(1)} ms → ${a.request.ratio.toFixed(2)}× raw throughput (target ≥ 0.8); piece cache entries: ${a.cacheEntries}`,
      );
      const cs = a.cacheStats;
      console.log(
        `atrium piece cache over the whole worker: ${cs.hits} hits, ${cs.misses} misses (${((100 * cs.hits) / (cs.hits + cs.misses)).toFixed(1)}% hits), ${cs.clears} clears, ${(cs.bytes / 2 ** 20).toFixed(1)} MiB fixed`,
      );
    }
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) await main();

/**
 * Grader latency: p50 / p99 of POST /v1/fine_tuning/alpha/graders/run for string_check and
 * text_similarity (each lexical metric), over HTTP against an in-process server, with the
 * engine's own time (runGrader, no HTTP) beside it, in the same run.
 *
 *   node --import tsx bench/graders.bench.ts [--n 400]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pino from "pino";
import { configFromEnv } from "../src/config.js";
import { checkGrader, PythonSandbox, runGrader, type GraderEngineDeps } from "../src/engines/graders/index.js";
import { startServer } from "../src/server.js";
import { areaConfigSections } from "../src/services/index.js";

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
}
const N = arg("n", 400);
const KEY = "sk-bench-graders-0001";

const SAMPLE = "It is a guide to action which ensures that the military always obeys the commands of the party";
const ITEM = { reference: "It is a guide to action that ensures that the military will forever heed Party commands" };
const graders: Array<[string, object]> = [
  ["string_check eq", { type: "string_check", name: "g", input: "{{sample.output_text}}", reference: "{{item.reference}}", operation: "eq" }],
  ["string_check ilike", { type: "string_check", name: "g", input: "{{sample.output_text}}", reference: "%GUIDE TO ACTION%", operation: "ilike" }],
  ...["fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_l"].map((m): [string, object] => [
    `text_similarity ${m}`,
    { type: "text_similarity", name: "g", input: "{{sample.output_text}}", reference: "{{item.reference}}", evaluation_metric: m },
  ]),
];

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))]!;
const unavailable = () => {
  throw new Error("not used");
};
const engine: GraderEngineDeps = { responses: unavailable, embeddings: unavailable, python: new PythonSandbox() };

const dir = mkdtempSync(join(tmpdir(), "atrium-graders-bench-"));
const server = await startServer(configFromEnv({ ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dir, ATRIUM_API_KEY: KEY }, areaConfigSections()), { logger: pino({ level: "silent" }) });
try {
  console.log(`${"grader".padEnd(26)} ${"REST p50".padStart(9)} ${"REST p99".padStart(9)} ${"engine p50".padStart(11)}`);
  for (const [label, grader] of graders) {
    const body = JSON.stringify({ grader, model_sample: SAMPLE, item: ITEM });
    const rest: number[] = [];
    const eng: number[] = [];
    const checked = checkGrader(grader);
    for (let i = 0; i < N + 20; i++) {
      const t0 = performance.now();
      const res = await fetch(`${server.url}/v1/fine_tuning/alpha/graders/run`, { method: "POST", headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json" }, body });
      await res.arrayBuffer();
      const t1 = performance.now();
      await runGrader(checked, SAMPLE, ITEM, engine);
      const t2 = performance.now();
      if (i >= 20) {
        rest.push(t1 - t0);
        eng.push(t2 - t1);
      }
    }
    const ms = (x: number) => `${x.toFixed(3)} ms`;
    console.log(`${label.padEnd(26)} ${ms(pct(rest, 0.5)).padStart(9)} ${ms(pct(rest, 0.99)).padStart(9)} ${ms(pct(eng, 0.5)).padStart(11)}`);
  }
} finally {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
}

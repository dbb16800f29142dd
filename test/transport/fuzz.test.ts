// The short schema fuzz run of issue 22 (the long one is bench/fuzz.ts): every operation of
// /openapi.json, each variant once — valid-ish bodies, wrong types, 1e400, deep nesting,
// NUL/unicode, huge strings, bad ids, bad query strings, wrong content types, malformed JSON,
// broken and cut multipart, bodies cut short under a lying Content-Length or inside a chunk — and
// each RPC's Connect, gRPC-Web and gRPC frames broken (bad lengths, bad flags, truncated frames,
// garbage protobuf), against the built server as a child process so its descriptors, temp files
// and memory can be read. Seeded: ATRIUM_FUZZ_SEED replays a failure's requests exactly.
import { afterAll, beforeAll, expect, it } from "vitest";
import { runFuzz, summary, type FuzzReport } from "../shared/fuzz/run.js";
import { API_KEY, startChildServer, tempDir, type ChildServer } from "../shared/server.js";
import { rmSync } from "node:fs";

const SEED = Number(process.env.ATRIUM_FUZZ_SEED ?? 22);
let server: ChildServer;
let dataDir: string;
let report: FuzzReport;

beforeAll(async () => {
  dataDir = tempDir("atrium-fuzz-");
  server = await startChildServer(dataDir, { ATRIUM_RATE_LIMITS: "off", ATRIUM_LOG_LEVEL: "info" });
  report = await runFuzz({ port: server.port, pid: server.proc.pid!, dataDir, apiKey: API_KEY }, { seed: SEED, perVariant: 1, rounds: 1, hangMs: 2_000, concurrency: 4 });
  console.log(summary(report));
}, 120_000);

afterAll(async () => {
  server?.proc.kill("SIGTERM");
  await server?.exited;
  rmSync(dataDir, { recursive: true, force: true });
});

it("covers every operation and its RPC with every variant", () => {
  expect(report.operations).toBeGreaterThanOrEqual(72);
  expect(report.requests).toBeGreaterThanOrEqual(report.variants);
});

it("answers every request in time, without a 5xx, in the platform's error shape", () => {
  const detail = report.findings.map((f) => `${f.why}\n  at ${f.where} (replay: ATRIUM_FUZZ_SEED=${SEED})\n  ${f.request}`).join("\n");
  expect(report.findingCount, `${report.findingCount} findings:\n${detail}`).toBe(0);
});

it("leaves no socket, file descriptor or temp file open behind it", () => {
  expect(report.fds.leaked).toEqual([]);
  expect(report.tempFiles.leaked).toEqual([]);
});

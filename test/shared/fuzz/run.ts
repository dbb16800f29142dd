// A fuzz campaign against a running server (used by test/transport/fuzz.test.ts for the short run
// and bench/fuzz.ts for the long one): read /openapi.json, create a few resources so valid-ish
// requests have real ids, then send every variant of every operation (REST) and of its RPC
// (Connect, gRPC-Web, gRPC frames), `perVariant` requests each per round, `concurrency` at a time.
// Every request is drawn from fast-check with a seed derived from (seed, round, variant), so a
// failure's seed replays the same requests. It reports per-status counts, 5xx, hangs, the slowest
// request, and the server's descriptors, temp files and RSS before and after.
import http2 from "node:http2";
import fc from "fast-check";
import { problemWith } from "./check.js";
import { operationsOf, resolver, type OpenApi } from "./operations.js";
import { added, describeSocket, memoryMap, openFiles, sampleProcess, tempFiles } from "./process.js";
import { describe, sendH2, sendHttp1, type FuzzRequest, type FuzzResponse } from "./request.js";
import { restVariants } from "./rest-requests.js";
import { rpcVariants } from "./rpc-requests.js";
import type { KnownIds } from "./values.js";

export interface FuzzTarget {
  port: number;
  pid: number;
  dataDir: string;
  apiKey: string;
}

export interface FuzzPlan {
  seed: number;
  /** Requests per variant per round. */
  perVariant: number;
  /** Rounds to run; the run also stops at `untilMs` (epoch ms) when given. */
  rounds: number;
  untilMs?: number;
  hangMs: number;
  concurrency: number;
  /** Called every ~10 s with the figures so far (the long run prints them). */
  progress?: (r: FuzzReport) => void;
}

export interface Finding {
  where: string;
  why: string;
  request: string;
}

export interface FuzzReport {
  seed: number;
  operations: number;
  variants: number;
  requests: number;
  byStatus: Record<string, number>;
  fiveXx: number;
  hangs: number;
  slowest: { ms: number; request: string };
  /** Requests slower than half the hang bound, counted by operation. */
  slowByOp: Record<string, number>;
  findingCount: number;
  /** Findings counted by class: the variant's kind and the reason with its numbers and ids blanked. */
  findingClasses: Record<string, number>;
  /** The first three findings of each class, in full. */
  findings: Finding[];
  /**
   * Open descriptors. `leaked` lists the sockets and files open at the end that were not at the
   * start: what a request may leak. Pipes, eventfds and epolls belong to threads' event loops
   * (worker pools start workers on demand), so they are counted with `threads` instead.
   */
  fds: { start: number; end: number; leaked: string[] };
  threads: { start: number; end: number };
  tempFiles: { start: number; end: number; leaked: string[] };
  rssMb: { start: number; peak: number; end: number };
  /** The server's resident memory by kind of mapping at the end (MiB). */
  memoryMapMb: Record<string, number>;
}

const auth = (key: string) => ({ authorization: `Bearer ${key}` });

/** A file, a vector store holding it, an upload and a container: ids valid-ish requests can use. */
async function createKnownIds(base: string, key: string): Promise<KnownIds> {
  const form = new FormData();
  form.set("purpose", "assistants");
  form.set("file", new Blob(["fuzzing needs one real file to point at"], { type: "text/plain" }), "fuzz.txt");
  const post = async (path: string, body: FormData | object) => {
    const init = body instanceof FormData ? { body } : { body: JSON.stringify(body), headers: { "content-type": "application/json" } };
    const res = await fetch(`${base}${path}`, { method: "POST", ...init, headers: { ...auth(key), ...(init.headers ?? {}) } });
    const json = (await res.json()) as { id?: string };
    if (!res.ok || !json.id) throw new Error(`fuzz set-up: POST ${path} answered ${res.status} ${JSON.stringify(json)}`);
    return json.id;
  };
  const file = await post("/v1/files", form);
  const store = await post("/v1/vector_stores", { name: "fuzz", file_ids: [file] });
  const upload = await post("/v1/uploads", { filename: "u.txt", purpose: "assistants", bytes: 10, mime_type: "text/plain" });
  const container = await post("/v1/containers", { name: "fuzz" });
  return { file_id: [file], vector_store_id: [store], upload_id: [upload], container_id: [container], model: ["atrium-embed-use-lite", "gpt-4o"] };
}

/** FNV-1a of a string, for deriving one seed per variant. */
function hash(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

function statusKey(req: FuzzRequest, res: FuzzResponse): string {
  if (res.hung) return "hung";
  if (req.protocol === "h2") return `grpc-status ${res.grpcStatus ?? "none"}`;
  return res.status === 0 ? "closed" : String(res.status);
}

/** Sockets and files: the descriptors a request can leave open (not a thread's pipes, eventfds, epolls). */
const requestFds = (fds: string[]) => fds.filter((f) => f.startsWith("socket:") || f.startsWith("/"));

/** Waits (up to 10 s) for the server's descriptors and temp files to come back to `start`. */
async function settle(target: FuzzTarget, start: { fds: string[]; temp: string[] }) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const fds = openFiles(target.pid);
    const temp = tempFiles(target.dataDir);
    if ((requestFds(added(start.fds, fds)).length === 0 && temp.length <= start.temp.length) || Date.now() > deadline) return { fds, temp };
    await new Promise((r) => setTimeout(r, 200));
  }
}

type Variant = { name: string; arb: fc.Arbitrary<FuzzRequest> };

async function variantsOf(target: FuzzTarget, base: string): Promise<{ variants: Variant[]; operations: number }> {
  const doc = (await (await fetch(`${base}/openapi.json`)).json()) as OpenApi;
  const ops = operationsOf(doc);
  const known = await createKnownIds(base, target.apiKey);
  const ctx = { resolve: resolver(doc), known, apiKey: target.apiKey };
  const variants: Variant[] = [];
  for (const op of ops) {
    for (const [kind, arb] of Object.entries(restVariants(op, ctx))) variants.push({ name: `${op.id} ${kind}`, arb });
    for (const [kind, arb] of Object.entries(rpcVariants(op.rpcPath, target.apiKey))) variants.push({ name: `${op.rpcPath} ${kind}`, arb });
  }
  return { variants, operations: ops.length };
}

/** The requests of one round: `perVariant` of each variant, drawn with the round's seeds. */
function requestsOf(variants: Variant[], seed: number, round: number, perVariant: number): Array<{ where: string; req: FuzzRequest }> {
  const queue: Array<{ where: string; req: FuzzRequest }> = [];
  for (const v of variants) {
    const derived = (seed ^ hash(v.name) ^ Math.imul(round + 2, 0x9e3779b9)) >>> 0;
    fc.sample(v.arb, { seed: derived, numRuns: perVariant }).forEach((req, i) => queue.push({ where: `seed ${seed}, round ${round}, ${v.name} #${i}`, req }));
  }
  return queue;
}

export async function runFuzz(target: FuzzTarget, plan: FuzzPlan): Promise<FuzzReport> {
  const base = `http://127.0.0.1:${target.port}`;
  const { variants, operations } = await variantsOf(target, base);
  const rssStart = sampleProcess(target.pid).rssMb;
  const report: FuzzReport = {
    seed: plan.seed,
    operations,
    variants: variants.length,
    requests: 0,
    byStatus: {},
    fiveXx: 0,
    hangs: 0,
    slowest: { ms: 0, request: "" },
    slowByOp: {},
    findingCount: 0,
    findingClasses: {},
    findings: [],
    fds: { start: 0, end: 0, leaked: [] },
    threads: { start: 0, end: 0 },
    tempFiles: { start: 0, end: 0, leaked: [] },
    rssMb: { start: rssStart, peak: rssStart, end: rssStart },
    memoryMapMb: {},
  };
  let session: http2.ClientHttp2Session | null = null;
  const h2 = () => {
    if (!session || session.closed || session.destroyed) {
      session = http2.connect(base);
      session.on("error", () => {});
    }
    return session;
  };
  const drain = (queue: Array<{ where: string; req: FuzzRequest }>) =>
    Promise.all(
      Array.from({ length: plan.concurrency }, async () => {
        for (let item = queue.shift(); item; item = queue.shift()) {
          if (plan.untilMs && Date.now() > plan.untilMs) return;
          const res = item.req.protocol === "h2" ? await sendH2(h2(), item.req, plan.hangMs) : await sendHttp1(target.port, item.req, plan.hangMs);
          record(report, item.where, item.req, res, plan.hangMs);
        }
      }),
    );
  const sampler = setInterval(() => {
    report.rssMb.peak = Math.max(report.rssMb.peak, sampleProcess(target.pid).rssMb);
  }, 500);
  const progress = plan.progress ? setInterval(() => plan.progress!(report), 10_000) : null;
  let startFds: string[] = [];
  let startTemp: string[] = [];
  try {
    // A warm-up (one valid-ish request per operation) lets the engines start their workers and
    // open what they keep open; the descriptor and temp-file baseline is taken after it.
    await drain(requestsOf(variants.filter((v) => /(^| )(multipart-)?valid$/.test(v.name)), plan.seed, -1, 1));
    await new Promise((r) => setTimeout(r, 1_000)); // the warm-up's connections close
    startFds = openFiles(target.pid);
    report.threads.start = sampleProcess(target.pid).threads;
    startTemp = tempFiles(target.dataDir);
    for (let round = 0; round < plan.rounds && !(plan.untilMs && Date.now() > plan.untilMs); round++) {
      await drain(requestsOf(variants, plan.seed, round, plan.perVariant));
    }
  } finally {
    clearInterval(sampler);
    if (progress) clearInterval(progress);
    (session as http2.ClientHttp2Session | null)?.destroy();
  }
  const end = await settle(target, { fds: startFds, temp: startTemp });
  report.fds = { start: startFds.length, end: end.fds.length, leaked: requestFds(added(startFds, end.fds)).map(describeSocket) };
  report.threads.end = sampleProcess(target.pid).threads;
  report.tempFiles = { start: startTemp.length, end: end.temp.length, leaked: added(startTemp, end.temp) };
  report.rssMb.end = sampleProcess(target.pid).rssMb;
  report.memoryMapMb = Object.fromEntries(Object.entries(memoryMap(target.pid)).map(([k, v]) => [k, Math.round(v)]));
  return report;
}

function record(report: FuzzReport, where: string, req: FuzzRequest, res: FuzzResponse, hangMs: number) {
  report.requests++;
  const key = statusKey(req, res);
  report.byStatus[key] = (report.byStatus[key] ?? 0) + 1;
  if (res.status >= 500 || (res.grpcStatus !== undefined && [2, 13, 15].includes(res.grpcStatus))) report.fiveXx++;
  if (res.hung) report.hangs++;
  if (res.ms > hangMs / 2) report.slowByOp[req.op] = (report.slowByOp[req.op] ?? 0) + 1;
  if (res.ms > report.slowest.ms) report.slowest = { ms: Math.round(res.ms), request: `${where}: ${describe(req)}` };
  const why = problemWith(req, res, hangMs);
  if (why) {
    report.findingCount++;
    const cls = `${req.kind}: ${why.slice(0, 80).replace(/\d+/g, "N")}`;
    report.findingClasses[cls] = (report.findingClasses[cls] ?? 0) + 1;
    if (report.findingClasses[cls]! <= 3 && report.findings.length < 200) report.findings.push({ where, why, request: describe(req) });
  }
}

/** The figures as text: requests, per-status counts, 5xx, slowest, descriptors, temp files, RSS. */
export function summary(r: FuzzReport): string {
  const statuses = Object.entries(r.byStatus)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, n]) => `${k}: ${n}`)
    .join(", ");
  return [
    `seed ${r.seed}: ${r.requests} requests over ${r.operations} operations (${r.variants} variants)`,
    `  statuses: ${statuses}`,
    `  5xx/fault statuses: ${r.fiveXx}, hangs: ${r.hangs}, findings: ${r.findingCount}`,
    `  slowest: ${r.slowest.ms} ms (${r.slowest.request.slice(0, 240)})`,
    `  over half the hang bound: ${JSON.stringify(r.slowByOp)}`,
    ...Object.entries(r.findingClasses).map(([cls, n]) => `    ${n} × ${cls}`),
    `  fds: ${r.fds.start} → ${r.fds.end}, sockets and files left open: ${r.fds.leaked.length ? r.fds.leaked.slice(0, 10).join(", ") : "none"}; threads ${r.threads.start} → ${r.threads.end}`,
    `  temp files: ${r.tempFiles.start} → ${r.tempFiles.end}${r.tempFiles.leaked.length ? ` (new: ${r.tempFiles.leaked.slice(0, 10).join(", ")})` : ""}`,
    `  RSS: ${r.rssMb.start.toFixed(0)} MB start, ${r.rssMb.peak.toFixed(0)} MB peak, ${r.rssMb.end.toFixed(0)} MB end (${Object.entries(r.memoryMapMb).map(([k, v]) => `${k} ${v}`).join(", ")})`,
  ].join("\n");
}

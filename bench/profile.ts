/**
 * Where the time goes: runs Atrium (`dist/src/main.js`) under `node --cpu-prof` on core 0, drives
 * one request shape at it from core 1 with autocannon, stops it, and prints the hottest functions
 * by self time and by inclusive time (the .cpuprofile is kept for a flame-graph viewer).
 *
 *   node --import tsx bench/profile.ts [rest-get|rest-get-model|rest-post|connect-json|connect-binary|connect-get-model] [--seconds 8] [--top 30]
 *   node --import tsx bench/profile.ts path/to/file.cpuprofile [--top 30]      (only the summary)
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(fileURLToPath(new URL("..", import.meta.url)));
const KEY = "sk-atrium-bench-standard-key-000001";
const which = process.argv[2] && !process.argv[2].startsWith("--") ? process.argv[2] : "connect-json";
const arg = (n: string, d: string) => {
  const i = process.argv.indexOf(`--${n}`);
  return i >= 0 ? process.argv[i + 1]! : d;
};
const SECONDS = Number(arg("seconds", "8"));
const TOP = Number(arg("top", "30"));

const shapes: Record<string, { path: string; method: string; headers: Record<string, string>; body?: string }> = {
  "rest-get": { path: "/v1/models", method: "GET", headers: {} },
  "rest-get-model": { path: "/v1/models/gpt-4o", method: "GET", headers: {} },
  "connect-get-model": { path: "/atrium.v1.ModelsService/GetModel", method: "POST", headers: { "content-type": "application/json", "connect-protocol-version": "1" }, body: '{"model":"gpt-4o"}' },
  "rest-post": {
    path: "/v1/uploads",
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ bytes: 1024, filename: "bench.jsonl", mime_type: "application/jsonl", purpose: "batch" }),
  },
  "connect-json": { path: "/atrium.v1.ModelsService/ListModels", method: "POST", headers: { "content-type": "application/json", "connect-protocol-version": "1" }, body: "{}" },
  "connect-binary": { path: "/atrium.v1.ModelsService/ListModels", method: "POST", headers: { "content-type": "application/proto", "connect-protocol-version": "1" }, body: "" },
};

async function record(): Promise<string> {
  const port: number = await new Promise((r) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => r(p));
    });
  });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-prof-"));
  // Rate limits far above the load, so that no request is refused (the default is 10,000 per minute).
  const config = path.join(dir, "atrium.json");
  fs.writeFileSync(config, JSON.stringify({ organizations: [{ id: "org-default", rate_limits: { requests_per_minute: 1e9, tokens_per_minute: 1e9 }, projects: [{ id: "proj_default" }] }] }));
  const proc = spawn("taskset", ["-c", "0", process.execPath, "--cpu-prof", `--cpu-prof-dir=${dir}`, "dist/src/main.js"], {
    cwd: ROOT,
    env: { ...process.env, ATRIUM_PORT: String(port), ATRIUM_DATA_DIR: path.join(dir, "data"), ATRIUM_API_KEY: KEY, ATRIUM_LOG_LEVEL: arg("log-level", "warn"), ATRIUM_CONFIG: config },
    stdio: "inherit",
  });
  const url = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {}
    if (i > 200) throw new Error("server did not start");
    await new Promise((r) => setTimeout(r, 100));
  }
  const s = shapes[which]!;
  const ac = spawn(
    "taskset",
    ["-c", "1", process.execPath, "node_modules/autocannon/autocannon.js", "-c", "10", "-d", String(SECONDS), "-m", s.method,
      ...Object.entries({ ...s.headers, authorization: `Bearer ${KEY}` }).flatMap(([k, v]) => ["-H", `${k}: ${v}`]),
      ...(s.body !== undefined ? ["-b", s.body] : []), url + s.path],
    { cwd: ROOT, stdio: ["ignore", "inherit", "inherit"] },
  );
  await new Promise((r) => ac.once("exit", r));
  proc.kill("SIGINT");
  await new Promise((r) => proc.once("exit", r));
  const file = fs.readdirSync(dir).find((f) => f.endsWith(".cpuprofile"))!;
  return path.join(dir, file);
}

const profFile = which.endsWith(".cpuprofile") ? which : await record();
const prof = JSON.parse(fs.readFileSync(profFile, "utf8"));

interface Node { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[]; hitCount?: number }
const nodes = new Map<number, Node>(prof.nodes.map((n: Node) => [n.id, n]));
const self = new Map<number, number>();
for (const id of prof.samples) self.set(id, (self.get(id) ?? 0) + 1);
const total = prof.samples.length;
const label = (n: Node) => {
  const u = n.callFrame.url.replace(/^file:\/\//, "").replace(ROOT + "/", "");
  return `${n.callFrame.functionName || "(anonymous)"} ${u ? `${u.replace(/^.*node_modules\//, "nm/")}:${n.callFrame.lineNumber + 1}` : ""}`;
};
const selfBy = new Map<string, number>();
for (const [id, c] of self) {
  const k = label(nodes.get(id)!);
  selfBy.set(k, (selfBy.get(k) ?? 0) + c);
}
// Inclusive: each sample counts once for every distinct function on its stack.
const parent = new Map<number, number>();
for (const n of nodes.values()) for (const c of n.children ?? []) parent.set(c, n.id);
const incl = new Map<string, number>();
for (const [id, c] of self) {
  const seen = new Set<string>();
  for (let x: number | undefined = id; x !== undefined; x = parent.get(x)) seen.add(label(nodes.get(x)!));
  for (const k of seen) incl.set(k, (incl.get(k) ?? 0) + c);
}
const show = (title: string, m: Map<string, number>) => {
  console.log(`\n${title} (of ${total} samples)`);
  for (const [k, c] of [...m].sort((a, b) => b[1] - a[1]).slice(0, TOP)) console.log(`  ${((c / total) * 100).toFixed(1).padStart(5)}%  ${k}`);
};
show("self time", selfBy);
// Self time by where the code lives: Atrium, each package, Node's internals, GC, idle.
const groupOf = (n: Node) => {
  const u = n.callFrame.url;
  const f = n.callFrame.functionName;
  if (!u) return f.startsWith("(") ? f : `native ${f}`;
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(u);
  if (nm) return nm[1]!;
  if (u.startsWith("node:")) return u.replace(/^node:(internal\/)?/, "node:").replace(/\/.*$/, "");
  const src = /\/(dist\/)?(src|gen)\/([^/]+(?:\/[^/]+)?)/.exec(u);
  return src ? `atrium ${src[3]}` : u;
};
const groups = new Map<string, number>();
for (const [id, c] of self) {
  const k = groupOf(nodes.get(id)!);
  groups.set(k, (groups.get(k) ?? 0) + c);
}
show("self time by module", groups);
show("inclusive time", incl);
console.log(`\nprofile: ${profFile}`);

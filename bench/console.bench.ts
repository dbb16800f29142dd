/**
 * The web console (issue 20) against its targets, in Debian's Chromium on localhost.
 *
 *   node --import tsx bench/console.bench.ts [--runs 5] [--upload-mb 512]
 *
 * 1. Bundle size: the JavaScript and CSS index.html loads first, gzipped (target: JS ≤ 250 KB).
 * 2. First screen: a signed-in tab loads /console/#/overview until the readiness card shows
 *    (the first screen usable), median of --runs, from Chromium's navigation timing (startTime 0 to
 *    the card: performance.now() when it appears; plus domContentLoaded and load). Baseline, in the
 *    same browser and run: navigating to /healthz (one tiny JSON response), so the ratio says what
 *    the console costs over the server's cheapest page. Target: < 1 s.
 * 3. Upload from the browser: a --upload-mb file (sparse on disk) dropped on the Files page goes up
 *    through the Uploads API in parallel parts; Chromium's JS heap (CDP Runtime.getHeapUsage) before,
 *    at its peak (sampled every 250 ms) and after. Memory is flat when the peak stays within a few MB
 *    of the start, whatever the file's size. Baseline: the same bytes through the Uploads API from
 *    Node (fetch, same part size), for the throughput ratio.
 * The server runs in this process; the machine is shared, so the ratios are the figures to read.
 */
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, ftruncateSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import pino from "pino";
import { chromium } from "playwright-core";
import { configFromEnv } from "../src/config.js";
import { consoleAssetsDir } from "../src/operability/console.js";
import { startServer } from "../src/server.js";
import { areaConfigSections } from "../src/services/index.js";

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1]! : dflt;
}
const RUNS = Number(arg("runs", "5"));
const UPLOAD_MB = Number(arg("upload-mb", "512"));
const KEY = "sk-atrium-bench-console-key-0001";
const CHROMIUM = process.env.ATRIUM_CHROMIUM ?? "/usr/bin/chromium";
const PART_BYTES = 8 * 1024 * 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const kb = (n: number) => `${(n / 1024).toFixed(1)} KB`;
const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

const root = fileURLToPath(new URL("..", import.meta.url));
const assets = consoleAssetsDir();
if (!existsSync(join(assets, "index.html"))) execFileSync(process.execPath, [join(root, "node_modules/vite/bin/vite.js"), "build", "--config", "console/vite.config.ts", "--logLevel", "warn"], { cwd: root, stdio: "inherit" });

// 1. Bundle size.
const html = readFileSync(join(assets, "index.html"), "utf8");
const initial = [...html.matchAll(/(?:src|href)="\/console\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]!);
let jsGz = 0;
let cssGz = 0;
for (const f of initial) {
  const gz = gzipSync(readFileSync(join(assets, f)), { level: 9 }).length;
  if (f.endsWith(".js")) jsGz += gz;
  else cssGz += gz;
}
const allJs = readdirSync(join(assets, "assets")).filter((f) => f.endsWith(".js"));
console.log(`bundle: initial JavaScript ${kb(jsGz)} gzipped (target ≤ 250 KB: ${jsGz <= 250 * 1024 ? "met" : "MISSED"}), CSS ${kb(cssGz)}; ${allJs.length} JS file(s) in all`);

const dataDir = mkdtempSync(join(tmpdir(), "atrium-bench-console-"));
const cfg = configFromEnv({ ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: KEY }, areaConfigSections());
const server = await startServer(cfg, { logger: pino({ level: "silent" }) });
const profile = mkdtempSync(join(tmpdir(), "atrium-bench-chromium-"));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
  viewport: { width: 1280, height: 800 },
});
try {
  const page = context.pages()[0] ?? (await context.newPage());
  // Sign in once; sessionStorage keeps the key across the reloads below, as in a person's tab.
  await page.goto(`${server.url}/console/`);
  await page.getByLabel("API key").fill(KEY);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Areas" }).waitFor();

  // 2. First screen.
  const consoleRuns: Array<{ usable: number; dcl: number; load: number }> = [];
  const baseRuns: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    await page.goto(`${server.url}/healthz`);
    baseRuns.push(await page.evaluate(() => (performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming).loadEventEnd));
    await page.goto(`${server.url}/console/#/overview`);
    await page.getByTestId("readiness").waitFor();
    consoleRuns.push(
      await page.evaluate(() => {
        const n = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming;
        return { usable: performance.now(), dcl: n.domContentLoadedEventEnd, load: n.loadEventEnd };
      }),
    );
  }
  const usable = median(consoleRuns.map((r) => r.usable));
  const base = median(baseRuns);
  console.log(
    `first screen (median of ${RUNS}): usable at ${usable.toFixed(0)} ms (target < 1000 ms: ${usable < 1000 ? "met" : "MISSED"}), DOMContentLoaded ${median(consoleRuns.map((r) => r.dcl)).toFixed(0)} ms, load ${median(consoleRuns.map((r) => r.load)).toFixed(0)} ms; baseline /healthz load ${base.toFixed(0)} ms; ratio console/baseline ${(usable / Math.max(base, 1)).toFixed(1)}`,
  );

  // 3. Upload.
  const bigPath = join(dataDir, `upload-${UPLOAD_MB}mb.bin`);
  const fd = openSync(bigPath, "w");
  ftruncateSync(fd, UPLOAD_MB * 1024 * 1024);
  closeSync(fd);
  const cdp = await context.newCDPSession(page);
  const heap = async () => ((await cdp.send("Runtime.getHeapUsage")) as { usedSize: number }).usedSize;
  await page.goto(`${server.url}/console/#/files`);
  await page.getByLabel("Upload files").waitFor();
  await cdp.send("HeapProfiler.collectGarbage");
  const before = await heap();
  let peak = before;
  const sampler = setInterval(() => void heap().then((h) => (peak = Math.max(peak, h)), () => undefined), 250);
  const t0 = performance.now();
  await page.getByLabel("Upload files").setInputFiles(bigPath);
  await page.locator(".filerow", { hasText: `upload-${UPLOAD_MB}mb.bin` }).waitFor({ timeout: 600_000 });
  const browserMs = performance.now() - t0;
  clearInterval(sampler);
  await cdp.send("HeapProfiler.collectGarbage");
  const after = await heap();
  const size = UPLOAD_MB * 1024 * 1024;

  // Baseline: the same Uploads API calls from Node, parts read from disk, 4 at a time.
  const auth = { authorization: `Bearer ${KEY}` };
  const t1 = performance.now();
  const up = (await (await fetch(`${server.url}/v1/uploads`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ filename: "node.bin", purpose: "assistants", bytes: size, mime_type: "application/octet-stream" }) })).json()) as { id: string };
  const count = Math.ceil(size / PART_BYTES);
  const ids: string[] = new Array(count);
  let next = 0;
  const { openAsBlob } = await import("node:fs");
  const blob = await openAsBlob(bigPath);
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < count) {
        const i = next++;
        const form = new FormData();
        form.append("data", blob.slice(i * PART_BYTES, Math.min(size, (i + 1) * PART_BYTES)), `part-${i}`);
        ids[i] = ((await (await fetch(`${server.url}/v1/uploads/${up.id}/parts`, { method: "POST", headers: auth, body: form })).json()) as { id: string }).id;
      }
    }),
  );
  const done = await fetch(`${server.url}/v1/uploads/${up.id}/complete`, { method: "POST", headers: { ...auth, "content-type": "application/json" }, body: JSON.stringify({ part_ids: ids }) });
  if (!done.ok) throw new Error(`baseline upload failed: ${await done.text()}`);
  const nodeMs = performance.now() - t1;
  const rate = (ms: number) => size / 1024 / 1024 / (ms / 1000);
  console.log(
    `upload ${UPLOAD_MB} MB from the browser: ${(browserMs / 1000).toFixed(1)} s (${rate(browserMs).toFixed(0)} MB/s; Node baseline ${rate(nodeMs).toFixed(0)} MB/s, ratio ${(rate(browserMs) / rate(nodeMs)).toFixed(2)}); JS heap before ${mb(before)}, peak ${mb(peak)}, after ${mb(after)} (growth ${mb(after - before)}, peak over start ${mb(peak - before)})`,
  );
} finally {
  await context.close();
  await server.close();
  rmSync(profile, { recursive: true, force: true });
  rmSync(dataDir, { recursive: true, force: true });
}

// The web console (issue 20) in a real Chromium against a real Atrium: what a person does on each
// page, the safety rules (CSP, nosniff, names as text), and an axe-core pass on every page.
// ATRIUM_CONSOLE_SCREENSHOTS=<dir> also saves each page at 1280×800 (`npm run console:screenshots`).
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Page } from "playwright-core";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ADMIN_KEY, API_KEY, KEYS, startTestServer, tempDir, testConfig, type TestServer } from "../shared/server.js";
import { ensureConsoleBuilt, launchConsoleBrowser, seriousViolations, signIn, type ConsoleBrowser } from "./browser.js";

const SHOTS = process.env.ATRIUM_CONSOLE_SCREENSHOTS;

let s: TestServer;
let b: ConsoleBrowser;
let page: Page;
let dir: string;
/** alert() calls the page made: an injected script would show up here. */
const alerts: string[] = [];
let failed = false;

async function shot(name: string) {
  if (!SHOTS) return;
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`) });
}

async function expectAccessible() {
  expect(await seriousViolations(page)).toEqual([]);
}

async function go(hash: string) {
  await page.evaluate((h) => (location.hash = h), hash);
  await page.getByRole("heading", { level: 1 }).waitFor();
}

function fixture(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const api = (path: string, init: RequestInit & { key?: string } = {}) =>
  fetch(`${s.baseURL}${path}`, { ...init, headers: { authorization: `Bearer ${init.key ?? API_KEY}`, ...(init.headers ?? {}) } });

beforeAll(async () => {
  ensureConsoleBuilt();
  dir = tempDir("atrium-console-test-");
  const configPath = testConfig(dir);
  // Training steps every 3 ms, so a job on ten examples ends in well under a second.
  writeFileSync(configPath, JSON.stringify({ ...JSON.parse(readFileSync(configPath, "utf8")), fine_tuning: { step_interval_ms: 3 } }));
  s = await startTestServer({ env: { ATRIUM_CONFIG: configPath } });
  b = await launchConsoleBrowser();
  page = b.page;
  page.on("dialog", (d) => {
    if (d.type() === "alert") alerts.push(d.message());
  });
}, 120_000);

afterEach(async (ctx) => {
  // A failing step leaves a picture of the page beside the test's temp files.
  if (ctx.task.result?.state !== "fail" || !page) return;
  failed = true;
  const path = join(dir, `failed-${ctx.task.name.slice(0, 40).replace(/\W+/g, "-")}.png`);
  await page.screenshot({ path }).catch(() => undefined);
  console.error(`console test failed; the page is in ${path}`);
});

afterAll(async () => {
  await b?.close();
  await s?.stop();
  if (!failed) rmSync(dir, { recursive: true, force: true });
});

describe("served by Atrium", () => {
  it("GET / redirects to /console/, whose responses carry the CSP and nosniff", async () => {
    const root = await fetch(`${s.url}/`, { redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/console/");
    const index = await fetch(`${s.url}/console/`);
    expect(index.status).toBe(200);
    const html = await index.text();
    const csp = index.headers.get("content-security-policy")!;
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain("unsafe-inline");
    expect(index.headers.get("x-content-type-options")).toBe("nosniff");
    // No inline script: every <script> has a src.
    expect(html).toMatch(/<script[^>]+src="\/console\/assets\/[^"]+\.js"/);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const asset = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const js = await fetch(`${s.url}${asset}`);
    expect(js.headers.get("content-type")).toMatch(/javascript/);
    expect(js.headers.get("x-content-type-options")).toBe("nosniff");
  });

  it("ATRIUM_CONSOLE=off serves no console and no redirect", async () => {
    const off = await startTestServer({ env: { ATRIUM_CONSOLE: "off" } });
    try {
      expect((await fetch(`${off.url}/console/`)).status).toBe(404);
      expect((await fetch(`${off.url}/`, { redirect: "manual" })).status).toBe(404);
      expect((await fetch(`${off.url}/healthz`)).status).toBe(200);
    } finally {
      await off.stop();
    }
  });
});

// Generous per-test time: under the whole suite the browser, ffmpeg and the models share two cores.
describe("in the browser", { timeout: 180_000 }, () => {
  it("loads with no key, shows nothing but the sign-in form, and shows a refused key's error with its code", async () => {
    const calls: string[] = [];
    page.on("request", (r) => calls.push(r.url()));
    await page.goto(`${s.url}/console/`);
    await page.getByLabel("API key").waitFor();
    expect(calls.filter((u) => u.includes("/v1/"))).toEqual([]);
    await expectAccessible();
    await shot("sign-in");
    await page.getByLabel("API key").fill("sk-not-a-real-key-000000");
    await page.getByRole("button", { name: "Sign in" }).click();
    const error = page.getByTestId("api-error");
    await error.waitFor();
    expect(await error.locator('[data-field="code"]').textContent()).toBe("invalid_api_key");
    expect(await error.locator('[data-field="type"]').textContent()).toBe("invalid_request_error");
    expect(await error.textContent()).toContain("401");
    // The refused key was not kept.
    expect(await page.evaluate(() => sessionStorage.getItem("atrium.key"))).toBeNull();
    page.removeAllListeners("request");
  });

  it("signs in, keeps the key only in sessionStorage, and shows the rate-limit headers", async () => {
    await signIn(page, s.url, API_KEY);
    expect(await page.evaluate(() => [sessionStorage.getItem("atrium.key"), localStorage.length])).toEqual([API_KEY, 0]);
    expect(page.url()).not.toContain(API_KEY);
    await page.getByTestId("rate-limits").waitFor();
    expect(await page.getByTestId("rate-limits").textContent()).toMatch(/Requests \d+\/10000/);
  });

  it("overview: readiness, requests per area, storage", async () => {
    await go("#/overview");
    await page.getByTestId("readiness").waitFor();
    expect(await page.getByTestId("readiness").textContent()).toBe("ok");
    await page.getByRole("cell", { name: "models" }).first().waitFor();
    await page.getByTestId("storage").waitFor();
    await expectAccessible();
  });

  it("files: upload through the page, see it listed, preview its text; the XSS name shows as text", async () => {
    await go("#/files");
    await page.getByLabel("Upload files").setInputFiles(fixture("notes.txt", "Atrium keeps notes.\nSecond line."));
    const row = page.locator(".filerow", { hasText: "notes.txt" });
    await row.waitFor();
    await row.getByRole("button", { name: "Preview notes.txt" }).click();
    expect(await page.getByTestId("preview-text").textContent()).toContain("Atrium keeps notes.");
    await page.getByRole("button", { name: "Close preview" }).click();

    const evil = "<img src=x onerror=alert(1)>.txt";
    const form = new FormData();
    form.append("purpose", "assistants");
    form.append("file", new Blob(["<script>alert(2)</script> in a chunk"]), evil);
    expect((await api("/files", { method: "POST", body: form })).status).toBe(200);
    await page.getByRole("button", { name: "Refresh" }).click();
    const evilRow = page.locator(".filerow", { hasText: evil });
    await evilRow.waitFor();
    expect(await evilRow.locator(".filename").textContent()).toBe(evil);
    expect(await page.locator(".filelist img").count()).toBe(0);
    await evilRow.getByRole("button", { name: `Preview ${evil}` }).click();
    expect(await page.getByTestId("preview-text").textContent()).toContain("<script>alert(2)</script>");
    expect(await page.locator(".preview script").count()).toBe(0);
    expect(alerts).toEqual([]);
    await expectAccessible();
    await shot("files");
    await page.getByRole("button", { name: "Close preview" }).click();

    await page.getByRole("button", { name: "Delete notes.txt" }).click();
    await row.waitFor({ state: "detached" });
  });

  it("files: the purpose filter asks the API for that purpose only", async () => {
    await go("#/files");
    await page.getByLabel("Filter by purpose").selectOption("batch");
    await page.waitForFunction(() => document.querySelector('[data-testid="file-count"]')?.textContent?.startsWith("0"));
    await page.getByLabel("Filter by purpose").selectOption("");
    await page.locator(".filerow[data-file-id]").first().waitFor();
  });

  it("vector stores: create, attach files with attributes, wait for ingestion, search with a compound filter", async () => {
    const up = async (name: string, text: string) => {
      const form = new FormData();
      form.append("purpose", "assistants");
      form.append("file", new Blob([text]), name);
      return ((await (await api("/files", { method: "POST", body: form })).json()) as { id: string }).id;
    };
    const older = await up("whales-2023.txt", "Blue whales sing in the cold ocean. Whales migrate across the ocean every year.");
    const newer = await up("whales-2024.txt", "Humpback whales breach in the warm ocean near the reef; whales feed in the ocean.");
    await go("#/vector-stores");
    await page.getByLabel("Name").fill("ocean notes");
    await page.getByRole("button", { name: "Create vector store" }).click();
    await page.getByRole("heading", { name: "Vector store ocean notes" }).waitFor();
    for (const [id, year] of [[older, 2023], [newer, 2024]] as const) {
      await page.locator('select[name="file_id"]').selectOption(id);
      await page.getByLabel("Attributes (JSON)").fill(JSON.stringify({ topic: "sea", year }));
      await page.getByRole("button", { name: "Attach file" }).click();
      await page.locator('[data-testid="vs-file"]', { hasText: id }).waitFor();
    }
    await page.waitForFunction(() => [...document.querySelectorAll('[data-testid="vs-file"] .status')].filter((e) => e.textContent === "completed").length === 2, undefined, { timeout: 30_000 });

    await page.getByLabel("Query", { exact: true }).fill("whales in the ocean");
    await page.getByRole("button", { name: "Add filter" }).click();
    await page.locator('select[name="filter-type-root"]').selectOption("and");
    await page.locator('input[name="filter-key-root-0"]').fill("topic");
    await page.locator('input[name="filter-value-root-0"]').fill("sea");
    await page.getByRole("button", { name: "Add condition" }).click();
    await page.locator('select[name="filter-type-root-1"]').selectOption("gte");
    await page.locator('input[name="filter-key-root-1"]').fill("year");
    await page.locator('input[name="filter-value-root-1"]').fill("2024");
    await page.getByRole("button", { name: "Search" }).click();
    const results = page.getByTestId("search-results");
    await results.waitFor();
    const first = results.locator("li").first();
    expect(await first.textContent()).toContain("whales-2024.txt");
    expect(await first.locator(".chunk").textContent()).toContain("Humpback whales breach");
    expect(await first.locator("mark").first().textContent()).toMatch(/whales|ocean/i);
    expect(await results.locator("li", { hasText: "whales-2023.txt" }).count()).toBe(0);
    await expectAccessible();
    await shot("vector-store-search");
    await go("#/vector-stores");
    await page.getByRole("link", { name: "ocean notes" }).waitFor();
    await expectAccessible();
    await shot("vector-stores");
  });

  it("batches: create from a JSONL file and watch the bar reach 100 %", async () => {
    const lines = ["a cat", "a dog", "a bird"].map((t, i) => JSON.stringify({ custom_id: `r${i}`, method: "POST", url: "/v1/embeddings", body: { model: "atrium-embed-use-lite", input: t } }));
    await go("#/batches");
    await page.getByLabel("Input (JSONL)").setInputFiles(fixture("batch.jsonl", lines.join("\n") + "\n"));
    await page.getByLabel("Endpoint").selectOption("/v1/embeddings");
    await page.getByRole("button", { name: "Create batch" }).click();
    const row = page.locator("tr[data-batch-id]").first();
    await row.locator(".status-completed").waitFor({ timeout: 30_000 });
    expect(await row.locator("progress").evaluate((p: HTMLProgressElement) => p.value / p.max)).toBe(1);
    expect(await row.locator(".bar-text").textContent()).toBe("100 %");
    expect(await row.textContent()).toContain("3 ok, 0 failed of 3");
    await row.getByRole("button", { name: "Output" }).waitFor();
    await expectAccessible();
    await shot("batches");
  });

  it("fine-tuning: run a job and see the metrics chart drawn", async () => {
    const rows = Array.from({ length: 10 }, (_, i) => JSON.stringify({ messages: [{ role: "user", content: `What is ${i} + ${i}?` }, { role: "assistant", content: `${2 * i}` }] }));
    await go("#/fine-tuning");
    await page.getByLabel("Training file (JSONL)").setInputFiles(fixture("train.jsonl", rows.join("\n") + "\n"));
    await page.getByLabel("Base model").selectOption("gpt-4o-mini");
    await page.getByRole("button", { name: "Create job" }).click();
    await page.getByRole("heading", { name: /Fine-tuning job ftjob/ }).waitFor();
    await page.locator(".status-succeeded").waitFor({ timeout: 30_000 });
    const chart = page.getByTestId("chart");
    await page.waitForFunction(() => Number(document.querySelector('[data-testid="chart"]')?.getAttribute("data-points")) > 1);
    // The canvas has pixels drawn on it, not only a blank box.
    const painted = await chart.locator("canvas").evaluate((c: HTMLCanvasElement) => {
      const d = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) if (d[i]! > 0) n++;
      return n;
    });
    expect(painted).toBeGreaterThan(100);
    await page.getByText("The job has successfully completed").waitFor();
    await expectAccessible();
    await shot("fine-tuning-job");
    await go("#/fine-tuning");
    await page.getByRole("button", { name: "Run grader" }).click();
    await page.getByTestId("grader-reward").waitFor();
    expect(await page.getByTestId("grader-reward").textContent()).toBe("Reward: 1");
    await expectAccessible();
    await shot("fine-tuning");
  });

  it("videos: create one, watch its progress finish, and play the MP4 in the page with Range requests", async () => {
    const media: Array<{ status: number; range: string | undefined; viaWorker: boolean }> = [];
    const onResponse = (r: import("playwright-core").Response) => {
      if (r.url().includes("/content?variant=video")) media.push({ status: r.status(), range: r.request().headers().range, viaWorker: r.fromServiceWorker() });
    };
    page.on("response", onResponse);
    await go("#/videos");
    await page.getByLabel("Prompt").fill("A red kite over green hills");
    await page.getByLabel("Size").selectOption("1280x720");
    await page.getByLabel("Seconds").selectOption("4");
    await page.getByRole("button", { name: "Create video" }).click();
    await page.getByRole("heading", { name: /Video video_/ }).waitFor();
    const player = page.getByTestId("video-player");
    await player.waitFor({ timeout: 60_000 });
    expect(await page.locator(".bar-text").first().textContent()).toBe("100 %");
    await page.waitForFunction(() => (document.querySelector('[data-testid="video-player"]') as HTMLVideoElement).readyState >= 2, undefined, { timeout: 20_000 });
    const state = await player.evaluate(async (v: HTMLVideoElement) => {
      v.muted = true;
      await v.play();
      await new Promise((r) => setTimeout(r, 300));
      return { readyState: v.readyState, duration: v.duration, time: v.currentTime, width: v.videoWidth, height: v.videoHeight };
    });
    expect(state.readyState).toBeGreaterThanOrEqual(2);
    expect(Math.abs(state.duration - 4)).toBeLessThan(0.2);
    expect(state.time).toBeGreaterThan(0);
    expect([state.width, state.height]).toEqual([1280, 720]);
    // The element streams the API's URL (no key in it) through the media worker, in byte ranges.
    expect(await player.evaluate((v: HTMLVideoElement) => new URL(v.currentSrc).pathname)).toMatch(/^\/v1\/videos\/video_\w+\/content$/);
    expect(media.some((m) => m.viaWorker && m.status === 206 && m.range?.startsWith("bytes="))).toBe(true);
    expect(media.every((m) => m.status === 200 || m.status === 206)).toBe(true);
    page.off("response", onResponse);
    await page.getByRole("img", { name: /Thumbnail of/ }).waitFor();
    await expectAccessible();
    await shot("video");
    await go("#/videos");
    await page.locator(".status-completed").first().waitFor();
    await expectAccessible();
    await shot("videos");
  });

  it("containers: create, upload a file, see the expiry countdown", async () => {
    await go("#/containers");
    await page.getByLabel("Name").fill("scratch");
    await page.getByRole("button", { name: "Create container" }).click();
    await page.getByRole("link", { name: "scratch" }).click();
    await page.getByRole("heading", { name: "Container scratch" }).waitFor();
    await page.getByLabel("Upload files").setInputFiles(fixture("data.csv", "a,b\n1,2\n"));
    await page.getByRole("cell", { name: "/mnt/data/data.csv", exact: true }).waitFor();
    expect(await page.getByTestId("expiry").textContent()).toMatch(/^(19|20):\d\d$/);
    await expectAccessible();
    await shot("container");
    await go("#/containers");
    await page.getByRole("link", { name: "scratch" }).waitFor();
    await expectAccessible();
    await shot("containers");
  });

  it("playgrounds: tokens, moderation scores as bars, embeddings similarity", async () => {
    await go("#/playgrounds");
    await page.getByLabel("Text", { exact: true }).first().fill("How many tokens is this?");
    await page.getByRole("button", { name: "Count tokens" }).click();
    expect(Number(await (await page.getByTestId("token-count").elementHandle())!.textContent())).toBeGreaterThan(5);
    await page.locator('textarea[name="moderation_input"]').fill("I will hurt you");
    await page.getByRole("button", { name: "Classify" }).click();
    await page.getByTestId("flagged").waitFor();
    expect(await page.locator('progress[aria-label^="Score of"]').count()).toBeGreaterThan(5);
    await page.getByLabel("First text").fill("a small cat");
    await page.getByLabel("Second text").fill("a little kitten");
    await page.getByRole("button", { name: "Compare" }).click();
    const sim = Number(await (await page.getByTestId("similarity").elementHandle())!.textContent());
    expect(sim).toBeGreaterThan(0.3);
    expect(sim).toBeLessThanOrEqual(1);
    // A bad request shows the API's error in full.
    await page.getByLabel("Model").last().fill("no-such-model");
    await page.getByRole("button", { name: "Compare" }).click();
    const error = page.locator(".card", { hasText: "Embeddings" }).getByTestId("api-error");
    await error.waitFor();
    expect(await error.locator('[data-field="param"]').textContent()).toBe("model");
    expect(await error.locator('[data-field="code"]').textContent()).not.toBe("null");
    await expectAccessible();
    await shot("playgrounds");
  });

  it("overview after the work above: requests and errors per area, jobs by kind, storage", async () => {
    await go("#/overview");
    await page.getByRole("cell", { name: "vector_stores", exact: true }).waitFor();
    await page.getByRole("cell", { name: "batches.run", exact: true }).waitFor();
    expect(await page.getByTestId("storage").textContent()).toMatch(/in \d+ files/);
    await expectAccessible();
    await shot("overview");
  });

  it("a reader-role key is refused writes cleanly, with the API's error", async () => {
    await page.getByRole("button", { name: "Sign out" }).click();
    await signIn(page, s.url, KEYS.reader);
    await go("#/vector-stores");
    await page.getByRole("link", { name: "ocean notes" }).waitFor();
    await page.getByLabel("Name").fill("not allowed");
    await page.getByRole("button", { name: "Create vector store" }).click();
    const error = page.getByTestId("api-error");
    await error.waitFor();
    expect(await error.textContent()).toContain("403");
    expect(await page.getByRole("link", { name: "not allowed" }).count()).toBe(0);
    await go("#/files");
    await page.locator(".filerow[data-file-id]").first().waitFor();
    await page.getByRole("button", { name: /^Delete whales-2023/ }).click();
    await page.getByTestId("api-error").waitFor();
    expect(await page.getByTestId("api-error").textContent()).toContain("403");
    await page.locator(".filerow", { hasText: "whales-2023.txt" }).waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    expect(await page.evaluate(() => sessionStorage.length)).toBe(0);
  });

  it("an admin key picks a project, and shares a checkpoint with another project", async () => {
    const form = new FormData();
    form.append("purpose", "assistants");
    form.append("file", new Blob(["b"]), "only-in-project-b.txt");
    expect((await api("/files", { method: "POST", body: form, key: KEYS.projectB })).status).toBe(200);

    await page.evaluate(() => sessionStorage.clear());
    await page.goto(`${s.url}/console/`);
    await page.getByLabel("API key").fill(ADMIN_KEY);
    await page.getByLabel(/^Project/).fill("proj_nowhere");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByTestId("api-error").waitFor();
    expect(await page.getByTestId("api-error").locator('[data-field="code"]').textContent()).toBe("mismatched_project");

    await signIn(page, s.url, ADMIN_KEY, "proj_b");
    await go("#/files");
    await page.locator(".filerow", { hasText: "only-in-project-b.txt" }).waitFor();
    expect(await page.locator(".filerow", { hasText: "whales-2024.txt" }).count()).toBe(0);
    expect(await page.locator(".top .who").textContent()).toBe("project proj_b");
    await page.getByRole("button", { name: "Sign out" }).click();

    await signIn(page, s.url, ADMIN_KEY, "proj_default");
    await go("#/fine-tuning");
    await page.locator("tbody a").first().click();
    await page.getByRole("button", { name: "Permissions" }).first().click();
    await page.getByLabel("Share with project").fill("proj_b");
    await page.getByRole("button", { name: "Grant (admin)" }).click();
    await page.locator(".permissions li", { hasText: "proj_b" }).waitFor();
    await expectAccessible();
    await page.getByRole("button", { name: "Sign out" }).click();
  });

  it("files: 1,500 files page in as the list scrolls, with only the visible rows in the DOM", async () => {
    // A server of its own without rate limits: the files area's upload rule would refuse this burst.
    const bulk = await startTestServer({ env: { ATRIUM_RATE_LIMITS: "off" } });
    try {
      const names = Array.from({ length: 1500 }, (_, i) => `bulk-${String(i).padStart(4, "0")}.txt`);
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < names.length) {
            const form = new FormData();
            form.append("purpose", "user_data");
            form.append("file", new Blob(["x"]), names[next++]!);
            expect((await fetch(`${bulk.baseURL}/files`, { method: "POST", body: form, headers: { authorization: `Bearer ${API_KEY}` } })).status).toBe(200);
          }
        }),
      );
      await signIn(page, bulk.url, API_KEY);
      await go("#/files");
      await page.getByLabel("Filter by purpose").selectOption("user_data");
      await page.waitForFunction(() => document.querySelector('[data-testid="file-count"]')?.textContent === "1000+ files");
      expect(await page.locator(".filelist .filerow").count()).toBeLessThan(60);
      // Scrolling to the end asks for the next page (after the last id) and shows every file.
      await page.getByTestId("file-list").evaluate((el) => el.scrollTo(0, el.scrollHeight));
      await page.waitForFunction(() => document.querySelector('[data-testid="file-count"]')?.textContent === "1500 files");
      await page.getByTestId("file-list").evaluate((el) => el.scrollTo(0, el.scrollHeight));
      await page.locator(".filerow", { hasText: "bulk-0000.txt" }).waitFor();
      expect(await page.locator(".filelist .filerow").count()).toBeLessThan(60);
    } finally {
      await bulk.stop();
    }
  });
});

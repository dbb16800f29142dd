// Driving the real console in Debian's Chromium (playwright-core, no downloaded browser): a fresh
// profile per launch, the flags issue 20 lists, and the built console (built here when missing).
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import axe from "axe-core";
import { chromium, type BrowserContext, type Page } from "playwright-core";
import { consoleAssetsDir } from "../../src/operability/console.js";

export const CHROMIUM = process.env.ATRIUM_CHROMIUM ?? "/usr/bin/chromium";
export const VIEWPORT = { width: 1280, height: 800 };

/** The newest modification time of a file under `dir` (skipping node_modules). */
function newestUnder(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    if (e.name === "node_modules") continue;
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestUnder(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** Builds console/ into dist/console when a test runs without `npm run build`, or after an edit. */
export function ensureConsoleBuilt() {
  const root = fileURLToPath(new URL("../..", import.meta.url));
  const index = join(consoleAssetsDir(), "index.html");
  if (existsSync(index) && statSync(index).mtimeMs >= newestUnder(join(root, "console"))) return;
  execFileSync(process.execPath, [join(root, "node_modules/vite/bin/vite.js"), "build", "--config", "console/vite.config.ts", "--logLevel", "warn"], { cwd: root, stdio: "inherit" });
}

export interface ConsoleBrowser {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/**
 * Headless Chromium on a fresh profile directory. Playwright takes the profile as
 * launchPersistentContext's argument (it refuses `--user-data-dir` among launch()'s args).
 */
export async function launchConsoleBrowser(): Promise<ConsoleBrowser> {
  const profile = mkdtempSync(join(tmpdir(), "atrium-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    viewport: VIEWPORT,
    acceptDownloads: true,
  });
  const page = context.pages()[0] ?? (await context.newPage());
  // Deleting asks first; a person says yes.
  page.on("dialog", (d) => void d.accept());
  return {
    context,
    page,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export async function signIn(page: Page, baseUrl: string, key: string, project = "") {
  await page.goto(`${baseUrl}/console/`);
  await page.getByLabel("API key").fill(key);
  if (project) await page.getByLabel(/^Project/).fill(project);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Areas" }).waitFor();
}

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: string[];
}

/** axe-core's serious and critical violations on the page as it is now. */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  // DevTools evaluation is not subject to the page's CSP, so axe needs no inline <script>.
  if (!(await page.evaluate("typeof window.axe !== 'undefined'"))) await page.evaluate(axe.source);
  const result = (await page.evaluate("window.axe.run(document, { resultTypes: ['violations'] })")) as { violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: string[] }> }> };
  return result.violations
    .filter((v) => v.impact === "serious" || v.impact === "critical")
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.map((n) => n.target.join(" ")) }));
}

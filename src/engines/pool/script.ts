// Which file a worker starts from. Compiled (`npm start` runs dist/), the worker is the `.js` file
// beside the calling module. From TypeScript sources (vitest, `node --import tsx`), Node cannot
// run the `.ts` file in a fresh thread by itself: a worker does not get a --import loader through
// execArgv on Node 20, and vitest's loader lives outside Node's. So the thread starts from a tiny
// data: module that registers tsx's ESM hooks in that thread, then imports the `.ts` file.
import { existsSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

/**
 * The URL to start the worker `name` from, resolved against `callerUrl` (the caller's
 * import.meta.url): `./name.js` when the caller is compiled JS and the file is there, else
 * `./name.ts` through tsx.
 */
export function workerScript(callerUrl: string, name: string): URL {
  const js = new URL(`./${name}.js`, callerUrl);
  if (callerUrl.endsWith(".js") && existsSync(fileURLToPath(js))) return js;
  const ts = new URL(`./${name}.ts`, callerUrl);
  if (existsSync(fileURLToPath(ts))) return tsxBootstrap(ts);
  throw new Error(`worker script not found: neither ${fileURLToPath(js)} nor ${fileURLToPath(ts)} exists`);
}

let tsxApi: string | undefined;

/** file: URL of tsx's ESM API (`tsx/esm/api`, import condition), which exports register(). */
function tsxEsmApi(): string {
  if (tsxApi) return tsxApi;
  const require = createRequire(import.meta.url);
  let pkgPath: string;
  try {
    pkgPath = require.resolve("tsx/package.json");
  } catch {
    throw new Error("running a worker from TypeScript sources needs the tsx package (a devDependency); run the compiled dist/ instead");
  }
  // require.resolve would pick the CommonJS build; the ESM one is named in the exports map.
  const pkg = JSON.parse(readFileSync(pkgPath, "utf8")) as { exports: Record<string, { import?: { default?: string } }> };
  const rel = pkg.exports["./esm/api"]?.import?.default;
  if (!rel) throw new Error("tsx's package.json has no ./esm/api import export");
  tsxApi = pathToFileURL(join(dirname(pkgPath), rel)).href;
  return tsxApi;
}

function tsxBootstrap(target: URL): URL {
  const code = `import { register } from ${JSON.stringify(tsxEsmApi())};\nregister();\nawait import(${JSON.stringify(target.href)});\n`;
  return new URL(`data:text/javascript,${encodeURIComponent(code)}`);
}

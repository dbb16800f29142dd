// What `npm start` runs (loaded by main.ts): read the environment, start the server, print where it
// listens. With ATRIUM_MTLS_PORT, also the mutual-TLS listener. ATRIUM_CONFIG is re-read on SIGHUP
// and when the file (or a JWKS / PEM file it names) changes; an invalid new file is reported and
// the running configuration kept.
import { youngGenerationGrows } from "./start-up-heap.js";
import { readFileSync, unwatchFile, watchFile } from "node:fs";
import { ConfigError, configFromEnv, type AtriumConfig } from "./config.js";
import { startServer, type RunningServer } from "./server.js";
import { areaConfigSections } from "./services/index.js";
import { MTLS_LISTENER } from "./auth/identity/index.js";
import { EngineUnreachable } from "./storage/index.js";

/** How often watched files are polled (stat only). Polling also sees files replaced by rename, as editors and config managers do. */
const WATCH_INTERVAL_MS = 1000;

/** The files a configuration depends on: ATRIUM_CONFIG and the JWKS / PEM files it names. */
function watchedFiles(cfg: AtriumConfig): string[] {
  const files = new Set<string>();
  if (process.env.ATRIUM_CONFIG) files.add(process.env.ATRIUM_CONFIG);
  for (const f of cfg.identity?.files ?? []) files.add(f);
  return [...files];
}

function watchConfig(server: RunningServer, first: AtriumConfig, sections: Record<string, object>) {
  let watching: string[] = [];
  let reloading = Promise.resolve();
  const watch = (cfg: AtriumConfig) => {
    // A file watched before keeps its watcher: a new one would take its first stat after the
    // reload, and a write made in between would never count as a change.
    const next = watchedFiles(cfg);
    for (const f of watching) if (!next.includes(f)) unwatchFile(f);
    for (const f of next)
      if (!watching.includes(f))
        watchFile(f, { interval: WATCH_INTERVAL_MS, persistent: false }, (now, before) => {
          if (now.mtimeMs !== before.mtimeMs || now.size !== before.size || now.ino !== before.ino) reload(`${f} changed`);
        });
    watching = next;
  };
  // One reload at a time, in order.
  const reload = (why: string) =>
    (reloading = reloading.then(async () => {
      let next: AtriumConfig;
      try {
        next = configFromEnv(process.env, sections);
      } catch (e) {
        server.app.log.error({ why, err: (e as Error).message }, "configuration not reloaded: the new one is invalid; the running one stays");
        return;
      }
      try {
        await server.reloadConfig(next);
        server.app.log.info({ why }, "configuration reloaded");
        watch(next);
      } catch (e) {
        server.app.log.error({ why, err: (e as Error).message }, "configuration reload failed");
      }
    }));
  process.on("SIGHUP", () => void reload("SIGHUP"));
  watch(first);
  return () => {
    for (const f of watching) unwatchFile(f);
  };
}

async function main() {
  const sections = areaConfigSections();
  const cfg = configFromEnv(process.env, sections);
  const server = await startServer(cfg);
  if (server.generatedAdminKey) {
    // Printed once; only its hash is stored.
    process.stdout.write(
      `\nNo API key was configured, so an admin key was created. It is shown only this once:\n\n  ${server.generatedAdminKey}\n\n` +
        `Use it as: Authorization: Bearer <key>  (or set ATRIUM_API_KEY / ATRIUM_ADMIN_KEY).\n\n`,
    );
  }
  server.app.log.info({ url: server.url, dataDir: cfg.dataDir }, `Atrium listening on ${server.url} (REST at ${server.url}/v1, Connect, gRPC-Web and gRPC on the same port)`);
  if (cfg.mtls) {
    const mtls = await server.addListener(MTLS_LISTENER, {
      host: cfg.host,
      port: cfg.mtls.port,
      tls: { cert: readFileSync(cfg.mtls.cert), key: readFileSync(cfg.mtls.key), requestCert: true },
    });
    server.app.log.info({ mtlsUrl: mtls.url }, `mutual-TLS endpoint on ${mtls.url} (POST /oauth/token for X.509 exchange, API calls with a client certificate)`);
  }
  const unwatch = watchConfig(server, cfg, sections);
  youngGenerationGrows();
  // The BPE rank tables (≈22 MiB and 13 MiB) load on the first token-counting request that needs
  // them (~0.5 s each), not here: a server that never counts tokens should not carry them.
  const stop = async (signal: string) => {
    server.app.log.info({ signal }, "shutting down");
    unwatch();
    await server.close();
    process.exit(0);
  };
  process.once("SIGINT", () => void stop("SIGINT"));
  process.once("SIGTERM", () => void stop("SIGTERM"));
}

main().catch((err) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`atrium: ${err.message}\n`);
    process.exit(2);
  }
  // An engine that cannot be reached is the operator's to fix, not a bug: its message, no stack.
  if (err instanceof EngineUnreachable) {
    process.stderr.write(`atrium: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(`atrium: failed to start: ${err?.stack ?? err}\n`);
  process.exit(1);
});

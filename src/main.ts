// `npm start`: read the environment, start the server, print where it listens.
import { ConfigError, configFromEnv } from "./config.js";
import { startServer } from "./server.js";
import { areaConfigSections } from "./services/index.js";

async function main() {
  const cfg = configFromEnv(process.env, areaConfigSections());
  const server = await startServer(cfg);
  if (server.generatedAdminKey) {
    // Printed once; only its hash is stored.
    process.stdout.write(
      `\nNo API key was configured, so an admin key was created. It is shown only this once:\n\n  ${server.generatedAdminKey}\n\n` +
        `Use it as: Authorization: Bearer <key>  (or set ATRIUM_API_KEY / ATRIUM_ADMIN_KEY).\n\n`,
    );
  }
  server.app.log.info({ url: server.url, dataDir: cfg.dataDir }, `Atrium listening on ${server.url} (REST at ${server.url}/v1, Connect, gRPC-Web and gRPC on the same port)`);
  // The BPE rank tables (≈22 MiB and 13 MiB) load on the first token-counting request that needs
  // them (~0.5 s each), not here: a server that never counts tokens should not carry them.
  const stop = async (signal: string) => {
    server.app.log.info({ signal }, "shutting down");
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
  process.stderr.write(`atrium: failed to start: ${err?.stack ?? err}\n`);
  process.exit(1);
});

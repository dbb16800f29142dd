// The web console: static assets built from console/ (by `npm run build`, into dist/console),
// served at /console/ on the main port. Every piece of data the console shows comes from the
// public REST API with the user's own key, so this module serves files and nothing else.
// Environment: ATRIUM_CONSOLE (on|off, default on).
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { FastifyInstance } from "fastify";
import fastifyStatic from "@fastify/static";

/**
 * No inline script or style attribute injection, no framing, no other origin: the console talks
 * only to the server it is served by. Media and blob: URLs cover video playback and previews.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "media-src 'self' blob:",
  "frame-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** The folder holding the built console: dist/console under the package root. */
export function consoleAssetsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, "package.json"))) {
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return join(dir, "dist", "console");
}

export function installConsole(app: FastifyInstance, o: { root?: string } = {}) {
  const root = o.root ?? consoleAssetsDir();
  app.register(async (scope) => {
    scope.addHook("onSend", (_req, reply, payload, done) => {
      reply.header("content-security-policy", CONSOLE_CSP);
      reply.header("x-content-type-options", "nosniff");
      reply.header("referrer-policy", "no-referrer");
      done(null, payload);
    });
    if (!existsSync(join(root, "index.html"))) {
      // Not built (a bare `tsc` run): say so instead of a bare 404.
      scope.get("/console/*", (_req, reply) => {
        reply.code(503).type("text/plain").send("The console is not built: run `npm run build`.\n");
      });
    } else {
      await scope.register(fastifyStatic, { root, prefix: "/console/", index: "index.html", wildcard: true, cacheControl: false });
      // Hashed assets never change under their name; index.html always revalidates.
      scope.addHook("onSend", (req, reply, payload, done) => {
        reply.header("cache-control", req.url.startsWith("/console/assets/") ? "public, max-age=31536000, immutable" : "no-cache");
        done(null, payload);
      });
    }
    scope.get("/console", (_req, reply) => reply.redirect("/console/"));
  });
  app.get("/", (_req, reply) => reply.redirect("/console/"));
}

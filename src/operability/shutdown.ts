// Graceful shutdown (SIGTERM → server.close()): stop accepting connections, let the requests in
// flight finish — for at most `graceMs` — and only then let Fastify cut what is left. Runs as a
// preClose hook, i.e. before Fastify destroys connections (forceCloseConnections).
//
//   - The listener stops accepting; HTTP/2 sessions get GOAWAY (their open streams finish), idle
//     HTTP/1.1 connections are closed, and every HTTP/1.1 response sent from now on carries
//     `Connection: close`, so a keep-alive client reconnects — to another instance, or is refused.
//   - /readyz answers 503 at once, so a load balancer stops sending traffic.
//   - When no connection is left, or the grace period is over, Fastify closes the rest: an upload
//     cut there fails as a whole (its bytes were going to a temp file that is removed; no record
//     is written), never half-stored. The server's close() then stops the job runner, which
//     releases running jobs for the next start to resume.
import type { Socket } from "node:net";
import type { FastifyInstance } from "fastify";

export const DEFAULT_SHUTDOWN_GRACE_MS = 10_000;

/** An HTTP/1.1 socket between requests: Node's parser is attached and no response is in progress. */
function idleHttp1(s: Socket): boolean {
  const x = s as Socket & { parser?: unknown; _httpMessage?: unknown };
  return !!x.parser && !x._httpMessage;
}

export class Drain {
  draining = false;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly graceMs = DEFAULT_SHUTDOWN_GRACE_MS) {}

  install(app: FastifyInstance) {
    // The one-port listener hands HTTP/1.1 sockets to an inner server that never listens, so
    // Node's closeIdleConnections() cannot see them; track them here (per connection, not per request).
    const track = (s: Socket) => {
      this.sockets.add(s);
      s.once("close", () => this.sockets.delete(s));
    };
    app.server.on("connection", track);
    app.server.on("secureConnection", track);
    app.addHook("preClose", (done) => {
      this.drain(app).then(() => done(), done);
    });
  }

  private closeIdle() {
    for (const s of this.sockets) if (idleHttp1(s)) s.end();
  }

  private async drain(app: FastifyInstance): Promise<void> {
    this.draining = true;
    const server = app.server;
    if (!server.listening) return;
    // Stops accepting; the one-port listener's close() also sends GOAWAY to HTTP/2 sessions.
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Connections that finish a response after this become idle later: close those as they
    // appear, so the wait ends when the last request does, not at the grace deadline.
    this.closeIdle();
    const sweeper = setInterval(() => this.closeIdle(), 25);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, this.graceMs)));
    await Promise.race([closed, deadline]);
    clearInterval(sweeper);
    clearTimeout(timer);
  }
}

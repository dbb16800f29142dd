// Connection budgets of the one-port listener: how long a client may take to say what it wants,
// how long a connection may sit idle, how long a request or response body may make no progress,
// and how many connections one remote address may hold. A client that is slow on purpose (or
// gone without a FIN) must not keep a descriptor, a temp file or a handler forever; a long upload
// or download that keeps moving bytes is never cut.
import type http from "node:http";
import http2 from "node:http2";
import net from "node:net";

export interface ConnectionLimits {
  /** The protocol sniff, the TLS handshake and a request's line and headers must arrive within this. */
  headersTimeoutMs: number;
  /** A keep-alive HTTP/1.1 connection or an HTTP/2 session with no request in flight is closed after this. */
  idleTimeoutMs: number;
  /** A request whose body, or a response whose bytes, move not at all for this long is cut. */
  bodyStallTimeoutMs: number;
  /** Connections one remote address may hold at once; the excess is closed on accept. */
  maxConnectionsPerAddress: number;
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  headersTimeoutMs: 10_000,
  idleTimeoutMs: 65_000,
  bodyStallTimeoutMs: 30_000,
  maxConnectionsPerAddress: 256,
};

type Request = http.IncomingMessage | http2.Http2ServerRequest;
type Response = http.ServerResponse | http2.Http2ServerResponse;

/**
 * Node's HTTP/1.1 server checks headersTimeout from an interval it starts on 'listening'. The
 * inner servers of the one-port listener never listen themselves (sockets are handed to them), so
 * that check is started here; how often it runs bounds how late a slow client is cut.
 */
export function checkingIntervalMs(limits: ConnectionLimits): number {
  return Math.max(50, Math.min(1_000, Math.floor(limits.headersTimeoutMs / 4)));
}

/**
 * Closes what exceeds `maxConnectionsPerAddress` (call on every accepted TCP socket). Returns false
 * when the socket was refused.
 */
export function perAddressCap(limits: ConnectionLimits): (socket: net.Socket) => boolean {
  const open = new Map<string, number>();
  return (socket) => {
    const address = socket.remoteAddress ?? "";
    const count = open.get(address) ?? 0;
    if (count >= limits.maxConnectionsPerAddress) {
      socket.destroy();
      return false;
    }
    open.set(address, count + 1);
    socket.once("close", () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
    return true;
  };
}

/** The exchange in flight on each HTTP/1.1 socket, for the stall check. */
const exchanges = new WeakMap<net.Socket, { req: Request; res: Response }>();

/** True while the request body is still arriving or response bytes wait for the client to read. */
function bytesPending(req: Request, writable: { writableLength: number }): boolean {
  return !req.complete || writable.writableLength > 0;
}

/**
 * Wraps the request handler so every exchange is watched: on HTTP/2 the stream itself, on
 * HTTP/1.1 through the server's 'timeout' event (see guardHttp1).
 */
export function watchExchanges(handler: (req: any, res: any) => void, limits: ConnectionLimits) {
  return (req: Request, res: Response) => {
    const stream = (req as http2.Http2ServerRequest).stream as http2.ServerHttp2Stream | undefined;
    if (stream) {
      stream.setTimeout(limits.bodyStallTimeoutMs);
      stream.on("timeout", () => {
        if (stream.destroyed || stream.closed) return;
        if (bytesPending(req, stream)) stream.close(http2.constants.NGHTTP2_CANCEL);
        // The handler is still working on its answer: not a stalled client.
        else stream.setTimeout(limits.bodyStallTimeoutMs);
      });
    } else exchanges.set(req.socket as net.Socket, { req, res });
    handler(req, res);
  };
}

/**
 * Timeouts of an HTTP/1.1 server (the cleartext inner one, or the TLS server's HTTP/1.1 side):
 * headers within headersTimeoutMs (Node answers 408 through 'clientError'), keep-alive idle
 * within idleTimeoutMs, and a socket whose exchange makes no progress for bodyStallTimeoutMs is
 * destroyed — unless the handler is still computing its answer, which is not the client's doing.
 */
export function guardHttp1(server: http.Server | http2.Http2SecureServer, limits: ConnectionLimits) {
  // These are the options http.createServer takes, kept as same-named properties (the TLS server
  // reads them too); connectionsCheckingInterval is typed only as an option.
  const s = server as http.Server & { connectionsCheckingInterval: number };
  s.headersTimeout = limits.headersTimeoutMs;
  s.requestTimeout = 0; // a long upload that keeps moving is fine; the stall check cuts one that stops
  s.keepAliveTimeout = limits.idleTimeoutMs;
  s.connectionsCheckingInterval = checkingIntervalMs(limits);
  s.timeout = limits.bodyStallTimeoutMs;
  server.on("timeout", (target: unknown) => {
    // The TLS server also reports HTTP/2 sessions here; guardHttp2Sessions handles those.
    if (!(target instanceof net.Socket)) return;
    const exchange = exchanges.get(target);
    const busy = exchange && !exchange.res.writableFinished;
    if (!busy || bytesPending(exchange.req, target)) target.destroy();
    else target.setTimeout(limits.bodyStallTimeoutMs);
  });
}

/** Closes an HTTP/2 session that has had no open stream for idleTimeoutMs. */
export function guardHttp2Sessions(server: http2.Http2Server | http2.Http2SecureServer, limits: ConnectionLimits) {
  server.on("session", (session: http2.ServerHttp2Session) => {
    let open = 0;
    session.on("stream", (stream) => {
      open++;
      stream.once("close", () => open--);
    });
    session.setTimeout(limits.idleTimeoutMs, () => {
      if (session.closed || session.destroyed) return;
      if (open > 0) return void session.setTimeout(limits.idleTimeoutMs);
      session.close();
      // A peer that never acknowledges the GOAWAY does not hold the socket.
      setTimeout(() => session.destroy(), 1_000).unref();
    });
  });
}

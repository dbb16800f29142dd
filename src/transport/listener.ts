// One port, every protocol. Cleartext: each new connection is sniffed for the
// HTTP/2 connection preface; with it the socket goes to an HTTP/2 server (gRPC, or Connect and
// gRPC-Web over h2c with prior knowledge), without it to an HTTP/1.1 server (REST, Connect,
// gRPC-Web). With TLS, ALPN picks h2 or http/1.1 on one secure server. Both halves call the same
// request handler (Fastify's), so routing, hooks and errors are identical whichever way a
// request arrives.
import http from "node:http";
import http2 from "node:http2";
import net from "node:net";
import { constants } from "node:crypto";
import { guardHttp1, guardHttp2Sessions, perAddressCap, watchExchanges, type ConnectionLimits } from "./timeouts.js";

const PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
/** Total request header budget (spec 5.8). Node answers 431 past it, before any handler. */
export const MAX_HEADER_BYTES = 64 * 1024;

type Handler = (req: any, res: any) => void;

export interface TlsFiles {
  cert: Buffer;
  key: Buffer;
  /**
   * Ask clients for a certificate (the mTLS listener). The handshake does not reject unknown
   * issuers: which roots a certificate must chain to depends on the organization and project it
   * claims, so the chain is checked by the code that uses it, not by the TLS layer.
   */
  requestCert?: boolean;
}

/**
 * Requests Node's HTTP/1.1 parser rejects before any handler (a malformed Content-Length, header
 * overflow) get the one REST error body instead of Node's bare status line.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: net.Socket) {
  if (!socket.writable || (socket as any)._httpMessage?.headersSent) return void socket.destroy();
  const [status, reason, code, message] =
    err.code === "HPE_HEADER_OVERFLOW"
      ? [431, "Request Header Fields Too Large", "request_header_fields_too_large", `The request headers exceed ${MAX_HEADER_BYTES} bytes in total.`]
      : err.code === "ERR_HTTP_REQUEST_TIMEOUT"
        ? [408, "Request Timeout", "request_timeout", "The request line and headers did not arrive in time."]
        : [400, "Bad Request", "invalid_request", "The request is not valid HTTP/1.1 (malformed request line, headers or Content-Length)."];
  const body = JSON.stringify({ error: { message, type: "invalid_request_error", param: null, code } });
  socket.end(`HTTP/1.1 ${status} ${reason}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

export function createOnePortServer(rawHandler: Handler, limits: ConnectionLimits, tls?: TlsFiles): net.Server {
  const h2settings = { maxHeaderListSize: MAX_HEADER_BYTES };
  const handler = watchExchanges(rawHandler, limits);
  const admit = perAddressCap(limits);
  if (tls) {
    const secure = http2.createSecureServer(
      {
        cert: tls.cert,
        key: tls.key,
        requestCert: !!tls.requestCert,
        rejectUnauthorized: false,
        // A resumed session does not carry the intermediates the client sent, so a listener that
        // checks client chains issues no session tickets: every connection shows its full chain.
        secureOptions: tls.requestCert ? constants.SSL_OP_NO_TICKET : undefined,
        allowHTTP1: true,
        ALPNProtocols: ["h2", "http/1.1"],
        settings: h2settings,
        maxSessionMemory: 64,
        handshakeTimeout: limits.headersTimeoutMs,
      },
      handler,
    );
    guardHttp1(secure, limits);
    guardHttp2Sessions(secure, limits);
    // The secure server has no closeAllConnections/closeIdleConnections of its own, so Fastify's
    // close() would wait forever on any client that keeps an HTTP/2 session (or a keep-alive
    // HTTP/1.1 socket) open. Track both, as for cleartext below.
    const sockets = new Set<net.Socket>();
    const sessions = new Set<http2.Http2Session>();
    secure.on("connection", (socket: net.Socket) => {
      if (!admit(socket)) return;
      sockets.add(socket);
      socket.once("close", () => sockets.delete(socket));
    });
    secure.on("session", (s) => {
      sessions.add(s);
      s.once("close", () => sessions.delete(s));
    });
    const close = secure.close.bind(secure);
    secure.close = ((cb?: (err?: Error) => void) => {
      for (const s of sessions) s.close();
      return close(cb);
    }) as typeof secure.close;
    Object.assign(secure, {
      closeAllConnections() {
        for (const s of sockets) s.destroy();
      },
      closeIdleConnections() {
        for (const s of sessions) s.close();
      },
    });
    return secure as unknown as net.Server;
  }
  const h1 = http.createServer({ maxHeaderSize: MAX_HEADER_BYTES }, handler);
  guardHttp1(h1, limits);
  // h1 never listens (sockets are handed to it), so Node's 'listening' set-up — the connections
  // list and the interval that enforces headersTimeout — is started here; h1.close() stops it.
  h1.emit("listening");
  h1.on("clientError", answerClientError);
  const h2 = http2.createServer({ settings: h2settings, maxSessionMemory: 64 }, handler);
  guardHttp2Sessions(h2, limits);
  const sockets = new Set<net.Socket>();
  const sessions = new Set<http2.Http2Session>();
  h2.on("session", (s) => {
    sessions.add(s);
    s.once("close", () => sessions.delete(s));
  });

  const outer = net.createServer({ noDelay: true }, (socket) => {
    if (!admit(socket)) return;
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
    // A connection that sends nothing, or only part of the HTTP/2 preface, is closed.
    const undecided = () => socket.destroy();
    socket.setTimeout(limits.headersTimeoutMs, undecided);
    let seen: Buffer = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      seen = seen.length ? Buffer.concat([seen, chunk]) : chunk;
      const n = Math.min(seen.length, PREFACE.length);
      const isH2 = seen.subarray(0, n).equals(PREFACE.subarray(0, n));
      if (isH2 && seen.length < PREFACE.length) return; // need more bytes to decide
      socket.removeListener("data", onData);
      socket.setTimeout(0);
      socket.removeListener("timeout", undecided);
      socket.pause();
      socket.unshift(seen);
      // The HTTP/2 session reads the unshifted bytes itself on its next tick; resuming here would
      // flush them as 'data' events nobody listens to. The HTTP/1.1 parser needs the resume.
      if (isH2) h2.emit("connection", socket);
      else {
        h1.emit("connection", socket);
        socket.resume();
      }
    };
    socket.on("data", onData);
    socket.on("error", () => socket.destroy());
  });

  // Fastify closes its server on shutdown; take the inner servers and live connections with it.
  const close = outer.close.bind(outer);
  outer.close = ((cb?: (err?: Error) => void) => {
    h1.close(); // idle keep-alive sockets, and the headers-timeout interval
    for (const s of sessions) s.close();
    const r = close(cb);
    return r;
  }) as typeof outer.close;
  Object.assign(outer, {
    closeAllConnections() {
      for (const s of sockets) s.destroy();
    },
    closeIdleConnections() {
      h1.closeIdleConnections();
      for (const s of sessions) s.close();
    },
  });
  return outer;
}

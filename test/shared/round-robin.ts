// A per-request round-robin proxy in front of several Atrium instances, standing for the load
// balancer of a scaled deployment in tests: request 1 goes to instance A, request 2 to B, and so
// on, whatever connection the client keeps open, so every call of a test crosses instances
// (upload on A, download from B). It listens on one port for HTTP/1.1 and HTTP/2 cleartext (the
// same sniffing as Atrium's own listener), so REST, the official SDK, raw fetch, Connect,
// gRPC-Web and gRPC (with trailers) all go through it. Bodies stream both ways; nothing is buffered.
import * as http from "node:http";
import * as http2 from "node:http2";
import type { AddressInfo } from "node:net";
import { createOnePortServer } from "../../src/transport/listener.js";

export interface RoundRobinProxy {
  url: string;
  port: number;
  /** How many requests each target received, in the order of `targets`. */
  counts: number[];
  close(): Promise<void>;
}

// Headers that belong to one hop (RFC 9110 7.6.1), and HTTP/2's own.
const HOP_BY_HOP = new Set(["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer", "http2-settings", "host"]);

function forwardable(headers: http.IncomingHttpHeaders | http2.IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !k.startsWith(":") && !HOP_BY_HOP.has(k)) out[k] = v;
  return out;
}

type AnyRequest = http.IncomingMessage | http2.Http2ServerRequest;
type AnyResponse = http.ServerResponse | http2.Http2ServerResponse;

function fail(res: AnyResponse, e: Error) {
  const r = res as http.ServerResponse;
  if (r.headersSent) return void r.destroy(e);
  r.writeHead(502, { "content-type": "text/plain" });
  r.end(`round-robin proxy: ${e.message}`);
}

/** An HTTP/1.1 request, forwarded on a keep-alive connection to `target`. */
function forwardHttp1(req: http.IncomingMessage, res: http.ServerResponse, target: URL, agent: http.Agent) {
  const headers = forwardable(req.headers);
  headers.host = target.host;
  let answered = false;
  let failure: Error | undefined;
  const out = http.request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers, agent }, (up) => {
    answered = true;
    res.writeHead(up.statusCode ?? 502, forwardable(up.headers));
    up.pipe(res);
    up.on("end", () => {
      if (Object.keys(up.trailers).length) res.addTrailers(up.trailers as Record<string, string>);
    });
  });
  // A server may answer before it has read the whole body (a 413) and close: writing the rest
  // then fails, but its answer still arrives. Only a request that ends unanswered is a 502.
  out.on("error", (e) => {
    failure = e;
    req.unpipe(out);
    req.resume();
  });
  out.on("close", () => {
    if (!answered) fail(res, failure ?? new Error("the instance closed the connection without answering"));
  });
  res.on("close", () => {
    if (!res.writableFinished) out.destroy();
  });
  req.pipe(out);
}

/** An HTTP/2 request (gRPC, Connect over h2c), forwarded as a stream on one session to `target`, trailers included. */
function forwardHttp2(req: http2.Http2ServerRequest, res: http2.Http2ServerResponse, session: () => http2.ClientHttp2Session) {
  const headers: http2.OutgoingHttpHeaders = { ...forwardable(req.headers), ":method": req.method, ":path": req.url };
  if (req.headers.te) headers.te = String(req.headers.te); // "trailers", which gRPC requires
  let up: http2.ClientHttp2Stream;
  try {
    up = session().request(headers);
  } catch (e) {
    return fail(res, e as Error);
  }
  up.on("response", (h) => {
    res.writeHead(Number(h[":status"] ?? 502), forwardable(h) as http2.OutgoingHttpHeaders);
    up.pipe(res);
  });
  up.on("trailers", (t) => res.addTrailers(forwardable(t) as Record<string, string>));
  up.on("error", (e) => fail(res, e));
  res.on("close", () => {
    if (!up.closed) up.close(http2.constants.NGHTTP2_CANCEL);
  });
  req.pipe(up);
}

/** Starts the proxy on a free loopback port in front of `targets` (base URLs such as http://127.0.0.1:PORT). */
export async function startRoundRobinProxy(targets: string[]): Promise<RoundRobinProxy> {
  const urls = targets.map((t) => new URL(t));
  const agents = urls.map(() => new http.Agent({ keepAlive: true, maxSockets: 64 }));
  const sessions: Array<http2.ClientHttp2Session | undefined> = urls.map(() => undefined);
  const sessionOf = (i: number) => () => {
    let s = sessions[i];
    if (!s || s.closed || s.destroyed) {
      s = sessions[i] = http2.connect(urls[i].origin);
      s.on("error", () => {}); // a stream's own error reaches its request
      s.unref();
    }
    return s;
  };
  const counts = urls.map(() => 0);
  let next = 0;
  const handler = (req: AnyRequest, res: AnyResponse) => {
    const i = next++ % urls.length;
    counts[i]++;
    if (req.httpVersion === "2.0") forwardHttp2(req as http2.Http2ServerRequest, res as http2.Http2ServerResponse, sessionOf(i));
    else forwardHttp1(req as http.IncomingMessage, res as http.ServerResponse, urls[i], agents[i]);
  };
  const limits = { headersTimeoutMs: 60_000, idleTimeoutMs: 65_000, bodyStallTimeoutMs: 120_000, maxConnectionsPerAddress: 10_000 };
  const server = createOnePortServer(handler as never, limits);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    counts,
    async close() {
      (server as unknown as { closeAllConnections?: () => void }).closeAllConnections?.();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      for (const a of agents) a.destroy();
      for (const s of sessions) s?.destroy();
    },
  };
}

// One fuzz request as data (so a failure prints it and a seed replays it), and how it is written
// to the wire: HTTP/1.1 on a raw socket (so a body can be cut short, a Content-Length can lie and
// chunked framing can break), or one HTTP/2 stream for gRPC.
import http2 from "node:http2";
import net from "node:net";

export interface FuzzRequest {
  /** The operation (`POST /v1/files`) or RPC path it targets. */
  op: string;
  /** What the generator did: `valid`, `wrong-type`, `overflow`, `grpc:bad-length`… */
  kind: string;
  protocol: "http1" | "h2";
  method: string;
  /** Path and query, sent as is (it may hold bytes a URL parser would refuse). */
  target: string;
  headers: Record<string, string>;
  body: Buffer;
  /**
   * How the body is cut: `content-length` declares more bytes than are sent, `chunked` stops
   * inside a chunk; then the client half-closes. Undefined: sent whole.
   */
  cut?: "content-length" | "chunked";
}

export interface FuzzResponse {
  /** HTTP status; 0 when the server closed the connection without one. */
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  /** gRPC's status from headers or trailers (h2 only). */
  grpcStatus?: number;
  /** The HTTP/2 stream's RST_STREAM code when it was reset (h2 only; 8 is our own cancel). */
  rstCode?: number;
  ms: number;
  /** The request took longer than the hang bound and was abandoned. */
  hung: boolean;
}

/** For failure reports: the request with its body shortened and escaped so it can be read and pasted. */
export function describe(req: FuzzRequest): string {
  const body = req.body.length > 600 ? `${JSON.stringify(req.body.subarray(0, 600).toString("latin1"))}… (${req.body.length} bytes)` : JSON.stringify(req.body.toString("latin1"));
  const target = req.target.length > 300 ? `${req.target.slice(0, 300)}… (${req.target.length} chars)` : req.target;
  return `${req.kind} ${req.protocol} ${req.method} ${JSON.stringify(target)} headers=${JSON.stringify(req.headers)}${req.cut ? ` cut=${req.cut}` : ""} body=${body}`;
}

function head(req: FuzzRequest, host: string): string {
  const lines = [`${req.method} ${req.target} HTTP/1.1`, `host: ${host}`];
  const h = { ...req.headers };
  if (req.cut === "chunked") h["transfer-encoding"] = "chunked";
  else if (req.cut === "content-length") h["content-length"] = String(req.body.length + 1 + (req.body.length % 4096));
  else if (!("content-length" in h) && (req.body.length || req.method !== "GET")) h["content-length"] = String(req.body.length);
  for (const [k, v] of Object.entries(h)) lines.push(`${k}: ${v}`);
  return lines.join("\r\n") + "\r\n\r\n";
}

/** Reads one HTTP/1.1 response (Content-Length, chunked or close-delimited) from raw bytes; null until complete. */
function parseResponse(buf: Buffer, closed: boolean): { status: number; headers: Record<string, string>; body: Buffer } | null {
  const end = buf.indexOf("\r\n\r\n");
  if (end < 0) return closed ? { status: 0, headers: {}, body: buf } : null;
  const [statusLine, ...lines] = buf.subarray(0, end).toString("latin1").split("\r\n");
  const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(statusLine!)?.[1] ?? 0);
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(":");
    if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const rest = buf.subarray(end + 4);
  if (headers["content-length"] !== undefined) {
    const n = Number(headers["content-length"]);
    return rest.length >= n ? { status, headers, body: rest.subarray(0, n) } : closed ? { status, headers, body: rest } : null;
  }
  if (/chunked/i.test(headers["transfer-encoding"] ?? "")) {
    const chunks: Buffer[] = [];
    let at = 0;
    for (;;) {
      const nl = rest.indexOf("\r\n", at);
      if (nl < 0) return closed ? { status, headers, body: Buffer.concat(chunks) } : null;
      const size = parseInt(rest.subarray(at, nl).toString("latin1"), 16);
      if (size === 0) return { status, headers, body: Buffer.concat(chunks) };
      if (rest.length < nl + 2 + size + 2) return closed ? { status, headers, body: Buffer.concat(chunks) } : null;
      chunks.push(rest.subarray(nl + 2, nl + 2 + size));
      at = nl + 2 + size + 2;
    }
  }
  return closed ? { status, headers, body: rest } : null;
}

/** One request on its own HTTP/1.1 connection, closed afterwards; abandoned after `hangMs`. */
export function sendHttp1(port: number, req: FuzzRequest, hangMs: number): Promise<FuzzResponse> {
  const started = performance.now();
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (r: Omit<FuzzResponse, "ms" | "hung">, hung = false) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...r, ms: performance.now() - started, hung });
    };
    const timer = setTimeout(() => finish({ status: 0, headers: {}, body: buf }, true), hangMs);
    socket.on("connect", () => {
      socket.write(head(req, `127.0.0.1:${port}`));
      if (req.cut === "chunked") {
        // A chunk that promises more than follows, then the end of the stream.
        socket.write(`${(req.body.length + 7).toString(16)}\r\n`);
        socket.end(req.body);
      } else if (req.cut === "content-length") socket.end(req.body);
      else socket.write(req.body);
    });
    socket.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const r = parseResponse(buf, false);
      if (r) finish(r);
    });
    socket.on("error", () => finish(parseResponse(buf, true) ?? { status: 0, headers: {}, body: buf }));
    socket.on("close", () => finish(parseResponse(buf, true) ?? { status: 0, headers: {}, body: buf }));
  });
}

/** One request as one stream of an HTTP/2 session (gRPC); abandoned after `hangMs`. */
export function sendH2(session: http2.ClientHttp2Session, req: FuzzRequest, hangMs: number): Promise<FuzzResponse> {
  const started = performance.now();
  return new Promise((resolve) => {
    let status = 0;
    let grpcStatus: number | undefined;
    const headers: Record<string, string> = {};
    const chunks: Buffer[] = [];
    let done = false;
    const stream = session.request({ ":method": req.method, ":path": req.target, ...req.headers });
    const finish = (hung = false) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      const rstCode = stream.rstCode;
      // Only an abandoned stream is reset: a reset after every answer would look like the "rapid
      // reset" attack, and nghttp2 ends the whole session after about a thousand of them.
      if (hung && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      resolve({ status, headers, body: Buffer.concat(chunks), grpcStatus, rstCode, ms: performance.now() - started, hung });
    };
    const timer = setTimeout(() => finish(true), hangMs);
    const take = (h: http2.IncomingHttpHeaders) => {
      for (const [k, v] of Object.entries(h)) if (typeof v === "string") headers[k] = v;
      if (h["grpc-status"] !== undefined) grpcStatus = Number(h["grpc-status"]);
    };
    stream.on("response", (h) => {
      status = Number(h[":status"] ?? 0);
      take(h);
    });
    stream.on("trailers", take);
    stream.on("data", (d: Buffer) => chunks.push(d));
    stream.on("end", () => finish());
    stream.on("close", () => finish());
    stream.on("error", () => finish());
    stream.end(req.body);
  });
}

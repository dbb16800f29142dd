// Issue 22, defect 2: the one-port listener's connection budgets. Short timeouts via the
// environment; every wait below is bounded, so a missing timeout fails instead of hanging.
import { readdirSync, readFileSync } from "node:fs";
import http2 from "node:http2";
import net from "node:net";
import { join } from "node:path";
import tls from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY, startTestServer, tempDir, type TestServer } from "../shared/server.js";
import { sha256 } from "../shared/rest.js";
import { makeCert } from "../shared/tls.js";
import { ConfigError, configFromEnv } from "../../src/config.js";
import { DEFAULT_CONNECTION_LIMITS } from "../../src/transport/timeouts.js";
import { filesApi } from "../../src/services/files/index.js";
import { DEFAULT_PROJECT } from "../../src/auth/bootstrap.js";

const HEADERS_MS = 500;
const IDLE_MS = 800;
const STALL_MS = 700;
/** How long past a timeout the server may take to act (the check interval, a loaded machine). */
const SLACK_MS = 2_500;

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({
    env: {
      ATRIUM_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
      ATRIUM_IDLE_TIMEOUT_MS: String(IDLE_MS),
      ATRIUM_BODY_STALL_TIMEOUT_MS: String(STALL_MS),
    },
  });
});
afterAll(async () => s?.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const openFds = () => readdirSync("/proc/self/fd").length;
const tmpEntries = () => readdirSync(join(s.dataDir, "tmp"));

interface Watched {
  socket: net.Socket;
  received: () => Buffer;
  /** Resolves with the milliseconds from connect to close, or rejects past `withinMs`. */
  closed: (withinMs: number) => Promise<number>;
}

function connect(port = s.port): Promise<Watched> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    let closedAt: number | undefined;
    const waiters: Array<() => void> = [];
    socket.on("data", (d: Buffer) => chunks.push(d));
    socket.on("error", () => {});
    socket.on("close", () => {
      closedAt = Date.now();
      for (const w of waiters.splice(0)) w();
    });
    socket.once("connect", () =>
      resolve({
        socket,
        received: () => Buffer.concat(chunks),
        closed: (withinMs) =>
          new Promise<number>((ok, fail) => {
            if (closedAt !== undefined) return ok(closedAt - started);
            const timer = setTimeout(() => {
              socket.destroy();
              fail(new Error(`the server kept the connection open for more than ${withinMs} ms`));
            }, withinMs);
            waiters.push(() => {
              clearTimeout(timer);
              ok(closedAt! - started);
            });
          }),
      }),
    );
    socket.once("error", reject);
  });
}

/** One request on the session, then nothing: the server must close the session once idle. */
async function expectIdleSessionClosed(session: http2.ClientHttp2Session) {
  session.on("error", () => {});
  const closed = new Promise<void>((resolve) => session.once("close", () => resolve()));
  const status = await new Promise<number>((resolve, reject) => {
    const req = session.request({ ":path": "/healthz" });
    req.on("response", (h) => resolve(Number(h[":status"])));
    req.on("error", reject);
    req.resume();
    req.end();
  });
  expect(status).toBe(200);
  const outcome = await Promise.race([closed.then(() => "closed"), sleep(IDLE_MS + SLACK_MS).then(() => "open")]);
  if (outcome !== "closed") session.destroy();
  expect(outcome).toBe("closed");
}

const BOUNDARY = "----atrium-timeouts";
function uploadHead(declared: number, filename: string): { head: string; tail: string; overhead: number } {
  const open = `--${BOUNDARY}\r\ncontent-disposition: form-data; name="purpose"\r\n\r\nassistants\r\n--${BOUNDARY}\r\ncontent-disposition: form-data; name="file"; filename="${filename}"\r\ncontent-type: application/octet-stream\r\n\r\n`;
  const tail = `\r\n--${BOUNDARY}--\r\n`;
  const overhead = Buffer.byteLength(open) + Buffer.byteLength(tail);
  const head =
    `POST /v1/files HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${API_KEY}\r\ncontent-type: multipart/form-data; boundary=${BOUNDARY}\r\n` +
    `content-length: ${declared + overhead}\r\nconnection: close\r\n\r\n${open}`;
  return { head, tail, overhead };
}

describe("connection settings", () => {
  it("are read from the environment, with defaults, and a bad value names its variable", () => {
    expect(configFromEnv({}).connections).toEqual(DEFAULT_CONNECTION_LIMITS);
    expect(configFromEnv({ ATRIUM_IDLE_TIMEOUT_MS: "1234", ATRIUM_MAX_CONNECTIONS_PER_ADDRESS: "7" }).connections).toMatchObject({ idleTimeoutMs: 1234, maxConnectionsPerAddress: 7 });
    for (const name of ["ATRIUM_HEADERS_TIMEOUT_MS", "ATRIUM_IDLE_TIMEOUT_MS", "ATRIUM_BODY_STALL_TIMEOUT_MS", "ATRIUM_MAX_CONNECTIONS_PER_ADDRESS"])
      for (const bad of ["0", "-5", "1.5", "soon"]) expect(() => configFromEnv({ [name]: bad })).toThrow(new ConfigError(`${name} must be a positive integer, got '${bad}'`));
  });
});

describe("headers, idle and preface timeouts (issue 22, defect 2)", () => {
  it("a client that sends its headers one byte at a time is answered 408 and closed", async () => {
    const c = await connect();
    c.socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\n");
    const trickle = setInterval(() => c.socket.writable && c.socket.write("x"), 100);
    try {
      const ms = await c.closed(HEADERS_MS + SLACK_MS);
      expect(ms).toBeGreaterThanOrEqual(HEADERS_MS - 50);
    } finally {
      clearInterval(trickle);
    }
    expect(c.received().toString()).toMatch(/^HTTP\/1\.1 408 /);
    expect(c.received().toString()).toContain('"code":"request_timeout"');
  });

  it("a connection that sends nothing is closed", async () => {
    const c = await connect();
    await c.closed(HEADERS_MS + SLACK_MS);
    expect(c.received().length).toBe(0);
  });

  it("a connection that sends part of the HTTP/2 preface is closed", async () => {
    const c = await connect();
    c.socket.write("PRI * HTTP/2.0\r\n");
    await c.closed(HEADERS_MS + SLACK_MS);
  });

  it("a keep-alive HTTP/1.1 connection is closed once idle, after answering", async () => {
    const c = await connect();
    c.socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n");
    const ms = await c.closed(IDLE_MS + SLACK_MS);
    expect(c.received().toString()).toMatch(/^HTTP\/1\.1 200 /);
    expect(ms).toBeGreaterThanOrEqual(IDLE_MS - 50);
  });

  it("an idle HTTP/2 session is closed, after answering", async () => {
    await expectIdleSessionClosed(http2.connect(s.url));
  });
});

describe("body progress (issue 22, defect 2)", () => {
  it("a half-sent upload body that stalls is cut, and its temp file and descriptor are released", async () => {
    // Warm the route so lazily opened files do not count against the baseline.
    expect((await fetch(`${s.baseURL}/files`, { headers: { authorization: `Bearer ${API_KEY}` } })).status).toBe(200);
    const fdsBefore = openFds();
    const cuts: Watched[] = [];
    for (let i = 0; i < 5; i++) {
      const c = await connect();
      const { head } = uploadHead(1 << 20, `stall-${i}.bin`);
      c.socket.write(head);
      c.socket.write(Buffer.alloc(100_000 + i, 1)); // then nothing: no more bytes, no FIN
      cuts.push(c);
    }
    for (const c of cuts) await c.closed(STALL_MS + SLACK_MS);
    const deadline = Date.now() + 3_000;
    while (Date.now() < deadline && (tmpEntries().length > 0 || openFds() > fdsBefore)) await sleep(25);
    expect(tmpEntries()).toEqual([]);
    expect(openFds()).toBeLessThanOrEqual(fdsBefore);
  });

  it("half-sent JSON, Connect and unauthenticated bodies that stall are cut too", async () => {
    const bodies = [
      // A JSON body with a key: the body parser waits for it.
      `POST /v1/embeddings HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${API_KEY}\r\ncontent-type: application/json\r\ncontent-length: 5000\r\n\r\n{"model":`,
      // No key at all: nothing may be held open for a caller the server does not know.
      `POST /v1/files HTTP/1.1\r\nhost: x\r\ncontent-type: multipart/form-data; boundary=${BOUNDARY}\r\ncontent-length: 90000\r\n\r\n--${BOUNDARY}\r\n`,
      // A Connect unary call.
      `POST /atrium.v1.ModelsService/GetModel HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${API_KEY}\r\ncontent-type: application/json\r\ncontent-length: 400\r\n\r\n{"model":"gp`,
    ];
    const cuts: Watched[] = [];
    for (const body of bodies) {
      const c = await connect();
      c.socket.write(body); // then nothing: no more bytes, no FIN
      cuts.push(c);
    }
    for (const c of cuts) await c.closed(STALL_MS + SLACK_MS);
    // Whatever each was told before the cut, it was never a success.
    for (const c of cuts) expect(c.received().toString()).not.toMatch(/^HTTP\/1\.1 2/);
  });

  it("an HTTP/2 upload stream whose body stalls is cancelled, and its temp file released", async () => {
    const session = http2.connect(s.url);
    session.on("error", () => {});
    try {
      const { head } = uploadHead(1 << 20, "h2-stall.bin");
      const open = head.slice(head.indexOf("\r\n\r\n") + 4);
      const req = session.request({
        ":method": "POST",
        ":path": "/v1/files",
        authorization: `Bearer ${API_KEY}`,
        "content-type": `multipart/form-data; boundary=${BOUNDARY}`,
      });
      req.on("error", () => {});
      req.resume();
      req.write(open);
      req.write(Buffer.alloc(100_000, 2)); // then nothing, and the stream stays open
      const closed = new Promise<number>((resolve) => req.once("close", () => resolve(req.rstCode ?? -1)));
      const outcome = await Promise.race([closed, sleep(STALL_MS + SLACK_MS).then(() => "open" as const)]);
      expect(outcome).toBe(http2.constants.NGHTTP2_CANCEL);
      const deadline = Date.now() + 3_000;
      while (Date.now() < deadline && tmpEntries().length > 0) await sleep(25);
      expect(tmpEntries()).toEqual([]);
    } finally {
      session.destroy();
    }
  });

  it("a slow upload that keeps making progress completes, however long it takes in total", async () => {
    const content = Buffer.alloc(200_000);
    for (let i = 0; i < content.length; i++) content[i] = (i * 31) & 0xff;
    const c = await connect();
    const { head, tail } = uploadHead(content.length, "slow.bin");
    c.socket.write(head);
    // 10 pieces at STALL_MS / 3 apart: the whole body takes longer than every timeout.
    const piece = content.length / 10;
    for (let i = 0; i < 10; i++) {
      c.socket.write(content.subarray(i * piece, (i + 1) * piece));
      await sleep(Math.floor(STALL_MS / 3));
    }
    c.socket.write(tail);
    await c.closed(10_000);
    const text = c.received().toString();
    expect(text).toMatch(/^HTTP\/1\.1 200 /);
    const file = JSON.parse(text.slice(text.indexOf("\r\n\r\n") + 4));
    expect(file.bytes).toBe(content.length);
    const got = Buffer.from(await (await fetch(`${s.baseURL}/files/${file.id}/content`, { headers: { authorization: `Bearer ${API_KEY}` } })).arrayBuffer());
    expect(sha256(got)).toBe(sha256(content));
  });

  /**
   * A stored file of `size` bytes, made through the server's own Files API rather than an upload:
   * with a 700 ms stall limit, a test process starved that long by a busy machine would see its
   * own upload cut (the limit working), and these tests are about downloads.
   */
  async function uploaded(size: number): Promise<{ id: string; content: Buffer }> {
    const content = Buffer.alloc(size);
    for (let i = 0; i < size; i += 4096) content[i] = i & 0xff;
    const file = await filesApi(s.deps).createFromBytes({ projectId: DEFAULT_PROJECT }, { filename: "big.bin", purpose: "assistants", bytes: content });
    return { id: file.id, content };
  }

  function download(id: string): Promise<Watched> {
    return connect().then((c) => {
      c.socket.write(`GET /v1/files/${id}/content HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${API_KEY}\r\nconnection: close\r\n\r\n`);
      return c;
    });
  }

  it("a slow download that keeps reading completes", async () => {
    const { id, content } = await uploaded(24 << 20);
    const c = await download(id);
    // Read in bursts with pauses shorter than the stall timeout; the whole download outlasts it.
    c.socket.pause();
    const reader = setInterval(() => {
      c.socket.resume();
      setTimeout(() => c.socket.pause(), 15);
    }, Math.floor(STALL_MS / 3));
    try {
      await c.closed(60_000);
    } finally {
      clearInterval(reader);
    }
    const all = c.received();
    const body = all.subarray(all.indexOf("\r\n\r\n") + 4);
    expect(all.subarray(0, 15).toString()).toBe("HTTP/1.1 200 OK");
    expect(body.length).toBe(content.length);
    expect(sha256(body)).toBe(sha256(content));
  });

  it("a download the client stops reading is cut", async () => {
    const { id, content } = await uploaded(24 << 20);
    const c = await download(id);
    // Read nothing: the socket buffers on both sides (a few MB on loopback) fill, then nothing moves.
    c.socket.pause();
    await sleep(STALL_MS + SLACK_MS);
    c.socket.resume();
    await c.closed(10_000);
    const all = c.received();
    expect(all.subarray(0, 15).toString()).toBe("HTTP/1.1 200 OK");
    expect(all.length - all.indexOf("\r\n\r\n") - 4).toBeLessThan(content.length);
  });

  it("a handler that takes longer than the stall timeout to answer is not cut", async () => {
    // A request whose body is complete while the server works on it: the client waits, as it may.
    const { id } = await uploaded(1 << 20);
    const c = await connect();
    const body = JSON.stringify({ model: "atrium-embed-use-lite", input: Array.from({ length: 64 }, (_, i) => `sentence number ${i} ${id}`) });
    c.socket.write(`POST /v1/embeddings HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${API_KEY}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    await c.closed(60_000);
    expect(c.received().toString()).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe("connections per remote address (issue 22, defect 2)", () => {
  let capped: TestServer;
  const CAP = 6;
  beforeAll(async () => {
    capped = await startTestServer({ env: { ATRIUM_MAX_CONNECTIONS_PER_ADDRESS: String(CAP) } });
  });
  afterAll(async () => capped?.stop());

  it("connections past the cap are closed on accept; requests work again once below it", async () => {
    const healthz = () => fetch(`${capped.url}/healthz`, { headers: { connection: "close" } }).then((r) => r.status);
    const hogs: Watched[] = [];
    for (let i = 0; i < CAP - 1; i++) hogs.push(await connect(capped.port));
    // One slot left: a normal request still gets through.
    expect(await healthz()).toBe(200);
    hogs.push(await connect(capped.port));
    const excess = await connect(capped.port);
    await excess.closed(3_000);
    expect(excess.received().length).toBe(0);
    await expect(healthz()).rejects.toThrow();
    // The hogs are still served: the cap refused only the excess.
    hogs[0].socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    await hogs[0].closed(3_000);
    expect(hogs[0].received().toString()).toMatch(/^HTTP\/1\.1 200 /);
    for (const h of hogs) h.socket.destroy();
    const deadline = Date.now() + 3_000;
    let status: number | undefined;
    while (Date.now() < deadline && status !== 200) status = await healthz().catch(() => undefined);
    expect(status).toBe(200);
  });
});

describe("the TLS listener's timeouts (issue 22, defect 2)", () => {
  let secure: TestServer;
  let ca: Buffer;
  beforeAll(async () => {
    const dir = tempDir();
    const { cert, key } = makeCert(dir);
    ca = readFileSync(cert);
    secure = await startTestServer({
      env: {
        ATRIUM_TLS_CERT: cert,
        ATRIUM_TLS_KEY: key,
        ATRIUM_HEADERS_TIMEOUT_MS: String(HEADERS_MS),
        ATRIUM_IDLE_TIMEOUT_MS: String(IDLE_MS),
        ATRIUM_BODY_STALL_TIMEOUT_MS: String(STALL_MS),
      },
    });
  });
  afterAll(async () => secure?.stop());

  it("a connection that never starts the TLS handshake is closed", async () => {
    const c = await connect(secure.port);
    await c.closed(HEADERS_MS + SLACK_MS);
  });

  it("an HTTP/1.1 client that trickles its headers over TLS is answered 408 and closed", async () => {
    const socket = tls.connect({ port: secure.port, host: "127.0.0.1", ca, servername: "localhost", ALPNProtocols: ["http/1.1"] });
    socket.on("error", () => {});
    await new Promise((resolve) => socket.once("secureConnect", resolve));
    let received = "";
    socket.on("data", (d) => (received += d));
    const closed = new Promise((resolve) => socket.once("close", resolve));
    socket.write("GET /healthz HTTP/1.1\r\nhost: x\r\n");
    const trickle = setInterval(() => socket.writable && socket.write("x"), 100);
    try {
      const outcome = await Promise.race([closed.then(() => "closed"), sleep(HEADERS_MS + SLACK_MS).then(() => "open")]);
      expect(outcome).toBe("closed");
    } finally {
      clearInterval(trickle);
      socket.destroy();
    }
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
  });

  it("an idle HTTP/2 session over TLS is closed", async () => {
    await expectIdleSessionClosed(http2.connect(secure.url, { ca }));
  });
});

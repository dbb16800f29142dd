// TLS on the one port (ATRIUM_TLS_CERT/ATRIUM_TLS_KEY switch it to TLS with ALPN
// h2 and http/1.1). A self-signed certificate is made at test time with openssl; every client
// trusts exactly that certificate, so the handshake, ALPN and each protocol are checked for real.
import { readFileSync, rmSync } from "node:fs";
import http2 from "node:http2";
import https from "node:https";
import net from "node:net";
import { join } from "node:path";
import tls from "node:tls";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { Code } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { API_KEY, startTestServer, tempDir, type TestServer } from "../shared/server.js";
import { as, bytes, clients, download, expectRpcError, fileMessages, sha256 } from "../shared/rpc.js";
import { makeCert } from "../shared/tls.js";

interface HttpsResult {
  status: number;
  headers: Record<string, unknown>;
  body: Buffer;
  alpn: string | false | null;
}

function httpsRequest(url: string, opts: https.RequestOptions & { ALPNProtocols?: string[]; body?: Buffer }): Promise<HttpsResult> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { ...opts, agent: false, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks), alpn: (res.socket as tls.TLSSocket).alpnProtocol }),
      );
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(opts.body);
  });
}

function alpnOf(port: number, ca: Buffer, protocols: string[] | undefined): Promise<{ alpn: string | false; authorized: boolean }> {
  return new Promise((resolve, reject) => {
    const sock = tls.connect({ host: "127.0.0.1", port, ca, servername: "localhost", ALPNProtocols: protocols }, () => {
      resolve({ alpn: sock.alpnProtocol ?? false, authorized: sock.authorized });
      sock.end();
    });
    sock.on("error", reject);
  });
}

function multipart(fields: Record<string, string>, file: { name: string; filename: string; data: Uint8Array }) {
  const boundary = "----atrium" + Math.random().toString(16).slice(2);
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${file.name}"; filename="${file.filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`));
  parts.push(Buffer.from(file.data), Buffer.from(`\r\n--${boundary}--\r\n`));
  return { body: Buffer.concat(parts), contentType: `multipart/form-data; boundary=${boundary}` };
}

describe("TLS with ALPN on the one port", () => {
  let s: TestServer;
  let dir: string;
  let ca: Buffer;
  const auth = { authorization: `Bearer ${API_KEY}` };

  beforeAll(async () => {
    dir = tempDir("atrium-tls-");
    const { cert, key } = makeCert(dir);
    ca = readFileSync(cert);
    s = await startTestServer({ env: { ATRIUM_TLS_CERT: cert, ATRIUM_TLS_KEY: key } });
  });
  afterAll(async () => {
    await s?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("the server reports an https URL", () => {
    expect(s.url).toBe(`https://127.0.0.1:${s.port}`);
  });

  it("ALPN: h2 when offered, http/1.1 when only that is offered, HTTP/1.1 without ALPN", async () => {
    expect(await alpnOf(s.port, ca, ["h2", "http/1.1"])).toEqual({ alpn: "h2", authorized: true });
    expect(await alpnOf(s.port, ca, ["http/1.1", "h2"])).toEqual({ alpn: "h2", authorized: true }); // server preference
    expect(await alpnOf(s.port, ca, ["http/1.1"])).toEqual({ alpn: "http/1.1", authorized: true });
    expect((await alpnOf(s.port, ca, undefined)).alpn).toBe(false);
    const plain = await httpsRequest(`${s.url}/healthz`, { ca });
    expect(plain.alpn).toBe(false);
    expect(plain.status).toBe(200);
  });

  it("the certificate is really checked: a client that does not trust it is refused", async () => {
    await expect(httpsRequest(`${s.url}/healthz`, {})).rejects.toThrow(/self.signed|certificate/i);
  });

  it("HTTPS REST over HTTP/1.1 (ALPN http/1.1): read, multipart upload, streamed download", async () => {
    const model = await httpsRequest(`${s.baseURL}/models/gpt-4o`, { ca, ALPNProtocols: ["http/1.1"], headers: auth });
    expect(model.alpn).toBe("http/1.1");
    expect(model.status).toBe(200);
    expect(JSON.parse(model.body.toString())).toEqual({ id: "gpt-4o", object: "model", created: 1715367049, owned_by: "system", shutdown_date: null });

    const data = bytes(2 * 1024 * 1024 + 1);
    const form = multipart({ purpose: "user_data" }, { name: "file", filename: "tls.bin", data });
    const up = await httpsRequest(`${s.baseURL}/files`, {
      ca,
      ALPNProtocols: ["http/1.1"],
      method: "POST",
      headers: { ...auth, "content-type": form.contentType, "content-length": String(form.body.length) },
      body: form.body,
    });
    expect(up.status, up.body.toString()).toBe(200);
    const file = JSON.parse(up.body.toString());
    expect(file).toMatchObject({ object: "file", bytes: data.length, filename: "tls.bin", purpose: "user_data" });
    const content = await httpsRequest(`${s.baseURL}/files/${file.id}/content`, { ca, ALPNProtocols: ["http/1.1"], headers: auth });
    expect(content.status).toBe(200);
    expect(sha256(content.body)).toBe(sha256(data));
    const range = await httpsRequest(`${s.baseURL}/files/${file.id}/content`, { ca, ALPNProtocols: ["http/1.1"], headers: { ...auth, range: "bytes=5-9" } });
    expect(range.status).toBe(206);
    expect(range.headers["content-range"]).toBe(`bytes 5-9/${data.length}`);
    expect(range.body).toEqual(Buffer.from(data.subarray(5, 10)));
    const unauth = await httpsRequest(`${s.baseURL}/models`, { ca });
    expect(unauth.status).toBe(401);
    expect(JSON.parse(unauth.body.toString()).error.type).toBeTruthy();
  });

  it("HTTP/2 over TLS (node:http2, ALPN h2): REST on h2", async () => {
    const session = http2.connect(s.url, { ca });
    try {
      await new Promise<void>((resolve, reject) => {
        session.once("connect", () => resolve());
        session.once("error", reject);
      });
      expect(session.alpnProtocol).toBe("h2");
      expect(session.encrypted).toBe(true);
      const get = (path: string, headers: Record<string, string> = {}) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const req = session.request({ ":path": path, ...headers });
          let status = 0;
          let body = "";
          req.on("response", (h) => (status = Number(h[":status"])));
          req.setEncoding("utf8");
          req.on("data", (c) => (body += c));
          req.on("end", () => resolve({ status, body }));
          req.on("error", reject);
        });
      const [health, model, missing] = await Promise.all([
        get("/healthz"),
        get("/v1/models/gpt-4o", auth),
        get("/v1/files/file-nope", auth),
      ]);
      expect(health).toEqual({ status: 200, body: JSON.stringify({ status: "ok" }) });
      expect(model.status).toBe(200);
      expect(JSON.parse(model.body).id).toBe("gpt-4o");
      expect(missing.status).toBe(404);
      expect(JSON.parse(missing.body).error).toMatchObject({ type: "invalid_request_error", param: "file_id" });
    } finally {
      session.close();
    }
  });

  it("gRPC over TLS (Connect-ES createGrpcTransport with nodeOptions.ca)", async () => {
    const c = clients(createGrpcTransport({ baseUrl: s.url, nodeOptions: { ca } }));
    const me = as(API_KEY);
    expect((await c.models.getModel({ model: "gpt-4o" }, me)).ownedBy).toBe("system");
    const data = bytes(2 * 1024 * 1024 + 99);
    const f = await c.files.createFile(fileMessages({ purpose: "assistants", filename: "g.txt" }, data, { chunk: 128 * 1024 }), me);
    const d = await download(c.files, f.id, me);
    expect(sha256(d.data)).toBe(sha256(data));
    expect(d.contentType).toBe("text/plain");
    await expectRpcError(() => c.files.getFile({ fileId: "file-nope" }, me), Code.NotFound, { param: "file_id", httpStatus: 404 });
    await expectRpcError(() => c.models.getModel({ model: "gpt-4o" }, as(undefined)), Code.Unauthenticated, { httpStatus: 401 });
  });

  it("Connect over TLS HTTP/1.1 and gRPC-Web over TLS HTTP/2", async () => {
    for (const t of [
      createConnectTransport({ baseUrl: s.url, httpVersion: "1.1", nodeOptions: { ca } }),
      createConnectTransport({ baseUrl: s.url, httpVersion: "2", nodeOptions: { ca } }),
      createGrpcWebTransport({ baseUrl: s.url, httpVersion: "2", nodeOptions: { ca } }),
    ]) {
      const c = clients(t);
      const f = await c.files.createFile(fileMessages({ purpose: "assistants", filename: "w.txt" }, bytes(70_000)), as(API_KEY));
      expect((await c.files.getFile({ fileId: f.id }, as(API_KEY))).bytes).toBe(70_000n);
      expect((await download(c.files, f.id, as(API_KEY), "bytes=0-9")).data.length).toBe(10);
    }
  });

  it("gRPC over TLS with @grpc/grpc-js (ssl credentials)", async () => {
    const def = protoLoader.loadSync("atrium/v1/models.proto", { includeDirs: [new URL("../../proto", import.meta.url).pathname], keepCase: true, longs: String });
    const Models = (grpc.loadPackageDefinition(def) as any).atrium.v1.ModelsService;
    const client = new Models(`localhost:${s.port}`, grpc.credentials.createSsl(ca));
    try {
      const meta = new grpc.Metadata();
      meta.set("authorization", `Bearer ${API_KEY}`);
      const m = await new Promise<any>((resolve, reject) =>
        client.GetModel({ model: "gpt-4o" }, meta, { deadline: Date.now() + 10_000 }, (e: any, r: any) => (e ? reject(e) : resolve(r))),
      );
      expect(m).toMatchObject({ id: "gpt-4o", owned_by: "system" });
    } finally {
      client.close();
    }
  });

  it("a cleartext client on the TLS port fails fast instead of hanging", async () => {
    const res = await new Promise<string>((resolve) => {
      const sock = net.connect(s.port, "127.0.0.1", () => sock.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"));
      let got = "";
      sock.on("data", (d) => (got += d.toString("latin1")));
      sock.on("close", () => resolve(got.startsWith("HTTP/1.1 200") ? "served" : "closed"));
      sock.on("error", () => resolve("closed"));
      setTimeout(() => {
        sock.destroy();
        resolve("hung");
      }, 5_000);
    });
    expect(res).toBe("closed");
  });

  it("a TLS server stops promptly while clients still hold HTTP/2 sessions and keep-alive sockets", async () => {
    const dir2 = tempDir("atrium-tls2-");
    const { cert, key } = makeCert(dir2);
    const s2 = await startTestServer({ env: { ATRIUM_TLS_CERT: cert, ATRIUM_TLS_KEY: key } });
    const session = http2.connect(s2.url, { ca: readFileSync(cert) });
    session.on("error", () => {});
    await new Promise<void>((resolve, reject) => {
      const req = session.request({ ":path": "/healthz" });
      req.on("error", reject);
      req.resume();
      req.on("end", () => resolve());
    });
    const agent = new https.Agent({ keepAlive: true, ca: readFileSync(cert) });
    await new Promise<void>((resolve, reject) => https.get(`${s2.url}/healthz`, { agent }, (r) => r.resume().on("end", resolve)).on("error", reject));
    const grpcClient = clients(createGrpcTransport({ baseUrl: s2.url, nodeOptions: { ca: readFileSync(cert) } }));
    await grpcClient.models.getModel({ model: "gpt-4o" }, as(API_KEY));
    const t0 = Date.now();
    await Promise.race([s2.stop(), new Promise((_, reject) => setTimeout(() => reject(new Error("server.close() hung with open client connections")), 5_000))]);
    expect(Date.now() - t0).toBeLessThan(5_000);
    session.destroy();
    agent.destroy();
    rmSync(dir2, { recursive: true, force: true });
  });

  it("a listener that asks for client certificates issues no session tickets (a resumed session would lose the client's chain); the main TLS port does resume", async () => {
    const extra = await s.addListener("mtls-test", { host: "127.0.0.1", port: 0, tls: { cert: readFileSync(join(dir, "cert.pem")), key: readFileSync(join(dir, "key.pem")), requestCert: true } });
    try {
      // Connects twice, offering the first connection's session (TLS 1.3: the ticket comes after the handshake).
      const reused = async (port: number) => {
        const connect = (session?: Buffer) =>
          new Promise<{ reused: boolean; session?: Buffer }>((resolve, reject) => {
            let ticket: Buffer | undefined;
            let resumed = false;
            const sock = tls.connect({ host: "127.0.0.1", port, ca, servername: "localhost", session, ALPNProtocols: ["http/1.1"] }, () => {
              resumed = sock.isSessionReused();
              sock.write("GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
            });
            sock.on("session", (t) => (ticket = t));
            sock.on("data", () => {});
            sock.on("close", () => resolve({ reused: resumed, session: ticket }));
            sock.on("error", reject);
          });
        const first = await connect();
        return (await connect(first.session)).reused;
      };
      expect(await reused(s.port)).toBe(true);
      expect(await reused(extra.port)).toBe(false);
    } finally {
      await extra.close();
    }
  });
});

// Issue 22, defect 1: an upload whose body ends (FIN) before its Content-Length must release the
// temp file and the file descriptor it opened, however far the body got.
import { readdirSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY, startTestServer, type TestServer } from "../../shared/server.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

/** The server runs in this process: its descriptors are ours. */
const openFds = () => readdirSync("/proc/self/fd").length;
const tmpEntries = () => readdirSync(join(s.dataDir, "tmp"));

/**
 * Sends a request announcing `declared` bytes, writes `body` (fewer), then half-closes. Resolves
 * with what the server sent back before closing (or after a short deadline).
 */
function cutShort(path: string, contentType: string, body: Buffer, declared: number, pauseMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(s.port, "127.0.0.1");
    let got = "";
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(got);
    }, 5_000);
    socket.on("data", (d) => (got += d));
    socket.on("error", reject);
    socket.on("close", () => {
      clearTimeout(timer);
      resolve(got);
    });
    socket.write(
      `POST ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${API_KEY}\r\ncontent-type: ${contentType}\r\ncontent-length: ${declared}\r\n\r\n`,
    );
    // All at once (the FIN may arrive before the handler runs) or in two writes with a pause (the
    // file part is open on the server when the FIN arrives): both have leaked.
    if (pauseMs < 0) socket.end(body);
    else socket.write(body.subarray(0, body.length >> 1), () => setTimeout(() => socket.end(body.subarray(body.length >> 1)), pauseMs));
  });
}

function multipartHead(boundary: string, fields: Record<string, string>, file: { name: string; filename: string }): string {
  let out = "";
  for (const [k, v] of Object.entries(fields)) out += `--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`;
  return out + `--${boundary}\r\ncontent-disposition: form-data; name="${file.name}"; filename="${file.filename}"\r\ncontent-type: application/octet-stream\r\n\r\n`;
}

/** The start point: no upload in flight (tmp/ empty), descriptors counted then. */
async function baseline(): Promise<{ fds: number; tmp: string[] }> {
  const deadline = Date.now() + 3_000;
  while (Date.now() < deadline && tmpEntries().length) await new Promise((r) => setTimeout(r, 25));
  return { fds: openFds(), tmp: tmpEntries() };
}

async function settled(want: { fds: number; tmp: string[] }) {
  // The handler's clean-up may finish just after the response; give it a bounded moment.
  const deadline = Date.now() + 3_000;
  while (Date.now() < deadline && (openFds() > want.fds || tmpEntries().length > want.tmp.length)) await new Promise((r) => setTimeout(r, 25));
}

describe("cut-short uploads (issue 22, defect 1)", () => {
  const boundary = "----atrium-cut-short";
  const contentType = `multipart/form-data; boundary=${boundary}`;

  it("POST /v1/files: N bodies cut inside the file part leave no temp file and no open descriptor", async () => {
    // Warm up the route (lazy modules, the first SQLite statements) before counting descriptors.
    await cutShort("/v1/files", contentType, Buffer.from(multipartHead(boundary, { purpose: "assistants" }, { name: "file", filename: "a.bin" }) + "x".repeat(1000)), 1 << 20, 20);
    const before = await baseline();
    expect(before.tmp).toEqual([]);
    for (let i = 0; i < 30; i++) {
      const head = multipartHead(boundary, i % 2 ? { purpose: "assistants" } : {}, { name: "file", filename: `cut-${i}.bin` });
      const answer = await cutShort("/v1/files", contentType, Buffer.concat([Buffer.from(head), Buffer.alloc(50_000 + i * 997, 7)]), 4 << 20, [-1, 0, 20][i % 3]);
      if (answer) expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    }
    await settled(before);
    expect(tmpEntries()).toEqual(before.tmp);
    expect(openFds()).toBeLessThanOrEqual(before.fds);
  });

  it("a cut-short upload part and a cut-short container file leave nothing behind either", async () => {
    const up = await fetch(`${s.baseURL}/uploads`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ bytes: 1 << 20, filename: "d.bin", mime_type: "application/octet-stream", purpose: "assistants" }),
    }).then((r) => r.json());
    const container = await fetch(`${s.baseURL}/containers`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "cut" }),
    }).then((r) => r.json());
    expect(up.id).toMatch(/^upload_/);
    expect(container.id).toBeTruthy();
    const before = await baseline();
    expect(before.tmp).toEqual([]);
    for (let i = 0; i < 20; i++) {
      const bytes = Buffer.alloc(40_000 + i * 1009, 3);
      await cutShort(`/v1/uploads/${up.id}/parts`, contentType, Buffer.concat([Buffer.from(multipartHead(boundary, {}, { name: "data", filename: "p" })), bytes]), 2 << 20, [-1, 0, 20][i % 3]);
      await cutShort(`/v1/containers/${container.id}/files`, contentType, Buffer.concat([Buffer.from(multipartHead(boundary, {}, { name: "file", filename: "c.txt" })), bytes]), 2 << 20, [-1, 0, 20][i % 3]);
    }
    await settled(before);
    expect(tmpEntries()).toEqual(before.tmp);
    expect(openFds()).toBeLessThanOrEqual(before.fds);
  });
});

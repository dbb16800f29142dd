// Issue 22, defect 4: a download sends exactly the record's size, whatever the blob on disk holds.
// A shorter blob fails cleanly (a 500 in the platform's shape before any byte, or a cut connection
// if it shrinks mid-body), never a hang; a longer one never spills past Content-Length into the
// next response on a keep-alive connection.
import { appendFileSync, truncateSync } from "node:fs";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY, startTestServer, type TestServer } from "../shared/server.js";
import { api, expectErrorShape, random, sha256 } from "../shared/rest.js";
import type { DiskBlobStore } from "../../src/storage/disk-blobs.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

async function uploaded(content: Buffer): Promise<{ id: string; path: string }> {
  const form = new FormData();
  form.set("purpose", "assistants");
  form.set("file", new Blob([new Uint8Array(content)]), "data.bin");
  const res = await api(s.baseURL, "/files", { method: "POST", body: form });
  expect(res.status).toBe(200);
  const { id } = (await res.json()) as { id: string };
  return { id, path: (s.deps.blobs as DiskBlobStore).pathOf(id) };
}

/** One keep-alive connection; `next()` reads one whole response framed by its Content-Length. */
function keepAlive() {
  const socket = net.connect(s.port, "127.0.0.1");
  let buf = Buffer.alloc(0);
  let closed = false;
  let wake: (() => void) | undefined;
  socket.on("data", (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    wake?.();
  });
  socket.on("close", () => {
    closed = true;
    wake?.();
  });
  socket.on("error", () => {});
  const more = (deadline: number) =>
    new Promise<void>((resolve, reject) => {
      if (Date.now() > deadline) return reject(new Error("no complete response in time"));
      const t = setTimeout(resolve, deadline - Date.now());
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  return {
    socket,
    isClosed: () => closed,
    async get(path: string): Promise<{ status: number; headers: string; body: Buffer } | "closed"> {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${API_KEY}\r\n\r\n`);
      const deadline = Date.now() + 10_000;
      for (;;) {
        const end = buf.indexOf("\r\n\r\n");
        if (end >= 0) {
          const headers = buf.subarray(0, end).toString();
          const length = Number(/content-length: (\d+)/i.exec(headers)?.[1] ?? 0);
          if (buf.length >= end + 4 + length) {
            const body = buf.subarray(end + 4, end + 4 + length);
            buf = buf.subarray(end + 4 + length);
            return { status: Number(headers.split(" ")[1]), headers, body };
          }
        }
        if (closed) return "closed";
        await more(deadline);
      }
    },
  };
}

describe("downloads against the record's size (issue 22, defect 4)", () => {
  it("a truncated blob is a 500 in the platform's shape, and the connection stays usable", async () => {
    const { id, path } = await uploaded(random(100_000));
    truncateSync(path, 10);
    const c = keepAlive();
    try {
      const r = await c.get(`/v1/files/${id}/content`);
      expect(r).not.toBe("closed");
      if (r === "closed") return;
      expect(r.status).toBe(500);
      expectErrorShape(JSON.parse(r.body.toString()));
      const again = await c.get(`/v1/files/${id}`);
      expect(again !== "closed" && again.status).toBe(200);
    } finally {
      c.socket.destroy();
    }
  });

  it("a grown blob sends only the record's bytes; the next response on the connection is intact", async () => {
    const content = random(50_000);
    const { id, path } = await uploaded(content);
    appendFileSync(path, Buffer.from("HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nforged"));
    const c = keepAlive();
    try {
      const r = await c.get(`/v1/files/${id}/content`);
      expect(r !== "closed" && r.status).toBe(200);
      if (r === "closed") return;
      expect(sha256(r.body)).toBe(sha256(content));
      const ranged = await api(s.baseURL, `/files/${id}/content`, { headers: { range: "bytes=49990-" } });
      expect(ranged.status).toBe(206);
      expect(Buffer.from(await ranged.arrayBuffer())).toEqual(content.subarray(49_990));
      const next = await c.get(`/v1/files/${id}`);
      expect(next).not.toBe("closed");
      if (next === "closed") return;
      expect(next.status).toBe(200);
      expect(JSON.parse(next.body.toString())).toMatchObject({ id, bytes: content.length });
    } finally {
      c.socket.destroy();
    }
  });

  it("a blob that shrinks while it is sent cuts the connection instead of leaving it hanging", async () => {
    const size = 24 << 20;
    const { id, path } = await uploaded(random(size));
    const c = keepAlive();
    try {
      c.socket.pause();
      c.socket.write(`GET /v1/files/${id}/content HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${API_KEY}\r\n\r\n`);
      await new Promise((r) => setTimeout(r, 300));
      truncateSync(path, 1 << 20);
      let received = 0;
      c.socket.on("data", (d: Buffer) => (received += d.length));
      c.socket.resume();
      const deadline = Date.now() + 10_000;
      while (!c.isClosed() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 25));
      expect(c.isClosed()).toBe(true);
      expect(received).toBeLessThan(size);
    } finally {
      c.socket.destroy();
    }
  });
});

// Issue 22, defect 4: a download sends exactly the record's size, whatever the blob on disk holds.
// A shorter blob fails cleanly (a 500 in the platform's shape before any byte, or a cut connection
// if it shrinks mid-body), never a hang; a longer one never spills past Content-Length into the
// next response on a keep-alive connection.
import { appendFileSync, rmSync, truncateSync } from "node:fs";
import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY, startTestServer, type TestServer } from "../shared/server.js";
import { api, expectErrorShape, random, sdk, sha256, toFile } from "../shared/rest.js";
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
    /** `extraHeaders`: more header lines, each ending in CRLF. */
    async get(path: string, extraHeaders = ""): Promise<{ status: number; headers: string; body: Buffer } | "closed"> {
      socket.write(`GET ${path} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${API_KEY}\r\n${extraHeaders}\r\n`);
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

  it("a removed blob is a 500 in the platform's shape, with or without Range, and the connection stays usable", async () => {
    const { id, path } = await uploaded(random(20_000));
    rmSync(path);
    const c = keepAlive();
    try {
      for (const range of ["", "range: bytes=100-199\r\n"]) {
        const r = await c.get(`/v1/files/${id}/content`, range);
        expect(r).not.toBe("closed");
        if (r === "closed") return;
        expect(r.status).toBe(500);
        expectErrorShape(JSON.parse(r.body.toString()));
      }
      const again = await c.get(`/v1/files/${id}`);
      expect(again !== "closed" && again.status).toBe(200);
    } finally {
      c.socket.destroy();
    }
  });

  it("a Range past what a truncated blob holds is a 500, not a hang; one inside it is served", async () => {
    const content = random(30_000);
    const { id, path } = await uploaded(content);
    truncateSync(path, 1000);
    const past = await api(s.baseURL, `/files/${id}/content`, { headers: { range: "bytes=20000-20099" } });
    expect(past.status).toBe(500);
    expectErrorShape(await past.json());
    // The record says 30,000 bytes; the blob is short, so no range of it is trusted.
    const inside = await api(s.baseURL, `/files/${id}/content`, { headers: { range: "bytes=0-99" } });
    expect(inside.status).toBe(500);
  });

  it("a container file whose blob is truncated or removed fails the same way", async () => {
    const client = sdk(s.baseURL);
    const container = await client.containers.create({ name: "faults" });
    for (const damage of [(p: string) => truncateSync(p, 3), (p: string) => rmSync(p)]) {
      const cfile = await client.containers.files.create(container.id, { file: await toFile(random(5000), "x.bin") });
      damage((s.deps.blobs as DiskBlobStore).pathOf(cfile.id));
      const res = await api(s.baseURL, `/containers/${container.id}/files/${cfile.id}/content`);
      expect(res.status).toBe(500);
      expectErrorShape(await res.json());
    }
  });
});

// Issue 22, defect 8: blobs/ or tmp/ removed while the server runs (an operator's clean-up, a
// restored backup). The blob store makes them again on the next write instead of failing every
// write (tmp/) or those landing in a shard it remembered (blobs/) until a restart.
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../shared/server.js";
import { api, random, sdk, sha256, toFile } from "../shared/rest.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

async function upload(content: Buffer, name: string): Promise<Response> {
  const form = new FormData();
  form.set("purpose", "assistants");
  form.set("file", new Blob([new Uint8Array(content)]), name);
  return api(s.baseURL, "/files", { method: "POST", body: form });
}

/** Uploads `n` files (enough to touch most of the 256 shards' cache) and reads each back. */
async function uploadsWork(n: number) {
  for (let i = 0; i < n; i++) {
    const content = random(1000 + i);
    const res = await upload(content, `f${i}.bin`);
    expect(res.status, await res.clone().text()).toBe(200);
    const { id } = (await res.json()) as { id: string };
    const back = Buffer.from(await (await api(s.baseURL, `/files/${id}/content`)).arrayBuffer());
    expect(sha256(back)).toBe(sha256(content));
  }
}

describe("directories removed behind the server's back (issue 22, defect 8)", () => {
  it("blobs/ removed: every later upload succeeds (the cache of known shards is not trusted blindly)", async () => {
    await uploadsWork(60); // fills the shard cache
    rmSync(join(s.dataDir, "blobs"), { recursive: true, force: true });
    await uploadsWork(60);
    expect(existsSync(join(s.dataDir, "blobs"))).toBe(true);
    expect((await api(s.baseURL.replace(/\/v1$/, ""), "/readyz")).status).toBe(200);
  });

  it("tmp/ removed: every later upload succeeds", async () => {
    rmSync(join(s.dataDir, "tmp"), { recursive: true, force: true });
    await uploadsWork(10);
    expect(existsSync(join(s.dataDir, "tmp"))).toBe(true);
    expect((await api(s.baseURL.replace(/\/v1$/, ""), "/readyz")).status).toBe(200);
  });

  it("both removed: an Upload's parts and completion (a concat) and a container file are stored again", async () => {
    rmSync(join(s.dataDir, "blobs"), { recursive: true, force: true });
    rmSync(join(s.dataDir, "tmp"), { recursive: true, force: true });
    const client = sdk(s.baseURL);
    const a = random(3000);
    const b = random(2000);
    const upload = await client.uploads.create({ bytes: a.length + b.length, filename: "joined.bin", mime_type: "application/octet-stream", purpose: "assistants" });
    const pa = await client.uploads.parts.create(upload.id, { data: await toFile(a, "a") });
    rmSync(join(s.dataDir, "tmp"), { recursive: true, force: true });
    const pb = await client.uploads.parts.create(upload.id, { data: await toFile(b, "b") });
    rmSync(join(s.dataDir, "tmp"), { recursive: true, force: true });
    const done = await client.uploads.complete(upload.id, { part_ids: [pa.id, pb.id] });
    const back = Buffer.from(await (await api(s.baseURL, `/files/${done.file!.id}/content`)).arrayBuffer());
    expect(sha256(back)).toBe(sha256(Buffer.concat([a, b])));

    const container = await client.containers.create({ name: "dirs" });
    rmSync(join(s.dataDir, "blobs"), { recursive: true, force: true });
    const content = random(700);
    const cfile = await client.containers.files.create(container.id, { file: await toFile(content, "c.bin") });
    const got = await client.containers.files.content.retrieve(cfile.id, { container_id: container.id });
    expect(sha256(Buffer.from(await got.arrayBuffer()))).toBe(sha256(content));
  });
});

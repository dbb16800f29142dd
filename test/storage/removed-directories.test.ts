// Issue 22, defect 8: blobs/ or tmp/ removed while the server runs (an operator's clean-up, a
// restored backup). The blob store makes them again on the next write instead of failing every
// write (tmp/) or those landing in a shard it remembered (blobs/) until a restart.
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../shared/server.js";
import { api, random, sha256 } from "../shared/rest.js";

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
});

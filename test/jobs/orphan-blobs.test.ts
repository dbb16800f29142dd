// Issue 22, defect 5: a delete whose blob cannot be removed. The resource is gone for the caller
// (the delete answers 200 and a read 404s), never half gone with a 500; the bytes left behind are
// an orphan that the storage.sweep-orphans job reclaims, while it never touches a blob a record
// holds (Files, a File shared by a container file, upload parts, videos) or one younger than its
// grace period (a write in flight).
import { existsSync, utimesSync } from "node:fs";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DiskBlobStore } from "../../src/storage/index.js";
import { STORAGE_SWEEP_ORPHANS_JOB } from "../../src/jobs/index.js";
import { startTestServer, type TestServer } from "../shared/server.js";
import { api, random, sdk, toFile } from "../shared/rest.js";
import { untilVideoEnds } from "../shared/videos.js";

let s: TestServer;
let blobs: DiskBlobStore;
beforeAll(async () => {
  // A long interval: the test runs passes itself with orphans.sweep().
  s = await startTestServer({ env: { ATRIUM_ORPHAN_GRACE_MS: "60000", ATRIUM_ORPHAN_SWEEP_INTERVAL_MS: "3600000" } });
  blobs = s.deps.blobs as DiskBlobStore;
});
afterAll(async () => s?.stop());

/** Makes every blobs.delete() of `key` fail, as an I/O error or a read-only directory would. */
function failDeletesOf(key: string): () => void {
  const original = blobs.delete.bind(blobs);
  blobs.delete = async (k: string) => {
    if (k === key) throw Object.assign(new Error(`EROFS: read-only file system, unlink '${k}'`), { code: "EROFS" });
    return original(k);
  };
  return () => void (blobs.delete = original);
}

/** Ages a blob past the sweeper's grace period (60 s here); one removed meanwhile is fine. */
function age(key: string): void {
  const old = new Date(Date.now() - 120_000);
  try {
    utimesSync(blobs.pathOf(key), old, old);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "ENOENT") throw e;
  }
}

async function uploadFile(name = "a.txt"): Promise<string> {
  const file = await sdk(s.baseURL).files.create({ file: await toFile(random(2000), name), purpose: "assistants" });
  return file.id;
}

describe("deletes whose blob cannot be removed (issue 22, defect 5)", () => {
  it("DELETE /v1/files/{id}: 200, the file is gone, its bytes are an orphan the sweeper reclaims", async () => {
    const id = await uploadFile();
    const restore = failDeletesOf(id);
    try {
      const res = await api(s.baseURL, `/files/${id}`, { method: "DELETE" });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(await res.json()).toMatchObject({ id, deleted: true });
    } finally {
      restore();
    }
    expect((await api(s.baseURL, `/files/${id}`)).status).toBe(404);
    expect((await api(s.baseURL, `/files/${id}/content`)).status).toBe(404);
    expect(existsSync(blobs.pathOf(id))).toBe(true);

    // Within the grace period it stays (it could be a write about to be recorded).
    await s.orphans.sweep();
    expect(existsSync(blobs.pathOf(id))).toBe(true);
    age(id);
    const result = await s.orphans.sweep();
    expect(existsSync(blobs.pathOf(id))).toBe(false);
    expect(result.removed).toBeGreaterThanOrEqual(1);
  });

  it("a container file's delete: 200 and gone; its own bytes are reclaimed later", async () => {
    const client = sdk(s.baseURL);
    const container = await client.containers.create({ name: "c" });
    const cfile = await client.containers.files.create(container.id, { file: await toFile(random(500), "x.bin") });
    const restore = failDeletesOf(cfile.id);
    try {
      const res = await api(s.baseURL, `/containers/${container.id}/files/${cfile.id}`, { method: "DELETE" });
      expect(res.status, await res.clone().text()).toBe(200);
    } finally {
      restore();
    }
    expect((await api(s.baseURL, `/containers/${container.id}/files/${cfile.id}`)).status).toBe(404);
    age(cfile.id);
    await s.orphans.sweep();
    expect(existsSync(blobs.pathOf(cfile.id))).toBe(false);
  });

  it("cancelling an upload whose part cannot be removed: 200 cancelled, the part goes with the sweep", async () => {
    const client = sdk(s.baseURL);
    const upload = await client.uploads.create({ bytes: 4, filename: "u.txt", mime_type: "text/plain", purpose: "assistants" });
    const part = await client.uploads.parts.create(upload.id, { data: await toFile(Buffer.from("abcd"), "p") });
    const restore = failDeletesOf(part.id);
    try {
      const res = await api(s.baseURL, `/uploads/${upload.id}/cancel`, { method: "POST" });
      expect(res.status, await res.clone().text()).toBe(200);
      expect(((await res.json()) as { status: string }).status).toBe("cancelled");
    } finally {
      restore();
    }
    age(part.id);
    await s.orphans.sweep();
    expect(existsSync(blobs.pathOf(part.id))).toBe(false);
  });
});

describe("a video's delete whose assets cannot be removed", () => {
  it("answers 200, the video is gone, and the purge timer or the sweeper removes its assets", async () => {
    const client = sdk(s.baseURL);
    const v = await untilVideoEnds(client, (await client.videos.create({ prompt: "A paper boat on a pond" })).id);
    expect(v.status).toBe("completed");
    const key = `${v.id}.video`;
    expect(existsSync(blobs.pathOf(key))).toBe(true);
    const restore = failDeletesOf(key);
    try {
      const res = await api(s.baseURL, `/videos/${v.id}`, { method: "DELETE" });
      expect(res.status, await res.clone().text()).toBe(200);
    } finally {
      restore();
    }
    expect((await api(s.baseURL, `/videos/${v.id}`)).status).toBe(404);
    // The purge timer retries on its own; whatever it has not removed yet, the sweeper does.
    for (const k of [`${v.id}.video`, `${v.id}.thumbnail`, `${v.id}.spritesheet`]) age(k);
    await s.orphans.sweep();
    for (const k of [`${v.id}.video`, `${v.id}.thumbnail`, `${v.id}.spritesheet`]) expect(existsSync(blobs.pathOf(k)), k).toBe(false);
  }, 120_000);
});

describe("the orphan sweeper never removes a held blob", () => {
  it("keeps Files, a deleted File's bytes a container file still shares, upload parts, and keys no area owns", async () => {
    const client = sdk(s.baseURL);
    const kept = await uploadFile("kept.txt");
    // A container file made from a File shares its bytes: deleting the File keeps them.
    const shared = await uploadFile("shared.txt");
    const container = await client.containers.create({ name: "holder", file_ids: [shared] });
    expect((await api(s.baseURL, `/files/${shared}`, { method: "DELETE" })).status).toBe(200);
    const upload = await client.uploads.create({ bytes: 4, filename: "u.txt", mime_type: "text/plain", purpose: "assistants" });
    const part = await client.uploads.parts.create(upload.id, { data: await toFile(Buffer.from("wxyz"), "p") });
    // A blob no area declares (an operator's file, the readiness probe's key).
    await blobs.put("foreign-blob", Readable.from([Buffer.from("not ours")]));
    // An orphan of each owner, to show the pass does remove what it may.
    const orphanKeys = ["file-sweeptestorphan00000001", "part_sweeptestorphan0000001", "video_sweeptestorphan000001.video", "cfile_sweeptestorphan000001"];
    for (const key of [kept, shared, part.id, "foreign-blob", ...orphanKeys]) {
      if (orphanKeys.includes(key)) await blobs.put(key, Readable.from([Buffer.from("orphan")]));
      age(key);
    }

    await s.orphans.sweep();
    for (const key of [kept, shared, part.id, "foreign-blob"]) expect(existsSync(blobs.pathOf(key)), key).toBe(true);
    for (const key of orphanKeys) expect(existsSync(blobs.pathOf(key)), key).toBe(false);
    const files = await client.containers.files.list(container.id);
    const bytes = await client.containers.files.content.retrieve(files.data[0]!.id, { container_id: container.id });
    expect((await bytes.arrayBuffer()).byteLength).toBe(2000);
  });

  it("runs as a durable storage.sweep-orphans job, queued at start-up", async () => {
    const slot = Math.floor(s.jobs.now() / 3600_000);
    const job = await s.jobs.get(`${STORAGE_SWEEP_ORPHANS_JOB}:${slot}`);
    expect(job?.kind).toBe(STORAGE_SWEEP_ORPHANS_JOB);
    const ended = (await s.jobs.settled([job!.id]))[0]!;
    expect(ended.state).toBe("succeeded");
    // Each run queues the next slot's.
    expect((await s.jobs.get(`${STORAGE_SWEEP_ORPHANS_JOB}:${slot + 1}`))?.state).toBe("queued");
  });
});

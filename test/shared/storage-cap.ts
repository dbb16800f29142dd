// Uploads racing for the last bytes of a project's storage cap (src/limits/storage.ts), shared by
// the embedded test (test/limits/server.test.ts) and the two-instance one (test/scale-out.test.ts).
// Each race spreads its uploads over the given instances, every upload on one instance from start
// to end (on the two-instance set-up each instance keeps its blobs on its own disk).
import { join } from "node:path";
import { expect } from "vitest";
import { api, blobKeys, filesUnder, sdk, toFile } from "./rest.js";

export interface Instance {
  baseURL: string;
  dataDir: string;
}

interface Outcome {
  status: number;
  body: any;
  /** Where an Upload's completion was asked, and for what (completeUploadsAtOnce). */
  upload?: { baseURL: string; uploadId: string; partId: string };
}

/**
 * `n` Uploads of `size` bytes, all created and given their one part before any completes — so
 * every one passes the early checks (the declared size, the streamed part) — then completed at once:
 * only the check made when the File is recorded stands between them and the cap.
 */
export async function completeUploadsAtOnce(instances: Instance[], n: number, size: number): Promise<Outcome[]> {
  const ready = await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const { baseURL } = instances[i % instances.length]!;
      const res = await api(baseURL, "/uploads", { method: "POST", json: { bytes: size, filename: `race-${i}.bin`, mime_type: "application/octet-stream", purpose: "user_data" } });
      expect(res.status).toBe(200);
      const upload = await res.json();
      const form = new FormData();
      form.set("data", new Blob([Buffer.alloc(size, i)]), "part");
      const partRes = await api(baseURL, `/uploads/${upload.id}/parts`, { method: "POST", body: form });
      expect(partRes.status).toBe(200);
      return { baseURL, uploadId: upload.id as string, partId: (await partRes.json()).id as string };
    }),
  );
  return Promise.all(
    ready.map(async ({ baseURL, uploadId, partId }) => {
      const res = await api(baseURL, `/uploads/${uploadId}/complete`, { method: "POST", json: { part_ids: [partId] } });
      return { status: res.status, body: await res.json(), upload: { baseURL, uploadId, partId } };
    }),
  );
}

/** `n` POST /v1/files of `size` bytes through the official SDK, all at once. */
export async function createFilesAtOnce(instances: Instance[], n: number, size: number): Promise<Outcome[]> {
  return Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const client = sdk(instances[i % instances.length]!.baseURL);
      try {
        const f = await client.files.create({ file: await toFile(Buffer.alloc(size, i), `race-${i}.bin`), purpose: "user_data" });
        return { status: 200, body: f };
      } catch (e) {
        const err = e as { status?: number; error?: unknown };
        if (err.status === undefined) throw e;
        return { status: err.status, body: { error: err.error } };
      }
    }),
  );
}

/** Deletes every File of the caller's project, each through the instance whose disk holds its bytes. */
export async function deleteAllFiles(instances: Instance[]): Promise<void> {
  for (const f of (await sdk(instances[0]!.baseURL).files.list()).data) {
    const holder = instances.find((s) => blobKeys(s.dataDir).includes(f.id)) ?? instances[0]!;
    await sdk(holder.baseURL).files.delete(f.id);
  }
}

/**
 * What a race must leave: the live Files within `cap`, every refusal the 400 naming `param`,
 * and no File blob (nor temp file) but those of the live Files, on any instance.
 */
export async function expectWithinCap(instances: Instance[], outcomes: Outcome[], cap: number, param: string): Promise<{ won: number; refused: number }> {
  for (const o of outcomes.filter((o) => o.status !== 200)) {
    expect(o.status).toBe(400);
    expect(o.body.error).toMatchObject({ code: "storage_limit_exceeded", param, type: "invalid_request_error" });
  }
  const live = (await sdk(instances[0]!.baseURL).files.list()).data;
  expect(live.reduce((n, f) => n + f.bytes, 0)).toBeLessThanOrEqual(cap);
  const fileBlobs = instances.flatMap((s) => blobKeys(s.dataDir).filter((k) => k.startsWith("file-")));
  expect(fileBlobs.sort()).toEqual(live.map((f) => f.id).sort());
  for (const s of instances) expect(filesUnder(join(s.dataDir, "tmp"))).toEqual([]);
  return { won: outcomes.filter((o) => o.status === 200).length, refused: outcomes.filter((o) => o.status !== 200).length };
}

// Issue 22, defect 7: a full disk. On a small tmpfs (root only: the test mounts one and skips,
// saying why, where it cannot): uploads that meet ENOSPC answer 507 storage_full in the platform's
// error shape; deletes keep working, also at 0 bytes free (the disk reserve, src/storage/space-
// reserve.ts); /readyz reports low disk below ATRIUM_MIN_FREE_DISK_BYTES; once space is freed,
// uploads work again with no restart. Measured: with ATRIUM_DISK_RESERVE_BYTES=0, the DELETE at 0
// bytes free fails (SQLITE_FULL: its WAL append needs space).
import { execFileSync } from "node:child_process";
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, rmSync, statfsSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../shared/server.js";
import { api, random } from "../shared/rest.js";

const MiB = 1 << 20;

/** Mounts a tmpfs of `mib` MiB; the reason when this process cannot. */
function mountTmpfs(mib: number): { dir: string } | { skip: string } {
  if (process.platform !== "linux") return { skip: "a tmpfs mount needs Linux" };
  if (process.getuid?.() !== 0) return { skip: "mounting a small tmpfs needs root" };
  const dir = mkdtempSync(join(tmpdir(), "atrium-full-"));
  try {
    execFileSync("mount", ["-t", "tmpfs", "-o", `size=${mib}m`, "tmpfs", dir], { stdio: "pipe" });
    return { dir };
  } catch (e) {
    rmSync(dir, { recursive: true, force: true });
    return { skip: `mount -t tmpfs failed (${String((e as { stderr?: Buffer }).stderr ?? e).trim()})` };
  }
}

const mount = mountTmpfs(24);
const skipReason = "skip" in mount ? mount.skip : undefined;
if (skipReason) console.warn(`disk-full tests skipped: ${skipReason}`);

/** Fills the file system holding `dir` with a file until it has no byte left; returns the file. */
function fillUp(dir: string): string {
  const file = join(dir, "filler.bin");
  const fd = openSync(file, "a");
  const chunk = Buffer.alloc(64 * 1024);
  try {
    for (let size = chunk.length; size >= 1; ) {
      try {
        writeSync(fd, chunk, 0, size);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== "ENOSPC") throw e;
        size = Math.floor(size / 2);
      }
    }
  } finally {
    closeSync(fd);
  }
  return file;
}

const free = (dir: string) => {
  const st = statfsSync(dir);
  return st.bavail * st.bsize;
};

describe.skipIf(skipReason !== undefined)("a full disk (issue 22, defect 7)", () => {
  const root = "dir" in mount ? mount.dir : "";
  const dataDir = join(root, "data");
  let s: TestServer;
  const base = () => s.baseURL.replace(/\/v1$/, "");

  beforeAll(async () => {
    mkdirSync(dataDir);
    s = await startTestServer({
      dataDir,
      env: { ATRIUM_DISK_RESERVE_BYTES: String(2 * MiB), ATRIUM_MIN_FREE_DISK_BYTES: String(4 * MiB) },
    });
  });
  afterAll(async () => {
    try {
      await s?.stop();
    } finally {
      if (root) {
        execFileSync("umount", [root]);
        rmSync(root, { recursive: true, force: true });
      }
    }
  });

  async function upload(bytes: number): Promise<Response> {
    const form = new FormData();
    form.set("purpose", "assistants");
    form.set("file", new Blob([new Uint8Array(random(bytes))]), "f.bin");
    return api(s.baseURL, "/files", { method: "POST", body: form });
  }

  it("uploads until the disk is full: 507 storage_full, then deletes work and /readyz says low disk", async () => {
    expect(existsSync(join(dataDir, "reserve.bin"))).toBe(true);
    expect((await api(base(), "/readyz")).status).toBe(200);

    const ids: string[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 40 && !refused; i++) {
      const res = await upload(MiB);
      if (res.status === 200) ids.push(((await res.json()) as { id: string }).id);
      else refused = res;
    }
    expect(ids.length).toBeGreaterThan(2);
    expect(refused?.status).toBe(507);
    expect(await refused!.json()).toEqual({
      error: { message: expect.stringMatching(/storage is full/), type: "server_error", param: null, code: "storage_full" },
    });
    // Nothing half-written: no temp file left, the reserve given back for deletes.
    expect(existsSync(join(dataDir, "reserve.bin"))).toBe(false);

    // While the disk has no room for the reserve, uploads are refused at once, even small ones.
    const small = await upload(10);
    expect(small.status).toBe(507);
    const ready = await api(base(), "/readyz");
    expect(ready.status).toBe(503);
    expect(((await ready.json()) as { checks: { disk: string } }).checks.disk).toMatch(/^failing: \d+ bytes free, below ATRIUM_MIN_FREE_DISK_BYTES/);

    // Deleting frees space, and uploads come back without a restart.
    for (const id of ids) expect((await api(s.baseURL, `/files/${id}`, { method: "DELETE" })).status).toBe(200);
    expect(free(root)).toBeGreaterThan(4 * MiB);
    const again = await upload(MiB);
    expect(again.status, await again.clone().text()).toBe(200);
    expect(existsSync(join(dataDir, "reserve.bin"))).toBe(true);
    expect((await api(base(), "/readyz")).status).toBe(200);
  });

  it("at 0 bytes free (filled by another process), deletes still work and uploads answer 507", async () => {
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await upload(64 * 1024);
      expect(res.status).toBe(200);
      ids.push(((await res.json()) as { id: string }).id);
    }
    const filler = fillUp(root);
    expect(free(root)).toBe(0);

    for (const id of ids) {
      const res = await api(s.baseURL, `/files/${id}`, { method: "DELETE" });
      expect(res.status, await res.clone().text()).toBe(200);
      expect((await api(s.baseURL, `/files/${id}`)).status).toBe(404);
    }
    const refused = await upload(1000);
    expect(refused.status).toBe(507);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("storage_full");

    rmSync(filler);
    const after = await upload(1000);
    expect(after.status, await after.clone().text()).toBe(200);
    expect((await api(base(), "/readyz")).status).toBe(200);
  });
});

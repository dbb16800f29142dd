// The disk reserve and the full-disk error, where no small file system can be mounted (the real
// full disk is test/storage/disk-full.test.ts, as root): what counts as "no space", the reserve's
// life cycle, and the 507 every protocol answers.
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { isNoSpace, SpaceReserve } from "../../src/storage/space-reserve.js";
import { StorageFull } from "../../src/storage/types.js";
import { ApiError, fromStorageError, toRestError } from "../../src/common/errors.js";
import { undoAfterEach } from "../shared/cleanup.js";

const { tempDir } = undoAfterEach("atrium-reserve-");

describe("isNoSpace", () => {
  it("knows ENOSPC, EDQUOT, SQLITE_FULL and StorageFull, also as a cause; nothing else", () => {
    for (const code of ["ENOSPC", "EDQUOT", "SQLITE_FULL"]) {
      expect(isNoSpace(Object.assign(new Error("x"), { code }))).toBe(true);
      expect(isNoSpace(new Error("wrapped", { cause: Object.assign(new Error("x"), { code }) }))).toBe(true);
    }
    expect(isNoSpace(new StorageFull("0 bytes free"))).toBe(true);
    for (const other of [new Error("x"), Object.assign(new Error("x"), { code: "EIO" }), undefined, null, "ENOSPC"]) expect(isNoSpace(other)).toBe(false);
  });
});

describe("SpaceReserve", () => {
  it("is written at start-up, released on demand, and written again by the next admitted write", async () => {
    const dir = tempDir();
    const reserve = new SpaceReserve(dir, 300_000);
    await reserve.open();
    expect(statSync(join(dir, "reserve.bin")).size).toBe(300_000);
    expect(reserve.isReleased).toBe(false);
    await reserve.release();
    expect(existsSync(join(dir, "reserve.bin"))).toBe(false);
    expect(reserve.isReleased).toBe(true);
    // This disk has room for it twice over: admitting a write puts the reserve back first.
    await Promise.all([reserve.admit(), reserve.admit()]);
    expect(reserve.isReleased).toBe(false);
    expect(statSync(join(dir, "reserve.bin")).size).toBe(300_000);
    expect(existsSync(join(dir, "reserve.bin.tmp"))).toBe(false);
  });

  it("refuses writes with StorageFull while the file system lacks room for it twice over", async () => {
    // A reserve larger than any disk: it cannot be written at start-up, so it starts released.
    const reserve = new SpaceReserve(tempDir(), 2 ** 52);
    await reserve.open();
    expect(reserve.isReleased).toBe(true);
    await expect(reserve.admit()).rejects.toBeInstanceOf(StorageFull);
  });
});

describe("the full-disk answer", () => {
  it("is 507 storage_full in the platform's shape, resource_exhausted over RPC", () => {
    for (const cause of [new StorageFull("0 bytes free"), Object.assign(new Error("database or disk is full"), { code: "SQLITE_FULL" })]) {
      const err = fromStorageError(cause) as ApiError;
      expect(err).toBeInstanceOf(ApiError);
      expect(err.code).toBe(Code.ResourceExhausted);
      const rest = toRestError(err);
      expect(rest.status).toBe(507);
      expect(rest.body.error).toMatchObject({ type: "server_error", param: null, code: "storage_full" });
    }
  });
});

// Collection.sum: a numeric field summed over the live records a count() would select.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openSqliteRecordStore } from "../../src/storage/index.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

describe("Collection.sum", () => {
  it("sums a field over the project's live records, by parent and tag, and refuses a field that is not a plain name", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-sum-"));
    let now = 1000;
    const store = openSqliteRecordStore(path.join(dir, "atrium.db"), { now: () => now });
    cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
    cleanups.push(() => store.close());
    const files = store.collection<{ bytes?: number }>("file");
    const a = { projectId: "proj_a" };
    expect(await files.sum(a, "bytes")).toBe(0);
    await files.insert(a, { id: "f1", createdAt: 1, tag: "batch", data: { bytes: 10 } });
    await files.insert(a, { id: "f2", createdAt: 1, tag: "assistants", parentId: "p", data: { bytes: 5 } });
    await files.insert(a, { id: "f3", createdAt: 1, tag: "batch", expiresAt: 2000, data: { bytes: 100 } });
    await files.insert(a, { id: "f4", createdAt: 1, data: {} });
    await files.insert({ projectId: "proj_b" }, { id: "f5", createdAt: 1, data: { bytes: 1000 } });
    await store.collection<{ bytes: number }>("other").insert(a, { id: "o1", createdAt: 1, data: { bytes: 7 } });
    expect(await files.sum(a, "bytes")).toBe(115);
    expect(await files.sum(a, "bytes", { tag: "batch" })).toBe(110);
    expect(await files.sum(a, "bytes", { parentId: "p" })).toBe(5);
    now = 2000; // f3 has expired
    expect(await files.sum(a, "bytes")).toBe(15);
    await expect(files.sum(a, "bytes') OR 1=1 --")).rejects.toBeInstanceOf(RangeError);
  });
});

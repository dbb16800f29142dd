// Collection.mutate: the one compare-and-set primitive (read → decide → conditional write, retried).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { ApiError } from "../../src/common/errors.js";
import { DuplicateRecord, MUTATE_ATTEMPTS, openSqliteRecordStore, VersionConflict, type SqliteRecordStore, type WriteOp } from "../../src/storage/index.js";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});

function openStore(): SqliteRecordStore {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-mutate-"));
  const store = openSqliteRecordStore(path.join(dir, "atrium.db"));
  cleanups.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  cleanups.push(() => store.close());
  return store;
}

const scope = { projectId: "proj_a" };
interface Counter {
  n: number;
}

async function counterStore() {
  const store = openStore();
  const counters = store.collection<Counter>("counter");
  await counters.insert(scope, { id: "c1", createdAt: 1, tag: "new", data: { n: 0 } });
  return { store, counters };
}

describe("Collection.mutate", () => {
  it("writes what the change decides, conditional on the version it read, and returns its result", async () => {
    const { counters } = await counterStore();
    const result = await counters.mutate(scope, "c1", (cur) => ({ write: "update", data: { n: cur!.data.n + 5 }, tag: "counted", expiresAt: 9_999_999_999, result: cur!.data.n + 5 }));
    expect(result).toBe(5);
    const after = await counters.get(scope, "c1");
    expect(after).toMatchObject({ version: 2, tag: "counted", expiresAt: 9_999_999_999, data: { n: 5 } });
  });

  it("retries from the read after a concurrent change, and the change sees the newer record", async () => {
    const { counters } = await counterStore();
    const seen: Array<{ attempt: number; version: number; n: number }> = [];
    const result = await counters.mutate(scope, "c1", async (cur, attempt) => {
      seen.push({ attempt, version: cur!.version, n: cur!.data.n });
      // Another writer commits between this read and the write, once.
      if (attempt === 0) await counters.update(scope, "c1", { n: 100 });
      return { write: "update", data: { n: cur!.data.n + 1 }, result: cur!.data.n + 1 };
    });
    expect(seen).toEqual([
      { attempt: 0, version: 1, n: 0 },
      { attempt: 1, version: 2, n: 100 },
    ]);
    expect(result).toBe(101);
    expect((await counters.get(scope, "c1"))!.data).toEqual({ n: 101 });
  });

  it(`gives up after MUTATE_ATTEMPTS (${MUTATE_ATTEMPTS}) reads with the last VersionConflict`, async () => {
    const { counters } = await counterStore();
    let calls = 0;
    const run = counters.mutate(scope, "c1", async (cur) => {
      calls++;
      await counters.update(scope, "c1", { n: cur!.data.n + 1000 });
      return { write: "update", data: { n: -1 }, result: null };
    });
    await expect(run).rejects.toBeInstanceOf(VersionConflict);
    expect(calls).toBe(MUTATE_ATTEMPTS);
    // Only the concurrent writer's updates landed.
    expect((await counters.get(scope, "c1"))!.data.n).toBe(MUTATE_ATTEMPTS * 1000);
  });

  it("writes nothing when the change throws, and rethrows its error", async () => {
    const { store, counters } = await counterStore();
    const boom = new ApiError(400, "no", { param: "n" });
    await expect(counters.mutate(scope, "c1", () => {
      throw boom;
    })).rejects.toBe(boom);
    expect(await counters.get(scope, "c1")).toMatchObject({ version: 1, data: { n: 0 } });
    expect(await store.collection("other").count(scope)).toBe(0);
  });

  it("puts `also` ops in the same atomic write: all apply, or none do", async () => {
    const { store, counters } = await counterStore();
    const others = store.collection<{ x: number }>("other");
    await counters.mutate(scope, "c1", () => ({
      write: "update",
      data: { n: 1 },
      also: [{ op: "insert", kind: "other", scope, record: { id: "o1", createdAt: 1, data: { x: 1 } } }],
      result: undefined,
    }));
    expect((await others.get(scope, "o1"))!.data).toEqual({ x: 1 });
    expect((await counters.get(scope, "c1"))!.data).toEqual({ n: 1 });

    // A duplicate insert among the `also` ops fails the whole write: the update does not apply.
    await expect(
      counters.mutate(scope, "c1", () => ({
        write: "update",
        data: { n: 2 },
        also: [{ op: "insert", kind: "other", scope, record: { id: "o1", createdAt: 1, data: { x: 2 } } }],
        result: undefined,
      })),
    ).rejects.toBeInstanceOf(DuplicateRecord);
    expect((await counters.get(scope, "c1"))!.data).toEqual({ n: 1 });
    expect((await others.get(scope, "o1"))!.data).toEqual({ x: 1 });
  });

  it("retries when an `also` op's record changed concurrently", async () => {
    const { store, counters } = await counterStore();
    const others = store.collection<{ x: number }>("other");
    await others.insert(scope, { id: "o1", createdAt: 1, data: { x: 0 } });
    let calls = 0;
    await counters.mutate(scope, "c1", async () => {
      calls++;
      const other = (await others.get(scope, "o1"))!;
      if (calls === 1) await others.update(scope, "o1", { x: 50 });
      return { write: "update", data: { n: other.data.x }, also: [{ op: "update", kind: "other", scope, id: "o1", data: { x: other.data.x + 1 }, expectVersion: other.version }], result: undefined };
    });
    expect(calls).toBe(2);
    expect((await counters.get(scope, "c1"))!.data).toEqual({ n: 50 });
    expect((await others.get(scope, "o1"))!.data).toEqual({ x: 51 });
  });

  it("deletes conditionally on the version read", async () => {
    const { counters } = await counterStore();
    let calls = 0;
    const result = await counters.mutate(scope, "c1", async (cur, attempt) => {
      calls++;
      if (attempt === 0) await counters.update(scope, "c1", { n: 7 });
      return { write: "delete", result: cur!.data.n };
    });
    expect(calls).toBe(2);
    expect(result).toBe(7);
    expect(await counters.get(scope, "c1")).toBeUndefined();
  });

  it("hands an absent (or expired) record to the change as undefined; 'none' writes nothing", async () => {
    const store = openStore();
    const counters = store.collection<Counter>("counter");
    await counters.insert(scope, { id: "gone", createdAt: 1, expiresAt: 1, data: { n: 3 } });
    const seen: unknown[] = [];
    for (const id of ["absent", "gone"]) {
      const result = await counters.mutate(scope, id, (cur) => {
        seen.push(cur);
        return { write: "none", result: "nothing" };
      });
      expect(result).toBe("nothing");
    }
    expect(seen).toEqual([undefined, undefined]);
    // Another project does not see the record either.
    await counters.insert(scope, { id: "mine", createdAt: 1, data: { n: 1 } });
    await counters.mutate({ projectId: "proj_b" }, "mine", (cur) => {
      expect(cur).toBeUndefined();
      return { write: "none", result: undefined };
    });
    // An absent record can be created through `also` ops.
    const created = await counters.mutate(scope, "absent", (cur) =>
      cur ? { write: "none", result: false } : { write: "delete", also: [{ op: "insert", kind: "counter", scope, record: { id: "absent", createdAt: 2, data: { n: 1 } } }], result: true },
    );
    expect(created).toBe(true);
    expect((await counters.get(scope, "absent"))!.data).toEqual({ n: 1 });
  });

  it("hands the write to `commit` instead of the store, retrying when it reports a conflict", async () => {
    const { store, counters } = await counterStore();
    const committed: WriteOp[][] = [];
    const result = await counters.mutate(
      scope,
      "c1",
      (cur) => ({ write: "update", data: { n: cur!.data.n + 1 }, also: [{ op: "delete", kind: "other", scope, id: "x" }], result: cur!.version }),
      {
        commit: async (ops) => {
          committed.push(ops);
          // The first commit loses a race; the second one writes through the store itself.
          if (committed.length === 1) throw new VersionConflict("counter", "c1");
          await store.atomically(ops);
        },
      },
    );
    expect(result).toBe(1);
    expect(committed).toHaveLength(2);
    expect(committed[1]).toEqual([
      { op: "update", kind: "counter", scope, id: "c1", data: { n: 1 }, expectVersion: 1 },
      { op: "delete", kind: "other", scope, id: "x" },
    ]);
    expect(await counters.get(scope, "c1")).toMatchObject({ version: 2, data: { n: 1 } });

    // A commit that writes elsewhere leaves the store alone.
    await counters.mutate(scope, "c1", () => ({ write: "delete", result: undefined }), { commit: async () => {} });
    expect(await counters.get(scope, "c1")).toMatchObject({ version: 2 });
  });
});

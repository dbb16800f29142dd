import { describe, expect, it } from "vitest";
import { allRecords, eachRecord } from "../../src/common/pages.js";
import { openSqliteRecordStore } from "../../src/storage/sqlite-records.js";

const scope = { projectId: "proj_pages" };

async function storeWith(n: number, parentOf = (_i: number) => "") {
  const store = openSqliteRecordStore(":memory:");
  const things = store.collection<{ n: number }>("thing");
  for (let i = 0; i < n; i++) await things.insert(scope, { id: `thing_${String(i).padStart(5, "0")}`, createdAt: 1_700_000_000 + i, parentId: parentOf(i), data: { n: i } });
  return { store, things };
}

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of it) out.push(x);
  return out;
}

describe("allRecords and eachRecord", () => {
  it.each([0, 1, 7, 10, 11, 25])("read all %i records across pages of 5, in order, both ways", async (n) => {
    const { store, things } = await storeWith(n);
    const want = Array.from({ length: n }, (_, i) => i);
    expect((await allRecords(things, scope, { order: "asc", pageSize: 5 })).map((r) => r.data.n)).toEqual(want);
    expect((await collect(eachRecord(things, scope, { order: "asc", pageSize: 5 }))).map((r) => r.data.n)).toEqual(want);
    expect((await allRecords(things, scope, { order: "desc", pageSize: 5 })).map((r) => r.data.n)).toEqual(want.reverse());
    await store.close();
  });

  it("keep the query's filter on every page", async () => {
    const { store, things } = await storeWith(23, (i) => (i % 2 ? "odd" : "even"));
    const odd = await allRecords(things, scope, { order: "asc", parentId: "odd", pageSize: 4 });
    expect(odd.map((r) => r.data.n)).toEqual(Array.from({ length: 11 }, (_, i) => 2 * i + 1));
    expect((await collect(eachRecord(things, scope, { order: "asc", parentId: "odd", pageSize: 4 }))).length).toBe(11);
    expect(await allRecords(things, { projectId: "proj_other" }, { order: "asc" })).toEqual([]);
    await store.close();
  });
});

// The search index's tables come from an explicit registration (the vector stores area's
// ApiArea.migrations), never from importing the engine.
import { afterEach, describe, expect, it } from "vitest";
import { SEARCH_MIGRATION, SEARCH_MIGRATION_ID, SqliteSearchIndex } from "../../../src/engines/search/index.js";
import { JOBS_MIGRATION } from "../../../src/jobs/sqlite-job-store.js";
import { vectorStoresArea } from "../../../src/services/vector_stores/index.js";
import { openSqliteRecordStore, type SqliteRecordStore } from "../../../src/storage/sqlite-records.js";

const opened: SqliteRecordStore[] = [];
afterEach(async () => {
  while (opened.length) await opened.pop()!.close();
});

function open(migrations?: typeof SEARCH_MIGRATION[]): SqliteRecordStore {
  const store = openSqliteRecordStore(":memory:", migrations && { migrations });
  opened.push(store);
  return store;
}

const hasSearchTables = (store: SqliteRecordStore) => store.db.prepare(`SELECT 1 FROM sqlite_schema WHERE name = 'search_chunks'`).pluck().get() === 1;

describe("the search index's schema", () => {
  it("is not created by importing the engine: a store opened without the migration has no search tables, and the index says how to get them", () => {
    const store = open();
    expect(hasSearchTables(store)).toBe(false);
    expect(store.appliedMigrations()).not.toContain(SEARCH_MIGRATION_ID);
    expect(() => new SqliteSearchIndex(store.db)).toThrow(/search tables missing/);
  });

  it("is the vector stores area's migration, which the server applies when it opens the store", async () => {
    expect(vectorStoresArea.migrations).toContainEqual(SEARCH_MIGRATION);
    // As the server opens it: the jobs table first (the area's kind renames rewrite queued jobs).
    const store = open([JOBS_MIGRATION, ...(vectorStoresArea.migrations ?? [])]);
    expect(hasSearchTables(store)).toBe(true);
    expect(store.appliedMigrations()).toContain(SEARCH_MIGRATION_ID);
    const index = new SqliteSearchIndex(store.db);
    await index.addChunks("vs_1", [{ chunkId: "c", fileId: "f", index: 0, text: "atrium schema", tokens: 2, attributes: {} }]);
    expect(await index.stats("vs_1")).toMatchObject({ chunks: 1 });
    await index.close();
  });

  it("fromStore applies it to a store opened without it, once", async () => {
    const store = open();
    await SqliteSearchIndex.fromStore(store).close();
    await SqliteSearchIndex.fromStore(store).close();
    expect(store.appliedMigrations().filter((id) => id === SEARCH_MIGRATION_ID)).toHaveLength(1);
  });
});

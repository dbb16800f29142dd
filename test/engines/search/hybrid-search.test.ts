// runSearch (src/engines/search/hybrid-search.ts) on retrievers written here, for what the
// engines' contract test (search-index.test.ts) cannot see: the order in which it asks for things.
import { describe, expect, it } from "vitest";
import { checkSearchQuery, runSearch, searchTuning, type StoreRetrievers } from "../../../src/engines/search/hybrid-search.js";
import type { SearchQuery } from "../../../src/engines/search/types.js";

const ROWS = [0, 1, 2].map((label) => ({ label, chunkId: `c${label}`, fileId: "file-1", index: label, tokens: 3, text: `chunk ${label}`, attributes: null }));

function retrievers(onLexical: () => void): StoreRetrievers {
  return {
    lexical: () => {
      onLexical();
      return [2, 0, 1];
    },
    dense: () => null,
    allowedFiles: () => [],
    rows: (labels) => ROWS.filter((r) => labels.includes(r.label)),
  };
}

describe("runSearch", () => {
  it("asks for the lexical lists before it waits for the query vectors", async () => {
    let resolveVectors!: (v: Float32Array[]) => void;
    const q: SearchQuery = { text: ["chunk"], vector: new Promise((r) => (resolveVectors = r)), limit: 3, mode: "hybrid" };
    // The vectors arrive only once the lexical side has been asked: waiting for them first would never end.
    const search = runSearch(q, checkSearchQuery(q), retrievers(() => resolveVectors([new Float32Array([1, 0])])), searchTuning({}));
    let timer: NodeJS.Timeout | undefined;
    const never = new Promise((_, reject) => (timer = setTimeout(() => reject(new Error("runSearch waited for the vectors before the lexical lists")), 2000)));
    const hits = (await Promise.race([search, never]).finally(() => clearTimeout(timer))) as Awaited<typeof search>;
    expect(hits.map((h) => h.chunkId)).toEqual(["c2", "c0", "c1"]);
  });

  it("a search whose vectors fail rejects with their error, after the lexical side has run", async () => {
    let asked = 0;
    const down = new Error("the encoder is down");
    const q: SearchQuery = { text: ["chunk"], vector: Promise.reject(down), limit: 3 };
    await expect(runSearch(q, checkSearchQuery(q), retrievers(() => asked++), searchTuning({}))).rejects.toBe(down);
    expect(asked).toBe(1);
  });

  it("a query refused before its vectors arrive leaves no unhandled rejection behind (vitest fails the run on one)", async () => {
    let rejectVectors!: (e: Error) => void;
    const q: SearchQuery = { text: ["chunk"], vector: new Promise((_, reject) => (rejectVectors = reject)), limit: 0 };
    expect(() => checkSearchQuery(q)).toThrow(/limit/);
    rejectVectors(new Error("the encoder is down"));
    await new Promise((r) => setTimeout(r, 10));
  });
});

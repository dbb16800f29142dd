/**
 * What only the PostgreSQL search index has (src/engines/search/postgres): the RUM or GIN text
 * index, the lexical budget's term counts kept by every write, and two index objects on one
 * database (two instances): writes through one are found by the other, which catches up by a
 * delta read of the change log, not a full load. The contract both indexes share is tested on
 * both from ../search-index.test.ts.
 */
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresSearchIndex, poolStore, type PostgresSearchOptions } from "../../../../src/engines/search/postgres/index.js";
import { testPostgres } from "../../../shared/postgres.js";
import { eq, fileSet, MODES, only, searchAll, smallCorpus, embed } from "../../../shared/search-fixtures.js";

const pools: pg.Pool[] = [];
afterAll(async () => {
  for (const p of pools) await p.end();
});

async function newPool(url?: string): Promise<{ pool: pg.Pool; url: string }> {
  const dbUrl = url ?? (await (await testPostgres()).newDatabase("search"));
  const pool = new pg.Pool({ connectionString: dbUrl, max: 4 });
  pools.push(pool);
  return { pool, url: dbUrl };
}

async function openIndex(opts: PostgresSearchOptions = {}, url?: string): Promise<{ index: PostgresSearchIndex; pool: pg.Pool; url: string }> {
  const { pool, url: u } = await newPool(url);
  return { index: PostgresSearchIndex.fromStore(poolStore(pool), opts), pool, url: u };
}

describe("text index and term counts", () => {
  it("uses RUM when the extension can be created, GIN when told", async () => {
    const rum = await openIndex();
    expect(await rum.index.ready()).toBe("rum");
    const gin = await openIndex({ textIndex: "gin" });
    expect(await gin.index.ready()).toBe("gin");
    await rum.index.close();
    await gin.index.close();
  });

  it("the budget's term counts follow every add, replace and removal", async () => {
    const { index, pool } = await openIndex();
    const corpus = smallCorpus();
    await index.addChunks("vs_t", corpus);
    await index.addChunks("vs_t", [{ ...corpus[0]!, text: "Atrium zeppelin airship hangar" }, { ...corpus[1]!, text: "Atrium first" }, { ...corpus[1]!, text: "Atrium second" }]);
    await index.removeFile("vs_t", "file-3");
    await index.addChunks("vs_u", corpus.slice(0, 5));
    const wrong = await pool.query(
      `SELECT s.lexeme FROM search_terms s
       WHERE s.df <> (SELECT count(*) FROM search_chunks c WHERE c.store_ord = s.store_ord AND tsvector_to_array(c.tsv) @> ARRAY[s.lexeme])`,
    );
    expect(wrong.rows).toEqual([]);
    const missing = await pool.query(
      `SELECT DISTINCT c.store_ord, l FROM search_chunks c, unnest(tsvector_to_array(c.tsv)) AS l
       WHERE NOT EXISTS (SELECT 1 FROM search_terms s WHERE s.store_ord = c.store_ord AND s.lexeme = l)`,
    );
    expect(missing.rows).toEqual([]);
    await index.close();
  });
});

describe("two instances on one database", () => {
  it("writes through one are found by the other, which catches up by delta reads, not full loads", async () => {
    const a = await openIndex({ annThreshold: 20 });
    const b = await openIndex({ annThreshold: 20 }, a.url);
    const corpus = smallCorpus();
    await a.index.addChunks("vs_2", corpus.slice(0, 25));
    await b.index.settle("vs_2");
    expect(b.index.inspect("vs_2")).toMatchObject({ loaded: true, vectors: 25, ann: "ready" });
    expect(b.index.denseReads()).toEqual({ full: 1, delta: 0 });

    await a.index.addChunks("vs_2", corpus.slice(25));
    const target = corpus[42]!;
    const [hit] = await b.index.search("vs_2", { text: [target.text], vector: [target.vector!], limit: 1, mode: "dense" });
    expect(hit).toMatchObject({ chunkId: target.chunkId });
    expect(b.index.inspect("vs_2").vectors).toBe(50);
    expect(b.index.denseReads()).toEqual({ full: 1, delta: 1 });

    await a.index.removeFile("vs_2", "file-8");
    await a.index.updateAttributes("vs_2", "file-0", { author: "zoe" });
    for (const mode of MODES) {
      expect(fileSet(await searchAll(b.index, "vs_2", mode)).has(8), mode).toBe(false);
      expect(fileSet(await searchAll(b.index, "vs_2", mode, eq("author", "zoe"))), mode).toEqual(only(0));
    }
    expect(b.index.inspect("vs_2").vectors).toBe(45);
    expect(b.index.denseReads()).toEqual({ full: 1, delta: 2 });
    // b's own write is applied to its cache directly; a catches up on its next search by one delta read.
    await a.index.settle("vs_2");
    const aReads = a.index.denseReads();
    await b.index.addChunks("vs_2", [{ chunkId: "new", fileId: "file-new", index: 0, text: "Atrium brand new chunk", tokens: 4, vector: embed("Atrium brand new chunk"), attributes: {} }]);
    expect(b.index.denseReads()).toEqual({ full: 1, delta: 2 });
    const [n] = await a.index.search("vs_2", { text: ["brand new"], vector: [embed("Atrium brand new chunk")], limit: 1, mode: "dense" });
    expect(n).toMatchObject({ chunkId: "new" });
    expect(a.index.denseReads()).toEqual({ full: aReads.full, delta: aReads.delta + 1 });
    // A store dropped and made again by the other instance is a different store: loaded afresh.
    await a.index.dropStore("vs_2");
    expect(await searchAll(b.index, "vs_2", "dense")).toEqual([]);
    expect(b.index.inspect("vs_2").loaded).toBe(false);
    await a.index.addChunks("vs_2", corpus.slice(0, 3));
    expect((await searchAll(b.index, "vs_2", "dense")).length).toBe(3);
    expect(b.index.denseReads().full).toBe(2);
    await a.index.close();
    await b.index.close();
  });

  it("a cache behind the pruned change log reloads in full, and ends up right", async () => {
    const a = await openIndex({ changeLogKeep: 4 });
    const b = await openIndex({ changeLogKeep: 4 }, a.url);
    const corpus = smallCorpus();
    await a.index.addChunks("vs_p", corpus.slice(0, 5));
    await b.index.settle("vs_p");
    expect(b.index.denseReads()).toEqual({ full: 1, delta: 0 });
    for (let f = 1; f < 10; f++) await a.index.addChunks("vs_p", corpus.slice(f * 5, f * 5 + 5));
    await a.index.removeFile("vs_p", "file-2");
    const rows = await a.pool.query(`SELECT min(version)::int AS lo, max(version)::int AS hi FROM search_changes`);
    expect(rows.rows[0].hi - rows.rows[0].lo).toBeLessThan(8); // pruned as it goes
    expect((await searchAll(b.index, "vs_p", "dense")).length).toBe(45);
    expect(b.index.denseReads()).toEqual({ full: 2, delta: 0 });
    await a.index.close();
    await b.index.close();
  });
});

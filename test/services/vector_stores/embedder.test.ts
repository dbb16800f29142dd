// Embedder bookkeeping: a store remembers the embedder (provider, model, dimensions) that made its
// vectors. Restarted with another embedder, the server refuses to search or extend the store
// (vectors of two embedders are not comparable) until the store is re-indexed: detached files
// leave it empty, and an empty store takes the current embedder. Dense retrieval can be switched
// off (ATRIUM_VECTOR_STORES_DENSE=false): new stores are lexical-only, older ones are searched
// lexically.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import pino from "pino";
import { configFromEnv } from "../../../src/config.js";
import { startServer, type RunningServer } from "../../../src/server.js";
import { API_KEY, tempDir } from "../../shared/server.js";
import { api, expectError, sdk } from "../../shared/rest.js";
import { settle, upload } from "../../shared/vector-stores.js";

const dataDir = tempDir("atrium-vs-embedder-");
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

/** A server on the shared data directory; `providers` goes into its ATRIUM_CONFIG. */
async function start(providers: object, env: Record<string, string> = {}): Promise<RunningServer> {
  const config = join(dataDir, "config.json");
  writeFileSync(config, JSON.stringify({ providers }));
  const saved = { ...process.env };
  Object.assign(process.env, env); // the area reads ATRIUM_VECTOR_STORES_DENSE at set-up
  try {
    const cfg = configFromEnv({ ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: API_KEY, ATRIUM_CONFIG: config });
    return await startServer(cfg, { logger: pino({ level: "silent" }) });
  } finally {
    process.env = saved;
  }
}

describe("embedder bookkeeping", () => {
  it("another embedder is refused with a clear error until the store is re-indexed; the lexical-only switch", async () => {
    // 1. The local encoder at its full 512 dimensions.
    let s = await start({});
    let c = sdk(`${s.url}/v1`);
    const fileId = await upload(c, "The observatory on the ridge opens to visitors on clear Friday nights.", "observatory.txt");
    const vs = await c.vectorStores.create({ name: "embedded", file_ids: [fileId] });
    await settle(c, vs.id);
    expect((await c.vectorStores.search(vs.id, { query: "when can the public look at the stars?" })).data[0]?.file_id).toBe(fileId);
    await s.close();

    // 2. Restarted with 256-dimension vectors: the store's 512-dimension ones are not comparable.
    s = await start({ embeddings: { kind: "local", dimensions: 256 } });
    c = sdk(`${s.url}/v1`);
    const base = `${s.url}/v1`;
    const e = await expectError(await api(base, `/vector_stores/${vs.id}/search`, { method: "POST", json: { query: "observatory" } }), 400, {
      param: "vector_store_id",
      code: "embedder_mismatch",
    });
    expect(e.message).toMatch(/512/);
    expect(e.message).toMatch(/256/);
    expect(e.message).toMatch(/[Rr]e-index/);
    await expectError(await api(base, `/vector_stores/${vs.id}/files`, { method: "POST", json: { file_id: fileId } }), 400, { code: "embedder_mismatch" });
    // Re-index: detach (the store is empty, so it takes the current embedder) and attach again.
    await c.vectorStores.files.delete(fileId, { vector_store_id: vs.id });
    const again = await c.vectorStores.files.createAndPoll(vs.id, { file_id: fileId }, { pollIntervalMs: 50 });
    expect(again.status).toBe("completed");
    expect(again.usage_bytes).toBeLessThan(2000); // 256 floats of vectors now, not 512
    expect((await c.vectorStores.search(vs.id, { query: "when can the public look at the stars?" })).data[0]?.file_id).toBe(fileId);
    await s.close();

    // 3. Dense retrieval off: a new store is lexical-only and ingests without embedding; the
    //    older store is still searched (lexically). Adding to the dense store is refused.
    s = await start({ embeddings: { kind: "local", dimensions: 256 } }, { ATRIUM_VECTOR_STORES_DENSE: "false" });
    c = sdk(`${s.url}/v1`);
    const lexical = await c.vectorStores.create({ name: "lexical", file_ids: [fileId] });
    const done = await settle(c, lexical.id);
    expect(done.file_counts.completed).toBe(1);
    expect(done.usage_bytes).toBe(Buffer.byteLength("The observatory on the ridge opens to visitors on clear Friday nights."));
    expect((await c.vectorStores.search(lexical.id, { query: "observatory visitors" })).data[0]?.file_id).toBe(fileId);
    expect((await c.vectorStores.search(vs.id, { query: "observatory visitors" })).data[0]?.file_id).toBe(fileId);
    await expectError(await api(`${s.url}/v1`, `/vector_stores/${vs.id}/files`, { method: "POST", json: { file_id: fileId } }), 400, { code: "embedder_mismatch" });
    await s.close();
  }, 120_000);
});

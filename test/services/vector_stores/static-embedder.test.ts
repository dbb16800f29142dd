// A server configured with the static model (providers.embeddings.model) makes new vector
// stores with it; a store indexed with the sentence encoder (the local default) keeps it: it is searched and extended with
// the encoder's vectors, not refused and not mixed. Dense-only search (ranker "none") scores a hit
// by the cosine of the query's and the chunk's vectors, which tells the two models apart.
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import pino from "pino";
import { StaticEmbedder, STATIC_EMBEDDING_MODEL as STATIC_MODEL_ID } from "../../../src/engines/embeddings/index.js";
import { configFromEnv } from "../../../src/config.js";
import { startServer, type RunningServer } from "../../../src/server.js";
import { API_KEY, MODEL_CACHE_DIR, tempDir } from "../../shared/server.js";
import { sdk } from "../../shared/rest.js";
import { settle, upload } from "../../shared/vector-stores.js";

const TEACHER = "atrium-embed-use-lite";
const STATIC = "atrium-embed-static-use-lite";
const OBSERVATORY = "The observatory on the ridge opens to visitors on clear Friday nights.";
const FERRY = "The ferry to the island leaves the harbour twice a day in winter.";
const QUERY = "when can the public look at the stars?";

const dataDir = tempDir("atrium-vs-static-");
afterAll(() => rmSync(dataDir, { recursive: true, force: true }));
beforeAll(() => tableReady(), 300_000);

/** The static model's table in the shared model cache (built there by the first test that needs it: tens of seconds). */
async function tableReady(): Promise<void> {
  const e = new StaticEmbedder({ cacheDir: MODEL_CACHE_DIR });
  try {
    await e.embed(["warm"], { model: STATIC_MODEL_ID });
  } finally {
    await e.close();
  }
}


async function start(providers: object): Promise<RunningServer> {
  const config = join(dataDir, "config.json");
  writeFileSync(config, JSON.stringify({ providers }));
  const cfg = configFromEnv({ ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: API_KEY, ATRIUM_CONFIG: config, ATRIUM_MODEL_CACHE_DIR: MODEL_CACHE_DIR });
  return startServer(cfg, { logger: pino({ level: "silent" }) });
}

const dot = (a: ArrayLike<number>, b: ArrayLike<number>) => {
  let d = 0;
  for (let i = 0; i < a.length; i++) d += a[i]! * b[i]!;
  return d;
};

async function cosine(c: OpenAI, model: string, a: string, b: string): Promise<number> {
  const res = await c.embeddings.create({ model, input: [a, b], encoding_format: "float" });
  return dot(res.data[0]!.embedding, res.data[1]!.embedding);
}

/** The dense-only score of `fileId` for QUERY in the store: the cosine of their vectors. */
async function denseScore(c: OpenAI, storeId: string, fileId: string): Promise<number> {
  const res = await c.vectorStores.search(storeId, { query: QUERY, ranking_options: { ranker: "none" } as never, max_num_results: 10 });
  const hit = res.data.find((h) => h.file_id === fileId);
  expect(hit, `${fileId} found`).toBeDefined();
  return hit!.score;
}

describe("vector stores and the static model", () => {
  it("new stores use the configured static model; a store indexed with the encoder keeps it", async () => {
    // 1. The local default: the store's vectors are the encoder's.
    let s = await start({});
    let c = sdk(`${s.url}/v1`);
    const observatory = await upload(c, OBSERVATORY, "observatory.txt");
    const old = await c.vectorStores.create({ name: "encoder", file_ids: [observatory] });
    expect((await settle(c, old.id)).file_counts.completed).toBe(1);
    const teacherCos = await cosine(c, TEACHER, QUERY, OBSERVATORY);
    const staticCos = await cosine(c, STATIC, QUERY, OBSERVATORY);
    expect(Math.abs(teacherCos - staticCos)).toBeGreaterThan(0.02); // the scores below tell the models apart
    expect(await denseScore(c, old.id, observatory)).toBeCloseTo(teacherCos, 3);
    await s.close();

    // 2. Restarted with the static model: a new store embeds with it ...
    s = await start({ embeddings: { kind: "local", model: STATIC } });
    c = sdk(`${s.url}/v1`);
    const fresh = await c.vectorStores.create({ name: "static", file_ids: [observatory] });
    expect((await settle(c, fresh.id)).file_counts.completed).toBe(1);
    expect(await denseScore(c, fresh.id, observatory)).toBeCloseTo(staticCos, 3);
    expect((await c.vectorStores.search(fresh.id, { query: QUERY })).data[0]?.file_id).toBe(observatory);

    // ... and the old store is still searched, and extended, with the encoder.
    expect(await denseScore(c, old.id, observatory)).toBeCloseTo(teacherCos, 3);
    const ferry = await upload(c, FERRY, "ferry.txt");
    const added = await c.vectorStores.files.createAndPoll(old.id, { file_id: ferry }, { pollIntervalMs: 50 });
    expect(added.status).toBe("completed");
    const ferryRes = await c.vectorStores.search(old.id, { query: "boat to the island", ranking_options: { ranker: "none" } as never });
    expect(ferryRes.data[0]?.file_id).toBe(ferry);
    expect(ferryRes.data[0]!.score).toBeCloseTo(await cosine(c, TEACHER, "boat to the island", FERRY), 3);
    await s.close();
  }, 180_000);
});

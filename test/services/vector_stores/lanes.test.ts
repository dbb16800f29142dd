// A search while a large ingestion runs, through the API: the ingestion's embeddings go to the
// shared encoder's bulk lane and the search's query to the interactive lane (src/engines/pool/lanes.ts),
// so the search's query runs after the bulk unit already running, not after the ingestion's queued
// work, and it answers while the ingestion is still in progress.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { LOCAL_EMBEDDING_MODEL, type LocalEmbeddings, type LocalSentenceEncoder } from "../../../src/engines/embeddings/index.js";
import type { Providers } from "../../../src/providers/registry.js";
import type { ApiArea } from "../../../src/services/area.js";
import { areas } from "../../../src/services/index.js";
import { KEYS, startTestServer, type TestServer } from "../../shared/server.js";
import { sdk } from "../../shared/rest.js";
import { TOPICS, longText, settle, upload } from "../../shared/vector-stores.js";

let s: TestServer;
let encoder: LocalSentenceEncoder | undefined;

/** The embeddings area as it is, except that the local encoder it registers is kept for the test to read its queue. */
const spiedAreas: ApiArea[] = areas.map((area) =>
  area.name !== "embeddings"
    ? area
    : {
        ...area,
        setup: (ctx) => {
          const providers = ctx.providers as Providers & { registerLocal: Providers["registerLocal"] };
          const register = providers.registerLocal.bind(providers);
          providers.registerLocal = ((capability, factory) =>
            register(capability, (c) => {
              const made = factory(c);
              if (capability === "embeddings") encoder = (made as LocalEmbeddings).forModel(LOCAL_EMBEDDING_MODEL) as LocalSentenceEncoder;
              return made;
            })) as Providers["registerLocal"];
          try {
            return area.setup(ctx);
          } finally {
            delete (providers as { registerLocal?: unknown }).registerLocal; // the class's own again
          }
        },
      },
);

beforeAll(async () => {
  s = await startTestServer({ areas: spiedAreas });
});
afterAll(async () => s?.stop());

const until = async (what: string, ok: () => boolean) => {
  for (const deadline = Date.now() + 60_000; !ok(); await new Promise((r) => setTimeout(r, 10)))
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
};

describe("vector stores: a search during a large ingestion", () => {
  it("is embedded in the interactive lane ahead of the ingestion's queued units, and answers while the ingestion runs", async () => {
    const searcher: OpenAI = sdk(s.baseURL, KEYS.projectB);
    const ingester: OpenAI = sdk(s.baseURL);
    const small = await searcher.vectorStores.create({ name: "small", file_ids: [await upload(searcher, TOPICS.join("\n\n"), "topics.txt")] });
    await settle(searcher, small.id);
    await searcher.vectorStores.search(small.id, { query: "warm up" });
    expect(encoder, "the local encoder served the search").toBeDefined();

    const big = await ingester.vectorStores.create({ name: "big", file_ids: [await upload(ingester, longText(7, 400), "big.txt")] });
    await until("the ingestion's units in the bulk lane", () => encoder!.scheduler.stats().lanes.bulk.queuedUnits > 4);
    const before = encoder!.scheduler.stats().lanes;

    const res = await searcher.vectorStores.search(small.id, { query: "how do bees tell each other where flowers are?" });
    const after = encoder!.scheduler.stats().lanes;
    expect(res.data[0]?.content[0]?.text).toMatch(/waggle dance/);
    // One worker: the bulk unit running when the query arrived, then the query; in arrival order it
    // would wait for every queued unit. (On a busy machine a unit or two may start before the
    // query reaches the scheduler, so the bound is half the queue.)
    expect(after.bulk.unitsDone - before.bulk.unitsDone).toBeLessThan(Math.max(3, before.bulk.queuedUnits / 2));
    expect(after.interactive.unitsDone - before.interactive.unitsDone).toBeGreaterThanOrEqual(1);
    expect((await ingester.vectorStores.retrieve(big.id)).file_counts.in_progress).toBe(1);

    await ingester.vectorStores.delete(big.id); // its ingestion stands down
  }, 120_000);
});

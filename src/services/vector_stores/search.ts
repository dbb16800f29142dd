// Searching a vector store (spec 4.3): the queries (rewritten when asked), embedded by the
// store's own embedder when it has vectors, ranked by the search index, and returned with each
// file's name and attributes as its record has them.
import { ApiError, engineOverloaded } from "../../common/errors.js";
import { LocalEmbeddingsTimeout } from "../../engines/embeddings/index.js";
import { EngineBusyError, PoolClosedError } from "../../engines/pool/index.js";
import { rewriteQuery, type SearchHit, type SearchIndex } from "../../engines/search/index.js";
import type { Scope } from "../../storage/types.js";
import { describeEmbedder, embedTexts, storeSetup, type DenseSetup, type DenseSource } from "./embedder.js";
import type { Attributes, VsFileRecord } from "./records.js";
import type { SearchParams } from "./validate.js";
import type { VectorStores } from "./vector-stores.js";

export interface SearchDeps {
  vectorStores: Pick<VectorStores, "getUsable" | "findFile" | "touch">;
  index: Pick<SearchIndex, "search">;
  dense: DenseSource;
}

export type StoreHit = Omit<SearchHit, "attributes"> & { filename: string; attributes: Attributes | null };

export async function searchStore(
  deps: SearchDeps,
  scope: Scope,
  storeId: string,
  p: SearchParams,
  signal?: AbortSignal,
): Promise<{ queries: string[]; hits: StoreHit[] }> {
  const store = await deps.vectorStores.getUsable(scope, storeId);
  const queries = p.rewrite ? p.queries.map((q) => rewriteQuery(q) || q) : p.queries;
  // Dense retrieval needs the query embedded by the store's own embedder.
  const current = deps.dense();
  // Pending while the index starts its lexical side (it needs no vector). An embedding the search
  // ends without (a store with nothing indexed yet, an index error) is stopped with it.
  const stopEmbedding = new AbortController();
  const embedSignal = signal ? AbortSignal.any([signal, stopEmbedding.signal]) : stopEmbedding.signal;
  let vectors: Promise<Float32Array[]> | undefined;
  if (store.data.embedder && current) {
    const setup = storeSetup(store.data.embedder, current);
    if (!setup)
      throw new ApiError(
        400,
        `Vector store ${storeId} was indexed with ${describeEmbedder(store.data.embedder)}; this server embeds with ${describeEmbedder(current.embedder)}, ` +
          `whose vectors are not comparable. Re-index the store (detach and attach its files again) or search with a server configured like the one that indexed it.`,
        { param: "vector_store_id", code: "embedder_mismatch" },
      );
    vectors = embedQueries(setup, queries, scope, embedSignal);
  }
  // `none` skips the fusion re-ranking: the dense ranking alone (BM25 alone without vectors).
  const mode = vectors ? (p.ranker === "none" ? "dense" : "hybrid") : "lexical";
  const hits = await deps.index
    .search(storeId, { text: queries, vector: vectors, limit: p.maxResults, filter: p.filter, scoreThreshold: p.scoreThreshold, mode })
    .finally(() => stopEmbedding.abort());
  // Name and attributes as the file's record has them (null attributes stay null).
  const files = new Map<string, VsFileRecord | undefined>();
  for (const h of hits) if (!files.has(h.fileId)) files.set(h.fileId, (await deps.vectorStores.findFile(scope, storeId, h.fileId))?.data);
  await deps.vectorStores.touch(scope, storeId);
  return {
    queries,
    hits: hits.map((h) => {
      const f = files.get(h.fileId);
      return { ...h, filename: f?.filename ?? "", attributes: f ? f.attributes : h.attributes };
    }),
  };
}

/** The queries' vectors, in the encoder's interactive lane; a busy or stuck encoder is a 503 the caller may retry. */
async function embedQueries(setup: DenseSetup, queries: string[], scope: Scope, signal: AbortSignal | undefined): Promise<Float32Array[]> {
  try {
    return await embedTexts(setup, queries, { lane: "interactive", project: scope.projectId, signal });
  } catch (e) {
    if (e instanceof EngineBusyError) throw engineOverloaded(e.message, e.retryAfterMs, e);
    if (e instanceof LocalEmbeddingsTimeout) throw new ApiError(503, `${e.message} Retry later.`, { code: "engine_timeout", cause: e });
    if (e instanceof PoolClosedError) throw new ApiError(503, "The server is shutting down.", { code: "shutting_down", cause: e });
    throw e;
  }
}

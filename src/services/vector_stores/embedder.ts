// Which embedder makes a store's vectors. A store records the embedder (provider, model,
// dimensions) its vectors came from, because vectors of two models live in unrelated spaces:
// a store is only ever searched and extended with the embedder that indexed it. The local
// provider serves several models (the sentence encoder by default, the static model distilled
// from it when providers.embeddings.model names it), so a store indexed with any of them keeps its own while new stores take the
// server's current one (storeSetup). To move a store
// to another embedder, re-index it explicitly: detach its files (an empty store takes the
// server's current embedder at its next attach) and attach them again, or create a new store.
//
// Dense retrieval can be switched off for the whole server with ATRIUM_VECTOR_STORES_DENSE=false:
// stores created then are lexical-only (BM25, no embedding at ingestion or search), which ingests
// much faster on machines without spare cores.
import type { Providers } from "../../providers/registry.js";
import type { EmbeddingsProvider, WorkLane } from "../../providers/types.js";
import type { Embedder } from "./records.js";

export interface DenseSetup {
  embedder: Embedder;
  provider: EmbeddingsProvider;
}

/** The embedder this server makes new vectors with; null when dense retrieval is off. */
export type DenseSource = () => DenseSetup | null;

/** Model name used with an upstream provider when the config names none. */
export const DEFAULT_UPSTREAM_MODEL = "text-embedding-3-small";

export function denseEnabledFromEnv(env: NodeJS.ProcessEnv = process.env): boolean {
  const raw = (env.ATRIUM_VECTOR_STORES_DENSE ?? "").trim().toLowerCase();
  if (raw === "" || raw === "true" || raw === "1" || raw === "on" || raw === "yes") return true;
  if (raw === "false" || raw === "0" || raw === "off" || raw === "no") return false;
  throw new Error(`ATRIUM_VECTOR_STORES_DENSE must be true or false, got '${env.ATRIUM_VECTOR_STORES_DENSE}'`);
}

/** The dense source of a server: its configured embeddings provider, resolved on first use. */
export function denseSource(providers: Providers | undefined, enabled: boolean): DenseSource {
  let setup: DenseSetup | null | undefined;
  return () => {
    if (setup !== undefined) return setup;
    if (!enabled || !providers?.has("embeddings")) return (setup = null);
    const provider = providers.embeddings();
    const cfg = providers.configOf("embeddings");
    const model = cfg.model ?? (provider.local ? provider.id : DEFAULT_UPSTREAM_MODEL);
    // A local embedder is named by its model: one provider serves several local models.
    return (setup = { provider, embedder: { provider: provider.local ? model : provider.id, model, dimensions: cfg.dimensions ?? provider.dimensions ?? 0 } });
  };
}

export function sameEmbedder(a: Embedder | null, b: Embedder | null): boolean {
  if (a === null || b === null) return a === b;
  return a.provider === b.provider && a.model === b.model && a.dimensions === b.dimensions;
}

/**
 * How this server embeds for a store indexed with `stored`: the current embedder when it is the
 * same, the current local provider when it also serves the stored local model at the same
 * dimensions, else null (the store needs re-indexing). A lexical-only store (`stored` null) never embeds.
 */
export function storeSetup(stored: Embedder | null, current: DenseSetup | null): DenseSetup | null {
  if (stored === null || current === null) return null;
  if (sameEmbedder(stored, current.embedder)) return current;
  const { provider } = current;
  // Another local model at the same length: the operator switched models, not vector sizes (a
  // size change stays a re-index, as for any other embedder).
  const otherLocalModel = provider.local && stored.provider === stored.model && provider.models?.includes(stored.model);
  if (otherLocalModel && stored.dimensions === current.embedder.dimensions) return { provider, embedder: stored };
  return null;
}

export function describeEmbedder(e: Embedder | null): string {
  return e === null ? "no embedder (lexical only)" : `'${e.model}' (${e.dimensions || "default"} dimensions, provider ${e.provider})`;
}

/** Who the embedding is for: a search ("interactive") or an ingestion ("bulk"), and its project. */
export interface EmbedWork {
  lane: WorkLane;
  project: string;
  signal?: AbortSignal;
}

/** Vectors for `texts` from the store's embedder, as Float32Arrays. */
export async function embedTexts(setup: DenseSetup, texts: string[], work: EmbedWork): Promise<Float32Array[]> {
  const { vectors } = await setup.provider.embed(texts, {
    model: setup.embedder.model,
    ...(setup.embedder.dimensions ? { dimensions: setup.embedder.dimensions } : {}),
    signal: work.signal,
    lane: work.lane,
    project: work.project,
  });
  return vectors.map((v) => (v instanceof Float32Array ? v : Float32Array.from(v)));
}

// The Embeddings area: POST /v1/embeddings. It owns the local embedding models (the sentence encoder's worker
// pool and the static model's worker, one each for the whole server) and registers it as the local embeddings provider, so that other areas
// (vector stores) asking providers.embeddings() share the same workers.
import { EmbeddingsService } from "../../../gen/atrium/v1/embeddings_pb.js";
import { DEFAULT_PROVIDER_TIMEOUT_MS } from "../../config-schema.js";
import { LocalEmbeddings, LocalSentenceEncoder, StaticEmbedder } from "../../engines/embeddings/index.js";
import type { ApiArea } from "../area.js";
import { createEmbeddingsService } from "./handler.js";

// Batches run embeddings requests through the same service.
export { createEmbeddingsService } from "./handler.js";

export const embeddingsArea: ApiArea = {
  name: "embeddings",
  setup: ({ config, providers }) => {
    // The local model's time limit is `providers.embeddings.timeout_ms` when the capability is
    // local (default 60 s); with an upstream configured, that limit is the upstream's and the
    // local model keeps the default.
    const settings = config.providers?.embeddings;
    const timeoutMs = settings?.kind === "local" ? settings.timeoutMs : DEFAULT_PROVIDER_TIMEOUT_MS;
    const encoder = new LocalSentenceEncoder({ timeoutMs });
    // The static model's table is built from the encoder on first use and cached with the other derived model data.
    const staticModel = new StaticEmbedder({ cacheDir: config.modelCacheDir, timeoutMs });
    const local = new LocalEmbeddings({ [staticModel.id]: staticModel, [encoder.id]: encoder });
    providers?.registerLocal("embeddings", () => local);
    const upstream = () => (providers?.configOf("embeddings").kind === "upstream" ? providers.embeddings() : undefined);
    return {
      services: [{ desc: EmbeddingsService, impl: createEmbeddingsService({ local, upstream }) }],
      stop: async () => void (await Promise.all([encoder.close(), staticModel.close()])),
    };
  },
};

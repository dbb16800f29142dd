// The Moderations area: POST /v1/moderations (spec 4.8). It owns the local moderation engine and
// registers it as the local moderation provider; `providers.moderation.base_url` in ATRIUM_CONFIG
// sends requests to an OpenAI-compatible upstream instead.
import { ModerationsService } from "../../../gen/atrium/v1/moderations_pb.js";
import { LocalModeration } from "../../engines/moderation/index.js";
import type { EmbeddingsProvider } from "../../providers/types.js";
import type { ApiArea } from "../area.js";
import { createModerationsService } from "./handler.js";

// Batches run moderation requests through the same service.
export { createModerationsService } from "./handler.js";

export const moderationsArea: ApiArea = {
  name: "moderations",
  setup: ({ config, providers }) => {
    // The text classifier needs the local sentence encoder whatever the embeddings provider is;
    // the registry hands out the one in-process instance (the embeddings area registers it).
    const encoder = (): EmbeddingsProvider => providers.local("embeddings");
    let local: LocalModeration | undefined;
    const makeLocal = (timeoutMs: number) =>
      (local ??= new LocalModeration({
        encoder,
        fetch: { timeoutMs: config.fetchTimeoutMs, allowPrivate: config.fetchAllowPrivate },
        // The bank's vectors, so that a restart does not embed the bank again (keyed by content).
        cacheDir: config.modelCacheDir,
        timeoutMs,
      }));
    providers.registerLocal("moderation", (c) => makeLocal(c.timeoutMs));
    const provider = () => providers.moderation();
    return {
      services: [{ desc: ModerationsService, impl: createModerationsService({ provider }) }],
      stop: async () => {
        await local?.close();
      },
    };
  },
};

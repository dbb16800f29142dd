// The Batches area (spec 2.13, 4.10): JSONL files of requests run in the background on this
// server's own service implementations, in the creator's project. Its ATRIUM_CONFIG section
// `batches` sets the concurrency and slice size of a run, and its worker threads.
import { availableParallelism } from "node:os";
import { BatchesService } from "../../../gen/atrium/v1/batches_pb.js";
import { ModerationsService } from "../../../gen/atrium/v1/moderations_pb.js";
import { LOCAL_EMBEDDING_DIMENSIONS } from "../../engines/embeddings/index.js";
import type { EmbeddingsProvider } from "../../providers/types.js";
import type { ApiArea } from "../area.js";
import { createEmbeddingsService } from "../embeddings/index.js";
import { filesApi } from "../files/index.js";
import { createModerationsService } from "../moderations/index.js";
import { createResponsesService } from "../responses/index.js";
import { Batches } from "./batches.js";
import { endpointCalls, type Endpoint } from "./endpoints.js";
import { createBatchesService } from "./handler.js";
import { BATCHES_RUN_JOB, runJob } from "./jobs.js";
import { BatchWorkers } from "./pool.js";

export interface BatchSettings {
  concurrency: number;
  slice_lines: number;
  slice_ms: number;
  slice_bytes: number;
  slice_interval_ms: number;
  workers: number;
}

/** One worker per core, up to 4: they check input and count tokens while the main thread serves. */
const DEFAULT_WORKERS = Math.min(4, availableParallelism());

const schema = {
  type: "object",
  additionalProperties: false,
  properties: {
    // Requests of one batch under way at once.
    concurrency: { type: "integer", minimum: 1, maximum: 256, default: 8 },
    // A slice's results commit together: it ends after this many requests, slice_ms of work or
    // slice_bytes of output lines, whichever comes first (bounding what runs again after a crash,
    // and the size of one commit). Each commit has a fixed cost: slices of fast local requests
    // are best large, and the time and size limits keep slow or bulky ones small.
    slice_lines: { type: "integer", minimum: 1, maximum: 50_000, default: 10_000 },
    slice_ms: { type: "integer", minimum: 1, maximum: 600_000, default: 1000 },
    slice_bytes: { type: "integer", minimum: 1024, maximum: 256 * 1024 * 1024, default: 8 * 1024 * 1024 },
    // Minimum time per slice: a simple throttle, e.g. for an upstream's rate limit.
    slice_interval_ms: { type: "integer", minimum: 0, maximum: 600_000, default: 0 },
    // Worker threads that check input files and run the requests whose work is CPU on the
    // calling thread (token counting); 0 runs everything on the main thread. Default: one per
    // core, at most 4.
    workers: { type: "integer", minimum: 0, maximum: 64 },
  },
};

export const batchesArea: ApiArea = {
  name: "batches",
  configSection: { name: "batches", schema },
  setup: ({ deps, config, providers, jobs }) => {
    const settings: BatchSettings = { concurrency: 8, slice_lines: 10_000, slice_ms: 1000, slice_bytes: 8 * 1024 * 1024, slice_interval_ms: 0, workers: DEFAULT_WORKERS, ...(config.sections?.batches as Partial<BatchSettings> | undefined) };
    // The one in-process encoder the embeddings area registered, whatever embeddings are
    // configured as; resolved on first use.
    const lazyLocal: EmbeddingsProvider = {
      id: "local",
      local: true,
      dimensions: LOCAL_EMBEDDING_DIMENSIONS,
      embed: (inputs, opts) => providers.local("embeddings").embed(inputs, opts),
    };
    const responsesOptions = { fetch: { timeoutMs: config.fetchTimeoutMs, allowPrivate: config.fetchAllowPrivate } };
    const calls = endpointCalls({
      // Batch lines are background work: the local encoder runs them after interactive requests.
      embeddings: createEmbeddingsService({ lane: "bulk", local: lazyLocal, upstream: () => (providers.configOf("embeddings").kind === "upstream" ? providers.embeddings() : undefined) }),
      responses: createResponsesService(deps, responsesOptions),
      // The moderation area's service on the moderation provider it registered (or the upstream).
      moderations: { service: ModerationsService, method: ModerationsService.method.createModeration, call: createModerationsService({ provider: () => providers.moderation(), lane: "bulk" }).createModeration },
      responsesProvider: () => providers.responses(),
    });
    const unavailable = (endpoint: Endpoint): string | null => {
      if ((endpoint === "/v1/responses" || endpoint === "/v1/chat/completions") && !providers.has("responses"))
        return `Batches for ${endpoint} need a model provider: set providers.responses.base_url in ATRIUM_CONFIG to an OpenAI-compatible service.`;
      if (endpoint === "/v1/moderations" && !providers.has("moderation"))
        return "Batches for /v1/moderations need a moderation provider: this server has no local one; set providers.moderation.base_url in ATRIUM_CONFIG.";
      if (!calls[endpoint]) return `Batches for ${endpoint} are not available on this server yet.`;
      return null;
    };
    const files = filesApi(deps);
    const batches = new Batches(deps, files, jobs, unavailable);
    // Started on a batch's first chunk, not before.
    const workers = settings.workers > 0 ? new BatchWorkers(deps, settings.workers, responsesOptions) : null;
    return {
      services: [{ desc: BatchesService, impl: createBatchesService(batches) }],
      jobs: {
        [BATCHES_RUN_JOB]: runJob({
          storage: { records: deps.records, clock: deps.clock, files },
          settings: { concurrency: settings.concurrency, sliceLines: settings.slice_lines, sliceMs: settings.slice_ms, sliceBytes: settings.slice_bytes, sliceIntervalMs: settings.slice_interval_ms, calls, workers },
        }),
      },
      stop: async () => {
        await workers?.close();
      },
    };
  },
};

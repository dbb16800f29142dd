// The vector stores area (spec 4.3, 4.4): stores, files, file batches and search, with ingestion as
// durable jobs. It owns the search index (tables in the record store's SQLite file) and asks the
// embeddings provider (the local sentence encoder, or an upstream) for vectors.
import { VectorStoresService } from "../../../gen/atrium/v1/vector_stores_pb.js";
import { Ingester } from "../../engines/ingest/index.js";
import { SEARCH_MIGRATION } from "../../engines/search/index.js";
import { searchIndexFor } from "../../storage/index.js";
import type { TimerData } from "../../jobs/index.js";
import type { ApiArea } from "../area.js";
import { filesApi } from "../files/index.js";
import { denseEnabledFromEnv, denseSource } from "./embedder.js";
import { FileBatches } from "./file-batches.js";
import { createVectorStoresService } from "./handler.js";
import { ingestJob, settleAbandoned, type IngestJobDeps } from "./jobs.js";
import { KIND_NAMES_MIGRATION } from "./records.js";
import { EXPIRY_TIMER_KIND, VECTOR_STORES_INGEST_JOB, VectorStores, type IngestPayload } from "./vector-stores.js";

export const vectorStoresArea: ApiArea = {
  name: "vector_stores",
  // The search index's tables live in the record store's SQLite file; KIND_NAMES_MIGRATION keeps
  // queued work of a data directory that used the earlier job and timer kinds.
  migrations: [SEARCH_MIGRATION, KIND_NAMES_MIGRATION],
  setup: ({ deps, providers, jobs, limits }) => {
    const index = searchIndexFor(deps.records);
    const ingester = new Ingester(); // its worker starts with the first file
    const dense = denseSource(providers, denseEnabledFromEnv());
    const vs = new VectorStores(deps, filesApi(deps), index, jobs, dense, ingester);
    const ingestDeps: IngestJobDeps = { vectorStores: vs, index, ingester, jobs, dense };
    return {
      services: [{ desc: VectorStoresService, impl: createVectorStoresService(vs, new FileBatches(deps, vs, jobs, index), limits) }],
      // Deleting a File (or its expiry) detaches it from every store.
      onFileDeleted: (scope, fileId) => vs.onFileDeleted(scope, fileId),
      jobs: {
        [VECTOR_STORES_INGEST_JOB]: {
          ...ingestJob(ingestDeps),
          // A job the runner gave up on (its process kept dying) must not leave its file in progress.
          settle: async (job) => {
            if (job.state !== "succeeded") await settleAbandoned(ingestDeps, job.scope, job.payload as IngestPayload, job.lastError);
          },
        },
      },
      expiry: { [EXPIRY_TIMER_KIND]: (scope, rec) => vs.onExpiryTimer(scope, (rec.data as TimerData).targetId) },
      stop: async () => {
        await ingester.close();
        await index.close();
      },
    };
  },
};

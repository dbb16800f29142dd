// The Responses area: token counting (POST /v1/responses/input_tokens, spec 4.1).
import { availableParallelism } from "node:os";
import { ResponsesService } from "../../../gen/atrium/v1/responses_pb.js";
import type { ApiArea } from "../area.js";
import { createResponsesService, storageLookups } from "./handler.js";
import { CountingWorkers } from "./workers.js";

// What batches run on: the service over this process's storage or over lookups a worker thread asks for.
export { createResponsesService, responsesServiceWith, storageLookups, type ResponsesOptions } from "./handler.js";
export { countingHost, type CountingLookups, type HostFileReply } from "./counting.js";

export const responsesArea: ApiArea = {
  name: "responses",
  setup: ({ deps, config }) => {
    // One core stays with the event loop; the workers start on the first large count.
    const workers = new CountingWorkers(storageLookups(deps), Math.max(1, Math.min(4, availableParallelism() - 1)));
    return {
      services: [
        {
          desc: ResponsesService,
          impl: createResponsesService(deps, { fetch: { timeoutMs: config.fetchTimeoutMs, allowPrivate: config.fetchAllowPrivate }, workers }),
        },
      ],
      stop: () => workers.close(),
    };
  },
};

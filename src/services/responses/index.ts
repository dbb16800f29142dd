// The Responses area: token counting (POST /v1/responses/input_tokens, spec 4.1).
import { ResponsesService } from "../../../gen/atrium/v1/responses_pb.js";
import type { ApiArea } from "../area.js";
import { createResponsesService, storageLookups } from "./handler.js";
import { COUNTING_WORKERS, CountingWorkers } from "./workers.js";

// What batches run on: the service over this process's storage or over lookups a worker thread asks for.
export { createResponsesService, responsesServiceWith, storageLookups, type ResponsesOptions } from "./handler.js";
export { countingHost, type CountingLookups, type HostFileReply } from "./counting.js";

export const responsesArea: ApiArea = {
  name: "responses",
  setup: ({ deps, config }) => {
    const workers = new CountingWorkers(storageLookups(deps), COUNTING_WORKERS);
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

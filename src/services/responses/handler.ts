// ResponsesService: POST /v1/responses/input_tokens (spec 4.1). The counting itself is the
// tokenizer engine's (src/engines/tokenizer); this handler turns the typed request back into the
// response API's JSON, resolves file ids in the caller's project, sends large bodies to a counting
// worker (workers.ts) and maps engine errors onto the one error model.
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { ResponsesService, type CountInputTokensRequest } from "../../../gen/atrium/v1/responses_pb.js";
import { scopeOf } from "../../auth/principal.js";
import { InputTokensError } from "../../engines/tokenizer/index.js";
import { fetchUrl, type FetchPolicy } from "../../common/fetch-url.js";
import { capChars, capItems, MAX_ID_CHARS } from "../../common/caps.js";
import { ApiError, missingParam } from "../../common/errors.js";
import type { ServiceDeps } from "../deps.js";
import { filesApi } from "../files/index.js";
import { fineTunedModels, modelNotFound } from "../models/index.js";
import { countBody, MAX_INPUT_FILE_BYTES, type CountingLookups } from "./counting.js";
import { countingPlace, type CountingWorkers } from "./workers.js";

/** The typed request as the response API's JSON body (only the fields that were given). */
function requestJson(req: CountInputTokensRequest): Record<string, unknown> {
  const v = (x: any) => (x === undefined ? undefined : toJson(ValueSchema, x));
  const body: Record<string, unknown> = {
    model: req.model,
    input: v(req.input),
    instructions: req.instructions,
    tools: req.tools.length ? req.tools.map(v) : undefined,
    tool_choice: v(req.toolChoice),
    text: v(req.text),
    reasoning: v(req.reasoning),
    truncation: req.truncation,
    conversation: v(req.conversation),
    previous_response_id: req.previousResponseId,
    parallel_tool_calls: req.parallelToolCalls,
  };
  for (const k of Object.keys(body)) if (body[k] === undefined) delete body[k];
  return body;
}

/** The platform's caps on a response request: a string input or instructions of 10,485,760 characters, 128 tools. */
export const MAX_TEXT_CHARS = 10_485_760;
export const MAX_TOOLS = 128;

function checkCaps(req: CountInputTokensRequest) {
  capChars(req.model, "model", MAX_ID_CHARS);
  capChars(req.instructions, "instructions", MAX_TEXT_CHARS);
  capItems(req.tools, "tools", MAX_TOOLS);
  if (req.input?.kind.case === "stringValue") capChars(req.input.kind.value, "input", MAX_TEXT_CHARS);
}

export interface ResponsesOptions {
  /** How image_url / file_url are fetched (timeout, size cap, private addresses). */
  fetch?: Partial<FetchPolicy>;
  /** What fetches them (default fetchUrl); a batch worker counting ahead of validation fetches nothing. */
  fetchUrl?: typeof fetchUrl;
  /** Where large counts run (default: this thread). */
  workers?: CountingWorkers;
}

/** The lookups on this process's storage. */
export function storageLookups(deps: ServiceDeps): CountingLookups {
  const files = filesApi(deps);
  const models = fineTunedModels(deps);
  return {
    hasFineTunedModel: (scope, model) => models.has(scope, model),
    // Errors carry param "" so that the engine names the field that held the id
    // (input[0].content[1].file_id), not a bare "file_id".
    async readFile(scope, fileId) {
      let file;
      try {
        file = await files.get(scope, fileId, "file_id");
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) throw new InputTokensError(404, "", e.message, e.errorCode ?? undefined, { cause: e });
        throw e;
      }
      if (file.bytes > MAX_INPUT_FILE_BYTES)
        throw new InputTokensError(413, "", `File ${fileId} is ${file.bytes} bytes; at most ${MAX_INPUT_FILE_BYTES} can be counted.`, "file_too_large");
      return { bytes: new Uint8Array(await files.readAll(scope, file, { maxBytes: MAX_INPUT_FILE_BYTES })), filename: file.filename };
    },
  };
}

export function createResponsesService(deps: ServiceDeps, opts: ResponsesOptions = {}): ServiceImpl<typeof ResponsesService> {
  return responsesServiceWith(storageLookups(deps), opts);
}

/**
 * The service over any lookups: this process's storage, or (in a batch worker thread, see
 * src/services/batches/worker.ts) the main thread's, asked through the worker pool.
 */
export function responsesServiceWith(lookups: CountingLookups, opts: ResponsesOptions = {}): ServiceImpl<typeof ResponsesService> {
  const policy: FetchPolicy = { timeoutMs: 10_000, maxBytes: MAX_INPUT_FILE_BYTES, allowPrivate: false, ...opts.fetch };
  const fetcher = opts.fetchUrl ?? fetchUrl;

  return {
    async countInputTokens(req, ctx) {
      const scope = scopeOf(ctx);
      if (req.model === undefined || req.model === "") throw missingParam("model");
      checkCaps(req);
      // A fine-tuned model counts with its base's encoding, but only if this project has it.
      if (req.model.startsWith("ft:") && !(await lookups.hasFineTunedModel(scope, req.model)))
        throw modelNotFound(req.model);
      try {
        const body = requestJson(req);
        const workers = opts.workers;
        const place = workers ? countingPlace(body) : "here";
        const inputTokens =
          place === "worker"
            ? await workers!.count({ body, scope, policy }, ctx.signal)
            : await countBody(body, scope, lookups, policy, fetcher, place === "long-texts" ? (encoding, text) => workers!.countText(encoding, text, ctx.signal) : undefined);
        return { object: "response.input_tokens", inputTokens: BigInt(inputTokens) };
      } catch (e) {
        if (e instanceof InputTokensError) throw new ApiError(e.status, e.message, { param: e.param || null, code: e.code ?? null, cause: e });
        throw e;
      }
    },
  };
}

// ResponsesService: POST /v1/responses/input_tokens (spec 4.1). The counting itself is the
// tokenizer engine's (src/engines/tokenizer); this handler turns the typed request back into the
// response API's JSON, resolves file ids in the caller's project, and maps engine errors onto the
// one error model.
import { toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { ResponsesService, type CountInputTokensRequest } from "../../../gen/atrium/v1/responses_pb.js";
import { scopeOf } from "../../auth/principal.js";
import { countInputTokens, defaultFetchImage, InputTokensError } from "../../engines/tokenizer/index.js";
import type { Scope } from "../../storage/types.js";
import { ApiError, missingParam } from "../../transport/errors.js";
import type { ServiceDeps } from "../deps.js";
import { Files } from "../files/files.js";
import { FINE_TUNED_MODEL_KIND } from "../models/handler.js";

/** Largest file or image the counter reads into memory (the platform's per-file input limit). */
export const MAX_INPUT_FILE_BYTES = 50 * 1024 * 1024;

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

export function createResponsesService(deps: ServiceDeps): ServiceImpl<typeof ResponsesService> {
  const files = new Files(deps);

  async function readFile(scope: Scope, fileId: string) {
    const rec = (await files.get(scope, fileId, "file_id")).data;
    if (rec.bytes > MAX_INPUT_FILE_BYTES)
      throw new ApiError(413, `File ${fileId} is ${rec.bytes} bytes; at most ${MAX_INPUT_FILE_BYTES} can be counted.`, { param: "file_id", code: "file_too_large" });
    const chunks: Buffer[] = [];
    for await (const c of deps.blobs.get(rec.id)) chunks.push(c as Buffer);
    return { bytes: new Uint8Array(Buffer.concat(chunks)), filename: rec.filename };
  }

  return {
    async countInputTokens(req, ctx) {
      const scope = scopeOf(ctx);
      if (req.model === undefined || req.model === "") throw missingParam("model");
      // A fine-tuned model counts with its base's encoding, but only if this project has it.
      if (req.model.startsWith("ft:") && !(await deps.records.collection(FINE_TUNED_MODEL_KIND).get(scope, req.model)))
        throw new ApiError(404, `The model '${req.model}' does not exist or you do not have access to it.`, { param: "model", code: "model_not_found" });
      try {
        const result = await countInputTokens(
          requestJson(req),
          {
            fetchImage: (url) => defaultFetchImage(url, { maxBytes: MAX_INPUT_FILE_BYTES }),
            readFile: (id) => readFile(scope, id),
          },
          { maxImageBytes: MAX_INPUT_FILE_BYTES, maxFileBytes: MAX_INPUT_FILE_BYTES },
        );
        return { object: "response.input_tokens", inputTokens: BigInt(result.input_tokens) };
      } catch (e) {
        if (e instanceof InputTokensError) throw new ApiError(e.status, e.message, { param: e.param || null, code: e.code ?? null, cause: e });
        throw e;
      }
    },
  };
}

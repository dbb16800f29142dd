// ModerationsService: POST /v1/moderations (spec 4.8). The request is checked here whichever
// provider answers it (every problem a 400 naming its field); the local engine or the configured
// upstream classifies; the answer becomes spec 2.9's shape (maps keyed by the category names as
// the platform spells them; `categories` values may be null, hence google.protobuf.Value).
import { create, toJson, type MessageInitShape } from "@bufbuild/protobuf";
import { ListValueSchema, ValueSchema, type ListValue, type Value } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { capChars, MAX_ID_CHARS } from "../../common/caps.js";
import { ModerationsService, type CreateModerationResponseSchema, type ModerationResultSchema } from "../../../gen/atrium/v1/moderations_pb.js";
import { principalKey } from "../../auth/principal.js";
import { ApiError, engineOverloaded } from "../../common/errors.js";
import type { Json } from "../../common/json.js";
import { LocalEmbeddingsTimeout } from "../../engines/embeddings/index.js";
import { LocalModerationTimeout, ModerationInputError, parseModel, parseModerationInput } from "../../engines/moderation/index.js";
import { EngineBusyError, PoolClosedError, WorkerCrashedError } from "../../engines/pool/index.js";
import { ProviderUnavailable } from "../../providers/registry.js";
import type { ModerationInput, ModerationProvider, ModerationResponse, ModerationResult, WorkLane } from "../../providers/types.js";
import { UpstreamError } from "../../providers/upstream.js";
import { builtinModel, modelNotFound } from "../models/index.js";

export interface ModerationsServiceOptions {
  /** The provider serving the request (local or upstream), asked for per call. */
  provider: () => ModerationProvider;
  /** The local engines' lane for these calls: "interactive" (default) for API callers, "bulk" for batches. */
  lane?: WorkLane;
}


export function createModerationsService(opts: ModerationsServiceOptions): ServiceImpl<typeof ModerationsService> {
  return {
    async createModeration(req, ctx) {
      const input = req.input === undefined ? undefined : (toJson(ValueSchema, req.input) as Json);
      let res: ModerationResponse;
      capChars(req.model, "model", MAX_ID_CHARS);
      try {
        const model = parseModel(req.model);
        parseModerationInput(input, model);
        const project = ctx.values.get(principalKey)?.projectId;
        res = await opts.provider().moderate(input as ModerationInput, { model, signal: ctx.signal, lane: opts.lane ?? "interactive", project });
      } catch (e) {
        throw asApiError(e, req.model);
      }
      return responseMessage(res);
    },
  };
}

function responseMessage(res: ModerationResponse): MessageInitShape<typeof CreateModerationResponseSchema> {
  return { id: res.id, model: res.model, results: res.results.map(resultMessage) };
}

function resultMessage(r: ModerationResult): MessageInitShape<typeof ModerationResultSchema> {
  const categories: Record<string, Value> = {};
  const scores: Record<string, number> = {};
  const applied: Record<string, ListValue> = {};
  for (const [name, flag] of Object.entries(r.categories ?? {}))
    categories[name] = create(ValueSchema, { kind: typeof flag === "boolean" ? { case: "boolValue", value: flag } : { case: "nullValue", value: 0 } });
  for (const [name, score] of Object.entries(r.category_scores ?? {})) scores[name] = typeof score === "number" ? score : 0;
  for (const [name, types] of Object.entries(r.category_applied_input_types ?? {}))
    applied[name] = create(ListValueSchema, {
      values: (Array.isArray(types) ? types : []).map((t) => create(ValueSchema, { kind: { case: "stringValue", value: String(t) } })),
    });
  return { flagged: r.flagged, categories, categoryScores: scores, categoryAppliedInputTypes: applied };
}

function asApiError(e: unknown, model?: string): unknown {
  if (e instanceof ApiError) return e;
  if (e instanceof ModerationInputError) {
    if (e.code === "model_not_found") {
      // A model this server knows that does not moderate is the caller's mistake; an unknown one is not found.
      if (model !== undefined && (builtinModel(model) || model.startsWith("ft:"))) return new ApiError(400, e.message, { param: "model", code: "model_not_supported", cause: e });
      return modelNotFound(`${model}`, "model", e);
    }
    return new ApiError(400, e.message, { param: e.param, code: e.code, cause: e });
  }
  if (e instanceof ProviderUnavailable) return new ApiError(400, e.message, { param: "model", code: "model_not_available", cause: e });
  if (e instanceof EngineBusyError) return engineOverloaded(e.message, e.retryAfterMs, e);
  if (e instanceof LocalModerationTimeout || e instanceof LocalEmbeddingsTimeout)
    return new ApiError(503, `${e.message} Retry later or send less input.`, { code: "engine_timeout", cause: e });
  if (e instanceof WorkerCrashedError)
    return new ApiError(500, "The local moderation classifier stopped while working on this request; it has been restarted. Please retry.", { code: "engine_crashed", cause: e });
  if (e instanceof PoolClosedError) return new ApiError(503, "The server is shutting down.", { code: "shutting_down", cause: e });
  if (e instanceof UpstreamError) {
    // The upstream's 401/403 are about this server's key, not the caller's.
    if (e.status === 401 || e.status === 403)
      return new ApiError(502, `The upstream moderation provider refused this server's credentials: ${e.message}`, { code: "upstream_auth_failed", cause: e });
    if (e.status >= 400 && e.status < 500) return new ApiError(e.status, e.message, { param: e.param, code: e.code, cause: e });
    return new ApiError(e.status === 504 ? 504 : 502, e.message, { code: e.code ?? "upstream_error", cause: e });
  }
  return e;
}

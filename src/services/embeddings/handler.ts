// EmbeddingsService: POST /v1/embeddings (beyond the spec, in the platform's shape). The local
// sentence encoder answers `atrium-embed-use-lite`; the platform's embedding models go to the
// upstream provider when one is configured and are a 400 otherwise: a real model's name is never
// answered with local vectors. The checks are input.ts's; the vectors come back as JSON numbers or
// as base64 of little-endian float32, the two forms the official SDKs read.
import { create, toJson, type MessageInitShape } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";
import type { ServiceImpl } from "@connectrpc/connect";
import { endianness } from "node:os";
import { capChars, MAX_ID_CHARS } from "../../common/caps.js";
import { EmbeddingsService, type CreateEmbeddingResponseSchema } from "../../../gen/atrium/v1/embeddings_pb.js";
import { principalKey } from "../../auth/principal.js";
import { ApiError, engineOverloaded, invalidParam, missingParam } from "../../common/errors.js";
import { LOCAL_EMBEDDING_MODEL, LOCAL_MODEL_DIMENSIONS, LocalEmbeddingsError, LocalEmbeddingsTimeout } from "../../engines/embeddings/index.js";
import { EngineBusyError, PoolClosedError, WorkerCrashedError } from "../../engines/pool/index.js";
import { ProviderUnavailable } from "../../providers/registry.js";
import type { EmbeddingsProvider, WorkLane } from "../../providers/types.js";
import { UpstreamError } from "../../providers/upstream.js";
import { builtinModel, modelNotFound } from "../models/index.js";
import { parseEncodingFormat, parseInput, type EncodingFormat } from "./input.js";

/** The platform's embedding models: the most dimensions each gives (null: `dimensions` not supported). */
const PLATFORM_MODELS: Readonly<Record<string, number | null>> = {
  "text-embedding-3-small": 1536,
  "text-embedding-3-large": 3072,
  "text-embedding-ada-002": null,
};

export interface EmbeddingsServiceOptions {
  /** Serves the local models (LOCAL_MODEL_DIMENSIONS' keys). */
  local: EmbeddingsProvider;
  /** The upstream for the platform's models, or undefined when none is configured (asked per call). */
  upstream: () => EmbeddingsProvider | undefined;
  /** The local engine's lane for these calls: "interactive" (default) for API callers, "bulk" for batches. */
  lane?: WorkLane;
}

type Route = { provider: EmbeddingsProvider; maxDimensions: number | null };

export function createEmbeddingsService(opts: EmbeddingsServiceOptions): ServiceImpl<typeof EmbeddingsService> {
  function route(model: string): Route {
    if (Object.hasOwn(LOCAL_MODEL_DIMENSIONS, model)) return { provider: opts.local, maxDimensions: LOCAL_MODEL_DIMENSIONS[model]! };
    if (Object.hasOwn(PLATFORM_MODELS, model)) {
      let upstream: EmbeddingsProvider | undefined;
      try {
        upstream = opts.upstream();
      } catch (e) {
        throw asApiError(e);
      }
      if (!upstream)
        throw new ApiError(
          400,
          `The model '${model}' is not served here: configure providers.embeddings in ATRIUM_CONFIG with the base_url of an ` +
            `OpenAI-compatible service to forward it there, or use the local model '${LOCAL_EMBEDDING_MODEL}'.`,
          { param: "model", code: "model_not_available" },
        );
      return { provider: upstream, maxDimensions: PLATFORM_MODELS[model]! };
    }
    if (builtinModel(model) || model.startsWith("ft:"))
      throw invalidParam("model", `The model '${model}' does not create embeddings; use an embedding model such as '${LOCAL_EMBEDDING_MODEL}'.`, "model_not_supported");
    throw modelNotFound(model);
  }

  return {
    async createEmbedding(req, ctx) {
      const input = req.input === undefined ? undefined : (toJson(ValueSchema, req.input) as Parameters<typeof parseInput>[0]);
      if (input === undefined) throw missingParam("input");
      if (req.model === undefined || req.model === "") throw missingParam("model");
      capChars(req.model, "model", MAX_ID_CHARS);
      capChars(req.user, "user", MAX_ID_CHARS);
      const format = parseEncodingFormat(req.encodingFormat);
      const { provider, maxDimensions } = route(req.model);
      checkDimensions(req.model, req.dimensions, maxDimensions);
      const { texts, tokens } = await parseInput(input);

      let result;
      try {
        const project = ctx.values.get(principalKey)?.projectId;
        result = await provider.embed(texts, { model: req.model, dimensions: req.dimensions, signal: ctx.signal, lane: opts.lane ?? "interactive", project });
      } catch (e) {
        throw asApiError(e);
      }
      // Usage as the platform counts it: the ids given, or the text in cl100k_base. An upstream's own count wins.
      const counted = tokens.reduce((a, b) => a + b, 0);
      const usage = provider.local || !result.usage.promptTokens ? { promptTokens: counted, totalTokens: counted } : result.usage;
      const embeddings = await renderAll(result.vectors, format);
      const response: MessageInitShape<typeof CreateEmbeddingResponseSchema> = {
        object: "list",
        data: embeddings.map((embedding, index) => ({ object: "embedding", index, embedding })),
        model: result.model,
        usage: { promptTokens: BigInt(usage.promptTokens), totalTokens: BigInt(usage.totalTokens) },
      };
      return response;
    },
  };
}

function checkDimensions(model: string, dimensions: number | undefined, max: number | null): void {
  if (dimensions === undefined) return;
  if (max === null) throw invalidParam("dimensions", `The model '${model}' does not support specifying dimensions.`, "dimensions_not_supported");
  if (dimensions < 1 || dimensions > max)
    throw invalidParam("dimensions", `Invalid 'dimensions': '${model}' gives 1 to ${max} dimensions, but ${dimensions} were asked for.`);
}

const littleEndian = endianness() === "LE";

/** Vectors rendered per turn of the event loop: 2048 vectors as numbers take ~0.5 s in all. */
const RENDER_SLICE = 16;

async function renderAll(vectors: Array<Float32Array | number[]>, format: EncodingFormat): Promise<Value[]> {
  const out = new Array<Value>(vectors.length);
  for (let i = 0; i < vectors.length; i++) {
    out[i] = render(vectors[i]!, format);
    if (format === "float" && i % RENDER_SLICE === RENDER_SLICE - 1) await new Promise((r) => setImmediate(r));
  }
  return out;
}

/** One vector as the Value the response carries: numbers, or base64 of little-endian float32. */
function render(vector: Float32Array | number[], format: EncodingFormat): Value {
  const floats = vector instanceof Float32Array ? vector : Float32Array.from(vector);
  if (format === "base64") {
    let bytes = Buffer.from(floats.buffer, floats.byteOffset, floats.byteLength);
    if (!littleEndian) {
      bytes = Buffer.from(bytes); // a copy to swap, not the caller's vector
      bytes.swap32();
    }
    return create(ValueSchema, { kind: { case: "stringValue", value: bytes.toString("base64") } });
  }
  // Built as protobuf-es messages are (plain objects with $typeName): create() per number costs twice as much.
  const values = new Array<Value>(floats.length);
  for (let i = 0; i < floats.length; i++) values[i] = { $typeName: "google.protobuf.Value", kind: { case: "numberValue", value: shortest(floats[i]!) } };
  return create(ValueSchema, { kind: { case: "listValue", value: { values } } });
}

/**
 * A short decimal that reads back as the same float32 (as the platform prints them, e.g.
 * -0.0069292835): about half the JSON of the widened double, and Math.fround(json) is exactly
 * the base64 form's value. Six to nine significant digits always suffice for a float32.
 */
function shortest(x: number): number {
  for (let p = 6; p < 9; p++) {
    const y = Number(x.toPrecision(p));
    if (Math.fround(y) === x) return y;
  }
  return Number(x.toPrecision(9));
}

function asApiError(e: unknown): unknown {
  if (e instanceof ApiError) return e;
  if (e instanceof LocalEmbeddingsError) return invalidParam(e.param, e.message);
  if (e instanceof ProviderUnavailable) return new ApiError(400, e.message, { param: "model", code: "model_not_available" });
  if (e instanceof EngineBusyError) return engineOverloaded(e.message, e.retryAfterMs, e);
  if (e instanceof LocalEmbeddingsTimeout) return new ApiError(503, `${e.message} Retry later or send fewer inputs.`, { code: "engine_timeout", cause: e });
  if (e instanceof WorkerCrashedError)
    return new ApiError(500, "The local sentence encoder stopped while embedding this request; it has been restarted. Please retry.", { code: "engine_crashed", cause: e });
  if (e instanceof PoolClosedError) return new ApiError(503, "The server is shutting down.", { code: "shutting_down", cause: e });
  if (e instanceof UpstreamError) {
    // The upstream's 401/403 are about this server's key, not the caller's.
    if (e.status === 401 || e.status === 403)
      return new ApiError(502, `The upstream embeddings provider refused this server's credentials: ${e.message}`, { code: "upstream_auth_failed", cause: e });
    if (e.status >= 400 && e.status < 500)
      return new ApiError(e.status, e.message, { param: e.param, code: e.code, cause: e });
    return new ApiError(e.status === 504 ? 504 : 502, e.message, { code: e.code ?? "upstream_error", cause: e });
  }
  return e;
}

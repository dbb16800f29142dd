// What one batch request runs. Requests go to this server's own service implementations — the
// same objects the areas build (createEmbeddingsService, createResponsesService), called with a
// context carrying the batch creator's principal, so they act in the creator's project — or, for
// /v1/responses and /v1/chat/completions, to the configured responses provider. Nothing goes
// through HTTP. Each result is the REST status and body the same call would have answered.
import { create, type DescMessage, type DescMethod, type DescService, type JsonValue } from "@bufbuild/protobuf";
import { createContextValues, createHandlerContext, type HandlerContext } from "@connectrpc/connect";
import { EmbeddingsService } from "../../../gen/atrium/v1/embeddings_pb.js";
import { ResponsesService } from "../../../gen/atrium/v1/responses_pb.js";
import { principalKey, type Principal } from "../../auth/principal.js";
import { toRestError } from "../../common/errors.js";
import { ProviderUnavailable } from "../../providers/registry.js";
import type { JsonObject, ResponsesProvider } from "../../providers/types.js";
import { UpstreamError } from "../../providers/upstream.js";
import { fromRestJson, restJsonAcceptsInit, toRestJson } from "../../common/rest-json.js";

export interface Usage {
  input_tokens: number;
  cached_tokens: number;
  output_tokens: number;
  reasoning_tokens: number;
  total_tokens: number;
}

export interface RequestResult {
  status: number;
  body: JsonValue;
  usage: Usage | null;
}

export interface EndpointCall {
  /** A context for calls on behalf of `principal`; one serves many calls (a worker's slice). */
  context(principal: Principal, signal: AbortSignal): HandlerContext;
  call(body: JsonObject, ctx: HandlerContext): Promise<RequestResult>;
}

function contextFor(service: DescService, method: DescMethod, principal: Principal, signal: AbortSignal): HandlerContext {
  return createHandlerContext({
    service,
    method,
    protocolName: "batch",
    requestMethod: "POST",
    url: `/v1/batch/${method.name}`,
    requestSignal: signal,
    contextValues: createContextValues().set(principalKey, principal),
  });
}

export const SUPPORTED_ENDPOINTS = ["/v1/embeddings", "/v1/moderations", "/v1/responses/input_tokens", "/v1/responses", "/v1/chat/completions"] as const;
export type Endpoint = (typeof SUPPORTED_ENDPOINTS)[number];

/**
 * Endpoints whose work is CPU on the calling thread (counting tokens), which a batch runs in its
 * worker threads (worker.ts) when it has them. The others wait on something else (the encoder's
 * own worker pool, an upstream service) and run on the main thread, many at once.
 */
export const THREAD_ENDPOINTS: ReadonlySet<Endpoint> = new Set<Endpoint>(["/v1/responses/input_tokens"]);

export const zeroUsage = (): Usage => ({ input_tokens: 0, cached_tokens: 0, output_tokens: 0, reasoning_tokens: 0, total_tokens: 0 });

function errorResult(e: unknown): RequestResult {
  if (e instanceof UpstreamError) {
    const status = e.status === 401 || e.status === 403 ? 502 : e.status;
    return { status, body: { error: { message: e.message, type: e.type ?? "server_error", param: e.param, code: e.code } }, usage: null };
  }
  if (e instanceof ProviderUnavailable) return { status: 400, body: { error: { message: e.message, type: "invalid_request_error", param: null, code: "provider_unavailable" } }, usage: null };
  const { status, body } = toRestError(e);
  return { status, body: body as unknown as JsonValue, usage: null };
}

/** A unary method of a service implementation, called with the creator's principal. */
function local<I extends DescMessage, O extends DescMessage>(
  service: DescService,
  method: DescMethod & { input: I; output: O },
  impl: (req: any, ctx: HandlerContext) => unknown,
  usageOf: (out: any) => Usage | null,
): EndpointCall {
  const initIsMessage = restJsonAcceptsInit(method.output);
  return {
    context: (principal, signal) => contextFor(service, method, principal, signal),
    async call(body, ctx) {
      try {
        // Decoded and encoded as the REST transcoder does, so a line's body (and a bad field's
        // error) is byte-for-byte what the same call over REST answers.
        const req = create(method.input, fromRestJson(method.input, body) as never);
        const res = (await impl(req, ctx)) as any;
        const out = res.$typeName || initIsMessage ? res : create(method.output, res);
        return { status: 200, body: toRestJson(method.output, out) as JsonValue, usage: usageOf(out) };
      } catch (e) {
        return errorResult(e);
      }
    },
  };
}

function upstreamUsage(u: any): Usage | null {
  if (!u || typeof u !== "object") return null;
  const input = Number(u.input_tokens ?? u.prompt_tokens ?? 0);
  const output = Number(u.output_tokens ?? u.completion_tokens ?? 0);
  return {
    input_tokens: input,
    cached_tokens: Number(u.input_tokens_details?.cached_tokens ?? u.prompt_tokens_details?.cached_tokens ?? 0),
    output_tokens: output,
    reasoning_tokens: Number(u.output_tokens_details?.reasoning_tokens ?? u.completion_tokens_details?.reasoning_tokens ?? 0),
    total_tokens: Number(u.total_tokens ?? input + output),
  };
}

function upstream(send: (p: ResponsesProvider, body: JsonObject, signal: AbortSignal) => Promise<JsonObject>, provider: () => ResponsesProvider): EndpointCall {
  return {
    context: (principal, signal) => contextFor(ResponsesService, ResponsesService.method.countInputTokens, principal, signal),
    async call(body, ctx) {
      try {
        const out = await send(provider(), body, ctx.signal);
        return { status: 200, body: out as JsonValue, usage: upstreamUsage(out.usage) };
      } catch (e) {
        return errorResult(e);
      }
    },
  };
}

/** POST /v1/responses/input_tokens on a ResponsesService implementation. */
export function countInputTokensCall(responses: EndpointDeps["responses"]): EndpointCall {
  // Counting tokens uses no model: no usage.
  return local(ResponsesService, ResponsesService.method.countInputTokens, (r, c) => responses.countInputTokens(r, c), () => null);
}

export interface EndpointDeps {
  embeddings: { createEmbedding: (req: any, ctx: HandlerContext) => unknown };
  responses: { countInputTokens: (req: any, ctx: HandlerContext) => unknown };
  /** The moderation service, when the moderation area exists (see index.ts). */
  moderations?: { service: DescService; method: DescMethod; call: (req: any, ctx: HandlerContext) => unknown };
  responsesProvider: () => ResponsesProvider;
}

export function endpointCalls(deps: EndpointDeps): Partial<Record<Endpoint, EndpointCall>> {
  const calls: Partial<Record<Endpoint, EndpointCall>> = {
    "/v1/embeddings": local(EmbeddingsService, EmbeddingsService.method.createEmbedding, (r, c) => deps.embeddings.createEmbedding(r, c), (out) => {
      const n = Number(out.usage?.promptTokens ?? 0);
      return { ...zeroUsage(), input_tokens: n, total_tokens: n };
    }),
    "/v1/responses/input_tokens": countInputTokensCall(deps.responses),
    "/v1/responses": upstream((p, body, signal) => p.createResponse(body, { signal }), deps.responsesProvider),
    "/v1/chat/completions": upstream((p, body, signal) => p.createChatCompletion(body, { signal }), deps.responsesProvider),
  };
  if (deps.moderations) {
    const m = deps.moderations;
    calls["/v1/moderations"] = local(m.service, m.method as never, m.call, () => null);
  }
  return calls;
}

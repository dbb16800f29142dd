// The upstream side of every provider: one small client for OpenAI-compatible HTTP services
// (another Atrium included), and the capabilities implemented on it. Node's global fetch; JSON
// in and out; one time limit per request; every failure an UpstreamError.
import type { UpstreamProviderConfig } from "../config.js";
import type {
  CallOptions,
  EmbedOptions,
  EmbedResult,
  EmbeddingsProvider,
  JsonObject,
  ModerateOptions,
  ModerationInput,
  ModerationProvider,
  ModerationResponse,
  ResponsesProvider,
  VideoProvider,
  VideoRender,
  VideoRenderRequest,
  VideoVariant,
} from "./types.js";

/**
 * A failed upstream call. `status` is the upstream's HTTP status, or 502 (unreachable, or an
 * answer that is not the expected JSON) / 504 (no answer in time). When the upstream sent the
 * platform's error body, message, type, param and code are its own. The upstream's 401/403 are
 * about this server's key, not the caller's: services should not pass those statuses through.
 */
export class UpstreamError extends Error {
  override readonly name = "UpstreamError";
  readonly status: number;
  readonly code: string | null;
  readonly type: string | null;
  readonly param: string | null;

  constructor(status: number, message: string, code: string | null = null, opts: { type?: string | null; param?: string | null; cause?: unknown } = {}) {
    super(message, { cause: opts.cause });
    this.status = status;
    this.code = code;
    this.type = opts.type ?? null;
    this.param = opts.param ?? null;
  }
}

export type UpstreamEndpoint = Pick<UpstreamProviderConfig, "baseUrl" | "apiKey" | "timeoutMs">;

/** Error bodies are short; this bounds what is quoted from one that is not the platform's. */
const QUOTED_BODY_CHARS = 200;

export class UpstreamClient {
  readonly baseUrl: string;

  constructor(
    private readonly endpoint: UpstreamEndpoint,
    private readonly fetchImpl: typeof fetch = globalThis.fetch,
  ) {
    this.baseUrl = endpoint.baseUrl.replace(/\/+$/, "");
  }

  postJson<T>(path: string, body: unknown, opts: CallOptions = {}): Promise<T> {
    return this.json<T>("POST", path, body, opts);
  }

  getJson<T>(path: string, opts: CallOptions = {}): Promise<T> {
    return this.json<T>("GET", path, undefined, opts);
  }

  /** GET raw bytes. The time limit covers the wait for the headers; the caller's signal, the whole stream. */
  async getStream(path: string, opts: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const call = this.start("GET", path, undefined, opts);
    try {
      const res = await call.response;
      if (!res.body) throw new UpstreamError(502, `${call.label} answered with no body`, "upstream_invalid_response");
      return res.body;
    } finally {
      call.stopTimer();
    }
  }

  private async json<T>(method: string, path: string, body: unknown, opts: CallOptions): Promise<T> {
    const call = this.start(method, path, body, opts);
    try {
      const res = await call.response;
      const text = await res.text().catch((e) => {
        throw call.failure(e);
      });
      try {
        return JSON.parse(text) as T;
      } catch {
        throw new UpstreamError(502, `${call.label} answered ${res.status} with a body that is not JSON`, "upstream_invalid_response");
      }
    } finally {
      call.stopTimer();
    }
  }

  /** Sends the request; `response` resolves to a 2xx Response or rejects with an UpstreamError. */
  private start(method: string, path: string, body: unknown, opts: CallOptions) {
    const url = this.baseUrl + path;
    // Never echo credentials a URL might carry.
    const label = `upstream ${method} ${redact(url)}`;
    const timeoutMs = this.endpoint.timeoutMs;
    // A timer rather than AbortSignal.timeout: getStream() must stop it once the headers are in.
    const timer = new AbortController();
    const handle = setTimeout(() => timer.abort(), timeoutMs);
    const signal = opts.signal ? AbortSignal.any([timer.signal, opts.signal]) : timer.signal;

    const failure = (e: unknown): unknown => {
      if (e instanceof UpstreamError) return e;
      if (opts.signal?.aborted) return opts.signal.reason ?? e; // the caller gave up: not the upstream's fault
      if (timer.signal.aborted) return new UpstreamError(504, `${label} did not answer within ${timeoutMs} ms`, "upstream_timeout", { cause: e });
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (e as Error).message;
      return new UpstreamError(502, `${label} failed: cannot reach the upstream (${why})`, "upstream_unreachable", { cause: e });
    };

    const headers: Record<string, string> = { accept: "application/json" };
    if (this.endpoint.apiKey) headers.authorization = `Bearer ${this.endpoint.apiKey}`;
    if (body !== undefined) headers["content-type"] = "application/json";

    const response = (async () => {
      let res: Response;
      try {
        res = await this.fetchImpl(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal, redirect: "error" });
      } catch (e) {
        throw failure(e);
      }
      if (res.ok) return res;
      const text = await res.text().catch((e) => {
        throw failure(e);
      });
      throw errorFromBody(label, res.status, text);
    })();
    return { label, response, failure, stopTimer: () => clearTimeout(handle) };
  }
}

/** The platform's error body becomes the same fields; anything else is quoted briefly. */
function errorFromBody(label: string, status: number, text: string): UpstreamError {
  try {
    const err = (JSON.parse(text) as { error?: unknown }).error;
    if (err && typeof err === "object" && typeof (err as { message?: unknown }).message === "string") {
      const e = err as { message: string; type?: unknown; param?: unknown; code?: unknown };
      return new UpstreamError(status, e.message, stringOrNull(e.code), { type: stringOrNull(e.type), param: stringOrNull(e.param) });
    }
  } catch {
    // not JSON: quoted below
  }
  const quoted = text.length > QUOTED_BODY_CHARS ? `${text.slice(0, QUOTED_BODY_CHARS)}...` : text;
  return new UpstreamError(status, `${label} answered ${status}${quoted ? `: ${quoted}` : ""}`);
}

function stringOrNull(v: unknown): string | null {
  return typeof v === "string" ? v : null;
}

function redact(url: string): string {
  const u = new URL(url);
  u.username = "";
  u.password = "";
  u.search = "";
  return u.toString();
}

function invalid(what: string): UpstreamError {
  return new UpstreamError(502, `the upstream's answer is not ${what}`, "upstream_invalid_response");
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

// ---- capabilities ----

interface EmbeddingsBody {
  data?: Array<{ index?: number; embedding?: number[] | string }>;
  model?: string;
  usage?: { prompt_tokens?: number; total_tokens?: number };
}

/** POST {base}/embeddings. With `dimensions` configured, asks for it whenever the caller does not. */
export class UpstreamEmbeddings implements EmbeddingsProvider {
  readonly local = false;
  readonly id: string;

  constructor(
    private readonly client: UpstreamClient,
    readonly dimensions: number | undefined = undefined,
  ) {
    this.id = `upstream:${client.baseUrl}`;
  }

  async embed(inputs: string[], opts: EmbedOptions): Promise<EmbedResult> {
    const dimensions = opts.dimensions ?? this.dimensions;
    const body = { input: inputs, model: opts.model, encoding_format: "float", ...(dimensions !== undefined && { dimensions }) };
    const res = await this.client.postJson<EmbeddingsBody | null>("/embeddings", body, { signal: opts.signal });
    if (typeof res !== "object" || res === null || !Array.isArray(res.data) || res.data.length !== inputs.length)
      throw invalid(`a list of ${inputs.length} embeddings`);
    const vectors: Float32Array[] = new Array(inputs.length);
    for (const [i, item] of res.data.entries()) {
      const at = typeof item?.index === "number" ? item.index : i;
      if (at < 0 || at >= inputs.length || vectors[at]) throw invalid("one embedding per input");
      vectors[at] = toVector(item.embedding);
    }
    return {
      vectors,
      model: typeof res.model === "string" ? res.model : opts.model,
      usage: { promptTokens: count(res.usage?.prompt_tokens), totalTokens: count(res.usage?.total_tokens) },
    };
  }
}

function count(v: unknown): number {
  return typeof v === "number" && Number.isFinite(v) ? v : 0;
}

/** A float array, or base64 of little-endian float32 (what some servers send whatever was asked). */
function toVector(embedding: unknown): Float32Array {
  if (Array.isArray(embedding)) return Float32Array.from(embedding as number[]);
  if (typeof embedding === "string") {
    const bytes = Buffer.from(embedding, "base64");
    if (bytes.length % 4 === 0) return new Float32Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length));
  }
  throw invalid("an embedding vector");
}

/** POST {base}/moderations; the answer is spec 2.9's response. */
export class UpstreamModeration implements ModerationProvider {
  readonly local = false;
  readonly id: string;

  constructor(private readonly client: UpstreamClient) {
    this.id = `upstream:${client.baseUrl}`;
  }

  async moderate(input: ModerationInput, opts: ModerateOptions): Promise<ModerationResponse> {
    const res = await this.client.postJson<ModerationResponse>("/moderations", { input, model: opts.model }, { signal: opts.signal });
    if (!isObject(res) || !Array.isArray(res.results) || !res.results.every((r) => isObject(r) && typeof r.flagged === "boolean"))
      throw invalid("a moderation response");
    return res;
  }
}

/** POST {base}/responses and {base}/chat/completions, bodies passed through. */
export class UpstreamResponses implements ResponsesProvider {
  readonly local = false;
  readonly id: string;

  constructor(private readonly client: UpstreamClient) {
    this.id = `upstream:${client.baseUrl}`;
  }

  createResponse(body: JsonObject, opts: CallOptions = {}): Promise<JsonObject> {
    return this.call("/responses", body, opts);
  }

  createChatCompletion(body: JsonObject, opts: CallOptions = {}): Promise<JsonObject> {
    return this.call("/chat/completions", body, opts);
  }

  private async call(path: string, body: JsonObject, opts: CallOptions): Promise<JsonObject> {
    // A streamed answer is server-sent events, not one JSON document.
    if (body.stream === true) throw new TypeError(`${path}: this client does not stream; send stream: false`);
    const res = await this.client.postJson<unknown>(path, body, opts);
    if (!isObject(res)) throw invalid("a JSON object");
    return res;
  }
}

/**
 * Renders on an OpenAI-compatible /videos API: POST {base}/videos (or /videos/{id}/remix,
 * /videos/edits, /videos/extensions for a source the upstream rendered), GET {base}/videos/{id},
 * GET {base}/videos/{id}/content?variant=. Local-only fields (seed, clips) are not sent.
 */
export class UpstreamVideo implements VideoProvider {
  readonly local = false;
  readonly id: string;

  constructor(private readonly client: UpstreamClient) {
    this.id = `upstream:${client.baseUrl}`;
  }

  async createRender(req: VideoRenderRequest, opts: CallOptions = {}): Promise<VideoRender> {
    const { prompt, model, seconds, size, input_reference, source } = req;
    if (!source) return toRender(await this.client.postJson<unknown>("/videos", { prompt, model, seconds, size, input_reference }, opts));
    if (!source.renderId)
      throw new UpstreamError(400, `the source video was not rendered by this upstream, so it cannot ${source.kind} it`, "source_not_upstream");
    const video = { id: source.renderId };
    if (source.kind === "remix") return toRender(await this.client.postJson<unknown>(`/videos/${encodeURIComponent(source.renderId)}/remix`, { prompt }, opts));
    if (source.kind === "edit") return toRender(await this.client.postJson<unknown>("/videos/edits", { prompt, video }, opts));
    return toRender(await this.client.postJson<unknown>("/videos/extensions", { prompt, seconds, video }, opts));
  }

  async getRender(id: string, opts: CallOptions = {}): Promise<VideoRender> {
    return toRender(await this.client.getJson<unknown>(`/videos/${encodeURIComponent(id)}`, opts));
  }

  downloadRender(id: string, variant: VideoVariant, opts: CallOptions = {}): Promise<ReadableStream<Uint8Array>> {
    return this.client.getStream(`/videos/${encodeURIComponent(id)}/content?variant=${encodeURIComponent(variant)}`, opts);
  }
}

const RENDER_STATUSES = new Set(["queued", "in_progress", "completed", "failed"]);

function toRender(v: unknown): VideoRender {
  if (!isObject(v) || typeof v.id !== "string" || !RENDER_STATUSES.has(v.status as string)) throw invalid("a video object");
  const error = isObject(v.error) ? { code: String(v.error.code ?? "upstream_error"), message: String(v.error.message ?? "") } : null;
  return { id: v.id, status: v.status as VideoRender["status"], progress: typeof v.progress === "number" ? v.progress : 0, error };
}

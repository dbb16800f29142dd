// One interface per capability that needs a model (docs/architecture.md, principle 6). Each has a local
// implementation, registered by the engine that owns it, and an upstream one calling an
// OpenAI-compatible service (upstream.ts); services ask the registry (registry.ts) and never
// know which they got.

/** The capabilities, as named in the registry (the file's `fine_tuning` is `fineTuning` here). */
export type Capability = "embeddings" | "moderation" | "video" | "fineTuning" | "responses";

/** How urgent a call is for an engine shared by every project: interactive work goes ahead of bulk. */
export type WorkLane = "interactive" | "bulk";

export interface CallOptions {
  /** Aborts the call: the caller's request went away, or its job was cancelled. */
  signal?: AbortSignal;
  /** A request someone waits on ("interactive", the default) or background work such as ingestion ("bulk"). Upstreams ignore it. */
  lane?: WorkLane;
  /** The project the work is for: a shared local engine takes turns between projects. Upstreams ignore it. */
  project?: string;
}

interface ProviderIdentity {
  /** Which implementation this is, for logs and metrics: a local model id, or `upstream:<base_url>`. */
  readonly id: string;
  /** True when served in-process (no network). */
  readonly local: boolean;
}

// ---- embeddings ----

export interface EmbedOptions extends CallOptions {
  model: string;
  /** Output dimensions, for models that can shorten their vectors. */
  dimensions?: number;
}

export interface EmbedResult {
  /** One vector per input, in input order. */
  vectors: Float32Array[] | number[][];
  /** The model that answered, as the provider names it. */
  model: string;
  usage: { promptTokens: number; totalTokens: number };
}

export interface EmbeddingsProvider extends ProviderIdentity {
  /** Length of the vectors when no `dimensions` is asked for; undefined when only the upstream knows. */
  readonly dimensions: number | undefined;
  /** Every model a local provider serves (a store indexed with any of them stays searchable); undefined: only its configured one. */
  readonly models?: readonly string[];
  embed(inputs: string[], opts: EmbedOptions): Promise<EmbedResult>;
}

// ---- moderation (spec 2.9, 4.8) ----

export type ModerationInputPart = { type: "text"; text: string } | { type: "image_url"; image_url: { url: string } };
export type ModerationInput = string | string[] | ModerationInputPart[];

/** One result of spec 2.9. Keyed by the 13 category names (harassment, hate/threatening, ...). */
export interface ModerationResult {
  flagged: boolean;
  /** illicit and illicit/violent may be null. */
  categories: Record<string, boolean | null>;
  category_scores: Record<string, number>;
  category_applied_input_types: Record<string, Array<"text" | "image">>;
}

/** The moderation response of spec 2.9, as /v1/moderations returns it. */
export interface ModerationResponse {
  id: string;
  model: string;
  results: ModerationResult[];
}

export interface ModerateOptions extends CallOptions {
  model: string;
}

export interface ModerationProvider extends ProviderIdentity {
  moderate(input: ModerationInput, opts: ModerateOptions): Promise<ModerationResponse>;
}

// ---- video (spec 4.9, 2.10) ----

/** What a render needs (spec 4.9's POST /videos, remix, edits, extensions). A file_id reference is
 * resolved by the video service into a data URL before it reaches a provider. */
export interface VideoRenderRequest {
  prompt: string;
  model: string;
  /** The clip's length as the spec writes it ("4", "8", "12"); for an extension, the new segment's. */
  seconds: string;
  size: string;
  input_reference?: { image_url: string };
  /** A remix, edit or extension of an earlier render. */
  source?: {
    kind: "remix" | "edit" | "extension";
    /** The provider's own id of the source render, when this provider made it (upstream). */
    renderId?: string;
    /** The source's MP4, for renderers on this machine. */
    video?: () => AsyncIterable<Uint8Array>;
  };
  /** Characters the prompt names, with their reference clips (renderers on this machine). */
  characters?: Array<{ id: string; name: string; video: () => AsyncIterable<Uint8Array> }>;
  /** Same prompt and seed, same frames (the local renderer; upstreams ignore it). */
  seed?: number;
}

/** A render's state as the provider reports it (the Video object's moving parts, spec 2.10). */
export interface VideoRender {
  /** The provider's own id for the render (not the Atrium video id). */
  id: string;
  status: "queued" | "in_progress" | "completed" | "failed";
  progress: number;
  error: { code: string; message: string } | null;
}

export type VideoVariant = "video" | "thumbnail" | "spritesheet";

export interface VideoProvider extends ProviderIdentity {
  createRender(req: VideoRenderRequest, opts?: CallOptions): Promise<VideoRender>;
  getRender(id: string, opts?: CallOptions): Promise<VideoRender>;
  /** The asset's bytes, streamed (a render can be large). */
  downloadRender(id: string, variant: VideoVariant, opts?: CallOptions): Promise<ReadableStream<Uint8Array>>;
  /** Optional: resolves at the render's next change (progress or status), so callers need not poll. */
  waitRender?(id: string, opts?: CallOptions): Promise<VideoRender>;
  /** Optional: frees what the provider keeps of a render (its files) once the caller stored the assets. */
  deleteRender?(id: string, opts?: CallOptions): Promise<void>;
}

// ---- training ----

export interface TrainingRequest {
  /** Base model. */
  model: string;
  /** The JSONL training data; how it reaches the trainer is the trainer's business. */
  trainingFile: string;
  validationFile?: string;
  /** spec 2.11's `method`, as the request gave it. */
  method?: Record<string, unknown>;
  seed: number;
  suffix?: string;
}

export interface TrainingStatus {
  /** The trainer's own id for the run. */
  id: string;
  status: "validating_files" | "queued" | "running" | "succeeded" | "failed" | "cancelled";
  fineTunedModel: string | null;
  trainedTokens: number | null;
  error: { code: string; message: string; param: string | null } | null;
}

export interface TrainerProvider extends ProviderIdentity {
  start(req: TrainingRequest, opts?: CallOptions): Promise<TrainingStatus>;
  poll(id: string, opts?: CallOptions): Promise<TrainingStatus>;
  cancel(id: string, opts?: CallOptions): Promise<TrainingStatus>;
}

// ---- model calls (graders, batches) ----

/** A request or response body of /v1/responses or /v1/chat/completions, passed through as JSON. */
export type JsonObject = Record<string, unknown>;

export interface ResponsesProvider extends ProviderIdentity {
  /** POST /responses; the body must not ask to stream. Returns the upstream's Response object. */
  createResponse(body: JsonObject, opts?: CallOptions): Promise<JsonObject>;
  /** POST /chat/completions; the body must not ask to stream. Returns the upstream's completion. */
  createChatCompletion(body: JsonObject, opts?: CallOptions): Promise<JsonObject>;
}

/** The provider interface of each capability. */
export interface ProviderOf {
  embeddings: EmbeddingsProvider;
  moderation: ModerationProvider;
  video: VideoProvider;
  fineTuning: TrainerProvider;
  responses: ResponsesProvider;
}

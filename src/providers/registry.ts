// Which implementation serves each capability. Built from the normalised `providers` config:
// `kind: upstream` gets the OpenAI-compatible client of upstream.ts; `kind: local` gets what
// the owning engine registered with registerLocal(). Implementations are created on first use
// (a local model is loaded only when something needs it) and then shared.
//
//   const providers = new Providers(cfg.providers);
//   providers.registerLocal("embeddings", (c) => new LocalSentenceEncoder(c));   // by the engine
//   const vectors = await providers.embeddings().embed(texts, { model });         // by a service
import { DEFAULT_PROVIDER_TIMEOUT_MS } from "../config-schema.js";
import type { EmbeddingsProviderConfig, ModerationProviderConfig, ProviderConfig, ProvidersConfig, UpstreamProviderConfig } from "../config.js";
import type { Capability, ProviderOf } from "./types.js";
import { UpstreamClient, UpstreamEmbeddings, UpstreamModeration, UpstreamResponses, UpstreamVideo } from "./upstream.js";

/** Each capability's normalised settings (responses: `local` when no upstream is configured). */
export interface ConfigOf {
  embeddings: EmbeddingsProviderConfig;
  moderation: ModerationProviderConfig;
  video: ProviderConfig;
  fineTuning: ProviderConfig;
  responses: ProviderConfig;
}

export type LocalFactory<C extends Capability> = (config: Extract<ConfigOf[C], { kind: "local" }>) => ProviderOf[C];
export type UpstreamFactory<C extends Capability> = (config: Extract<ConfigOf[C], { kind: "upstream" }>) => ProviderOf[C];

/** How the file names each capability, for messages that tell the operator what to set. */
const FILE_NAME: Record<Capability, string> = {
  embeddings: "embeddings",
  moderation: "moderation",
  video: "video",
  fineTuning: "fine_tuning",
  responses: "responses",
};

const LABEL: Record<Capability, string> = {
  embeddings: "embeddings",
  moderation: "moderation",
  video: "video",
  fineTuning: "fine-tuning",
  responses: "model (responses)",
};

/**
 * Asked for a capability nothing can serve. The message is written for the API caller and the
 * operator alike; services answer it as a 400.
 */
export class ProviderUnavailable extends Error {
  override readonly name = "ProviderUnavailable";
  constructor(
    readonly capability: Capability,
    message: string,
  ) {
    super(message);
  }
}

type AnyFactory = (config: never) => ProviderOf[Capability];

/** The upstream implementations built in. fineTuning has none: its trainer must first upload the
 * training files to the upstream, which belongs with the fine-tuning area (registerUpstream). */
const BUILT_IN_UPSTREAM: Partial<Record<Capability, AnyFactory>> = {
  embeddings: (c: EmbeddingsProviderConfig & UpstreamProviderConfig) => new UpstreamEmbeddings(new UpstreamClient(c), c.dimensions),
  moderation: (c: UpstreamProviderConfig) => new UpstreamModeration(new UpstreamClient(c)),
  video: (c: UpstreamProviderConfig) => new UpstreamVideo(new UpstreamClient(c)),
  responses: (c: UpstreamProviderConfig) => new UpstreamResponses(new UpstreamClient(c)),
};

export class Providers {
  private readonly localFactories = new Map<Capability, AnyFactory>();
  private readonly upstreamFactories = new Map<Capability, AnyFactory>(Object.entries(BUILT_IN_UPSTREAM) as Array<[Capability, AnyFactory]>);
  private readonly registered = new Set<string>();
  private readonly instances = new Map<Capability, ProviderOf[Capability]>();
  private readonly localInstances = new Map<Capability, ProviderOf[Capability]>();

  constructor(private readonly config: ProvidersConfig) {}

  /** The engine that owns a capability registers its in-process implementation here, once. */
  registerLocal<C extends Capability>(capability: C, factory: LocalFactory<C>): void {
    this.register("local", capability);
    this.localFactories.set(capability, factory as AnyFactory);
  }

  /** For a capability whose upstream implementation lives with its area (fine-tuning); replaces a built-in one. */
  registerUpstream<C extends Capability>(capability: C, factory: UpstreamFactory<C>): void {
    this.register("upstream", capability);
    this.upstreamFactories.set(capability, factory as AnyFactory);
  }

  private register(kind: "local" | "upstream", capability: Capability): void {
    // Two registrations, or one after first use, are wiring mistakes that would otherwise go unnoticed.
    if (this.registered.has(`${kind}:${capability}`)) throw new Error(`a ${kind} ${LABEL[capability]} provider is already registered`);
    if (this.instances.has(capability)) throw new Error(`the ${LABEL[capability]} provider is already in use; register it at start-up`);
    this.registered.add(`${kind}:${capability}`);
  }

  /** The capability's settings, normalised. */
  configOf<C extends Capability>(capability: C): ConfigOf[C] {
    if (capability === "responses")
      return (this.config.responses ?? { kind: "local", timeoutMs: DEFAULT_PROVIDER_TIMEOUT_MS }) as ConfigOf[C];
    return this.config[capability as Exclude<Capability, "responses">] as ConfigOf[C];
  }

  /** Whether get() would find an implementation (e.g. to list a local model, or skip a check). */
  has(capability: Capability): boolean {
    const kind = this.configOf(capability).kind;
    return (kind === "local" ? this.localFactories : this.upstreamFactories).has(capability);
  }

  /** The implementation serving `capability`; ProviderUnavailable when none can. */
  get<C extends Capability>(capability: C): ProviderOf[C] {
    const made = this.instances.get(capability);
    if (made) return made as ProviderOf[C];
    const config = this.configOf(capability);
    const factory = (config.kind === "local" ? this.localFactories : this.upstreamFactories).get(capability);
    if (!factory) throw this.unavailable(capability, config.kind);
    const provider = (factory as (c: ConfigOf[C]) => ProviderOf[C])(config);
    this.instances.set(capability, provider);
    return provider;
  }

  /**
   * The in-process implementation whatever the configured kind: engines that need the local model
   * itself (moderation's text classifier runs on the local sentence encoder) share one instance
   * with get() instead of loading a second copy.
   */
  local<C extends Capability>(capability: C): ProviderOf[C] {
    const config = this.configOf(capability);
    if (config.kind === "local") return this.get(capability);
    const made = this.localInstances.get(capability);
    if (made) return made as ProviderOf[C];
    const factory = this.localFactories.get(capability);
    if (!factory) throw this.unavailable(capability, "local");
    const provider = (factory as (c: ConfigOf[C]) => ProviderOf[C])({ kind: "local", timeoutMs: config.timeoutMs } as ConfigOf[C]);
    this.localInstances.set(capability, provider);
    return provider;
  }

  embeddings() {
    return this.get("embeddings");
  }
  moderation() {
    return this.get("moderation");
  }
  video() {
    return this.get("video");
  }
  trainer() {
    return this.get("fineTuning");
  }
  responses() {
    return this.get("responses");
  }

  private unavailable(capability: Capability, kind: "local" | "upstream"): ProviderUnavailable {
    const key = `providers.${FILE_NAME[capability]}`;
    if (kind === "upstream")
      return new ProviderUnavailable(capability, `No ${LABEL[capability]} provider is available: ${key} names an upstream, and this server cannot call an upstream for ${LABEL[capability]} yet.`);
    return new ProviderUnavailable(
      capability,
      `No ${LABEL[capability]} provider is configured: this server has no local one; set ${key}.base_url in ATRIUM_CONFIG to an OpenAI-compatible service.`,
    );
  }
}

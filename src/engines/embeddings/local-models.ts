// LocalEmbeddings: the server's one local EmbeddingsProvider, serving both local models by name —
// the sentence encoder (the default for new vector stores) and the static model distilled from
// it (dense ingestion at about half the speed of lexical-only, hybrid MRR above the encoder's but
// hybrid recall@5 below it on bench/data/retrieval: README.md;
// chosen with providers.embeddings.model). Stores record the model that indexed them, and a
// store indexed with either keeps being served by it (src/services/vector_stores/embedder.ts).
import type { EmbedOptions, EmbedResult, EmbeddingsProvider } from "../../providers/types.js";
import { LOCAL_EMBEDDING_DIMENSIONS, LOCAL_EMBEDDING_MODEL } from "./constants.js";
import { LocalEmbeddingsError } from "./provider.js";
import { STATIC_EMBEDDING_DIMENSIONS, STATIC_EMBEDDING_MODEL } from "./static-constants.js";

/**
 * The local models' ids, the default first. The encoder stays the default: the static model
 * misses the retrieval floor the default must hold (hybrid recall@5 0.890 vs 0.933; README.md).
 */
export const LOCAL_EMBEDDING_MODELS = [LOCAL_EMBEDDING_MODEL, STATIC_EMBEDDING_MODEL] as const;

/** The most dimensions each local model gives. */
export const LOCAL_MODEL_DIMENSIONS: Readonly<Record<string, number>> = {
  [STATIC_EMBEDDING_MODEL]: STATIC_EMBEDDING_DIMENSIONS,
  [LOCAL_EMBEDDING_MODEL]: LOCAL_EMBEDDING_DIMENSIONS,
};

export class LocalEmbeddings implements EmbeddingsProvider {
  /** The default model: what a local embeddings capability embeds with when no model is configured. */
  readonly id: string = LOCAL_EMBEDDING_MODELS[0];
  readonly local = true;
  readonly dimensions = LOCAL_MODEL_DIMENSIONS[LOCAL_EMBEDDING_MODELS[0]];
  readonly models: readonly string[] = LOCAL_EMBEDDING_MODELS;

  constructor(private readonly byModel: { [STATIC_EMBEDDING_MODEL]: EmbeddingsProvider; [LOCAL_EMBEDDING_MODEL]: EmbeddingsProvider }) {}

  /** The provider that serves `model`, or undefined when it is not a local model. */
  forModel(model: string): EmbeddingsProvider | undefined {
    return Object.hasOwn(this.byModel, model) ? this.byModel[model as keyof typeof this.byModel] : undefined;
  }

  embed(inputs: string[], opts: EmbedOptions): Promise<EmbedResult> {
    const provider = this.forModel(opts.model);
    if (!provider) throw new LocalEmbeddingsError("model", `The local embedding models are ${LOCAL_EMBEDDING_MODELS.map((m) => `'${m}'`).join(" and ")}, not '${opts.model}'.`);
    return provider.embed(inputs, opts);
  }
}

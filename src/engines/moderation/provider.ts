// LocalModeration: the local ModerationProvider (src/providers/types.ts). Text goes to the
// nearest-example classifier (text/), images to nsfwjs (image/); this thread only parses, fetches
// and assembles the spec 2.9 result. See README.md beside this file for what it is and is not.
import type { FetchPolicy } from "../../common/fetch-url.js";
import { newId } from "../../common/ids.js";
import type { EmbeddingsProvider, ModerateOptions, ModerationInput, ModerationProvider, ModerationResponse, ModerationResult } from "../../providers/types.js";
import { CATEGORIES, IMAGE_CAPABLE, OMNI_ONLY, type Category } from "./categories.js";
import { ImageClassifier, sexualImageScore } from "./image/classifier.js";
import { isTextOnlyModel, parseModel, parseModerationInput, type ModerationItem } from "./input.js";
import { TextClassifier } from "./text/classifier.js";
import { raceAbort } from "../../common/abort.js";
import type { Json } from "../../common/json.js";

/** The id this provider reports (logs, metrics); responses carry the model the caller asked for. */
export const LOCAL_MODERATION_ID = "atrium-moderation-local";

/** nsfwjs-derived `sexual` score from which an image is flagged. */
export const IMAGE_SEXUAL_THRESHOLD = 0.5;

export interface LocalModerationOptions {
  /** The local sentence encoder (atrium-embed-use-lite), asked for at call time. */
  encoder: () => EmbeddingsProvider;
  /** How http(s) image URLs are fetched (timeout, private addresses). */
  fetch: Omit<FetchPolicy, "maxBytes">;
  /** Where the bank's vectors and calibration are cached between starts. */
  cacheDir?: string;
  /** Time limit of one moderate() call in ms; none if undefined. */
  timeoutMs?: number;
}

/** moderate() took longer than its time limit. */
export class LocalModerationTimeout extends Error {
  override readonly name = "LocalModerationTimeout";
}


export class LocalModeration implements ModerationProvider {
  readonly id = LOCAL_MODERATION_ID;
  readonly local = true;
  readonly text: TextClassifier;
  readonly images: ImageClassifier;
  private readonly timeoutMs: number | undefined;

  constructor(opts: LocalModerationOptions) {
    this.text = new TextClassifier({ encoder: opts.encoder, cacheDir: opts.cacheDir });
    this.images = new ImageClassifier({ fetch: opts.fetch });
    this.timeoutMs = opts.timeoutMs;
  }

  /** Prepares the text classifier (bank vectors, calibration) ahead of the first request. */
  warmUp(): Promise<unknown> {
    return this.text.ready();
  }

  async moderate(input: ModerationInput, opts: ModerateOptions): Promise<ModerationResponse> {
    const model = parseModel(opts.model);
    const items = parseModerationInput(input as Json, model);
    const timeout = this.timeoutMs === undefined ? undefined : AbortSignal.timeout(this.timeoutMs);
    const signals = [opts.signal, timeout].filter((s): s is AbortSignal => s !== undefined);
    const signal = signals.length > 1 ? AbortSignal.any(signals) : signals[0];
    try {
      // A request of images only never waits for the text classifier to be prepared.
      const anyText = items.some((it) => it.texts.length > 0);
      const [text, images, models] = await Promise.all([
        anyText ? this.text.classify(items.map((it) => it.texts.map((t) => t.text).join("\n")), signal, { lane: opts.lane, project: opts.project }) : [],
        Promise.all(items.map((it) => this.imageScores(it, signal))),
        anyText ? raceAbort(this.text.ready(), signal).then((r) => r.calibration.models) : undefined,
      ]);
      const results = items.map((it, i) =>
        buildResult({
          text: it.texts.length ? text[i]! : null,
          imageSexual: it.images.length ? Math.max(...images[i]!) : null,
          textThreshold: (c) => models![c].threshold,
          textOnlyModel: isTextOnlyModel(model),
        }),
      );
      return { id: newId("modr-"), model, results };
    } catch (e) {
      if (timeout?.aborted && !opts.signal?.aborted)
        throw new LocalModerationTimeout(`The local moderation classifier did not finish within ${this.timeoutMs} ms.`, { cause: e });
      throw e;
    }
  }

  private async imageScores(item: ModerationItem, signal?: AbortSignal): Promise<number[]> {
    // Fetched together; the worker takes them one by one.
    const loaded = await Promise.all(item.images.map((img) => this.images.load(img.url, img.param)));
    return Promise.all(loaded.map(async (bytes, k) => sexualImageScore((await this.images.classify(bytes, item.images[k]!.param, signal)).classes)));
  }

  async close(): Promise<void> {
    await Promise.all([this.text.close(), this.images.close()]);
  }
}

interface ResultParts {
  /** Calibrated text probabilities (CATEGORIES order), or null when the item has no text. */
  text: Float32Array | null;
  /** The highest image `sexual` score, or null when the item has no image. */
  imageSexual: number | null;
  textThreshold: (c: Category) => number;
  /** text-moderation-*: no illicit categories (null booleans). */
  textOnlyModel: boolean;
}

/**
 * One spec 2.9 result. A category's score is its text probability, and for `sexual` the higher of
 * that and the image score; `category_applied_input_types` lists the inputs a score was computed
 * from: "text" where there was text, "image" only for `sexual` (the one category the image model
 * informs), never for a text-only category of spec 2.9.
 */
export function buildResult(parts: ResultParts): ModerationResult {
  const categories: Record<string, boolean | null> = {};
  const scores: Record<string, number> = {};
  const applied: Record<string, Array<"text" | "image">> = {};
  let flagged = false;
  for (const [k, c] of CATEGORIES.entries()) {
    if (parts.textOnlyModel && OMNI_ONLY.has(c)) {
      categories[c] = null;
      scores[c] = 0;
      applied[c] = [];
      continue;
    }
    const types: Array<"text" | "image"> = [];
    let score = 0;
    let hit = false;
    if (parts.text) {
      types.push("text");
      score = clamp(parts.text[k]!);
      hit = score >= parts.textThreshold(c);
    }
    if (c === "sexual" && parts.imageSexual !== null && IMAGE_CAPABLE.has(c)) {
      types.push("image");
      const image = clamp(parts.imageSexual);
      if (image > score) score = image;
      hit ||= image >= IMAGE_SEXUAL_THRESHOLD;
    }
    categories[c] = hit;
    scores[c] = score;
    applied[c] = types;
    flagged ||= hit;
  }
  return { flagged, categories, category_scores: scores, category_applied_input_types: applied };
}

const clamp = (x: number) => (Number.isFinite(x) ? Math.min(1, Math.max(0, x)) : 0);

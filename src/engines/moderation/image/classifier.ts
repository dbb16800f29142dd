// The image classifier's main-thread side: gets the bytes (a base64 data URL, or an http(s) URL
// through the SSRF-safe fetcher), checks the header (format, pixel count) here so that a bad
// image is a precise 400 before any work, and hands decoding and inference to the image worker.
import { fetchUrl, FetchUrlError, type FetchPolicy } from "../../../common/fetch-url.js";
import { inspectImage, MediaFormatError } from "../../media/image.js";
import { WorkerPool, WorkerTaskError, workerScript } from "../../pool/index.js";
import { LIMITS, ModerationInputError } from "../input.js";
import type { ImageResult, ImageTask } from "./task.js";
import { splitDataUrl } from "../../../common/data-url.js";

/** Time limit of one ffmpeg decode (JPEG, WebP). */
const DECODE_TIMEOUT_MS = 10_000;

export interface ImageClassifierOptions {
  /** How http(s) image URLs are fetched (timeout, private addresses); the size cap is LIMITS.maxImageBytes. */
  fetch: Omit<FetchPolicy, "maxBytes">;
}

/**
 * The image side's score for `sexual`: nsfwjs' explicit classes in full, its "Sexy" (suggestive,
 * not explicit) class at a quarter. Drawing and Neutral count for nothing.
 */
export function sexualImageScore(classes: ImageResult["classes"]): number {
  return Math.min(1, classes.Porn + classes.Hentai + 0.25 * classes.Sexy);
}

export class ImageClassifier {
  readonly pool: WorkerPool<ImageTask, ImageResult>;

  constructor(private readonly opts: ImageClassifierOptions) {
    this.pool = new WorkerPool<ImageTask, ImageResult>({
      script: workerScript(import.meta.url, "worker"),
      size: 1, // the model takes ~100 MB and ~65 ms an image; one thread on a small machine
      name: "atrium-moderation-image",
      resourceLimits: { maxOldGenerationSizeMb: 768 },
    });
  }

  /** The bytes behind an image part's URL; a ModerationInputError naming `param` when they cannot be had. */
  async load(url: string, param: string): Promise<Uint8Array> {
    if (url.startsWith("data:")) {
      const bytes = new Uint8Array(Buffer.from(splitDataUrl(url)?.payload ?? "", "base64"));
      if (bytes.length === 0) throw new ModerationInputError(param, `Invalid '${param}': the data URL holds no image data.`, "invalid_image");
      if (bytes.length > LIMITS.maxImageBytes)
        throw new ModerationInputError(param, `Invalid '${param}': the image is larger than ${LIMITS.maxImageBytes} bytes.`, "image_too_large");
      return bytes;
    }
    try {
      return await fetchUrl(url, { ...this.opts.fetch, maxBytes: LIMITS.maxImageBytes });
    } catch (e) {
      if (e instanceof FetchUrlError)
        throw new ModerationInputError(param, `Invalid '${param}': ${e.message}`, e.status === 413 ? "image_too_large" : "invalid_image_url");
      throw e;
    }
  }

  /** nsfwjs' five class probabilities for the image. */
  async classify(bytes: Uint8Array, param: string, signal?: AbortSignal): Promise<ImageResult> {
    let info;
    try {
      info = inspectImage(bytes);
    } catch (e) {
      if (e instanceof MediaFormatError) throw new ModerationInputError(param, `Invalid '${param}': ${e.message}.`, "invalid_image_format");
      throw e;
    }
    if (info.width * info.height > LIMITS.maxImagePixels)
      throw new ModerationInputError(
        param,
        `Invalid '${param}': the image is ${info.width}×${info.height} pixels; at most ${LIMITS.maxImagePixels} pixels are allowed.`,
        "image_too_large",
      );
    // Only a buffer of its own can be moved to the worker without taking its neighbours along.
    if (bytes.byteOffset !== 0 || bytes.byteLength !== bytes.buffer.byteLength) bytes = bytes.slice();
    try {
      return await this.pool.run(
        { bytes, format: info.format, width: info.width, height: info.height, decodeTimeoutMs: DECODE_TIMEOUT_MS },
        { signal, transfer: [bytes.buffer as ArrayBuffer] },
      );
    } catch (e) {
      // The decoders' complaints are about the caller's file.
      if (e instanceof WorkerTaskError && e.name === "ImageDecodeError")
        throw new ModerationInputError(param, `Invalid '${param}': ${e.message}.`, "invalid_image");
      throw e;
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

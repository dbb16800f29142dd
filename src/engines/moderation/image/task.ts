// What the main thread asks of an image worker, and what comes back.
import type { ImageFormat } from "../../media/image.js";
import type { NsfwClasses } from "./nsfw.js";

export interface ImageTask {
  /** The file's bytes (transferred). */
  bytes: Uint8Array;
  /** From the header, checked on the main thread (format and pixel limits). */
  format: ImageFormat;
  width: number;
  height: number;
  /** Time limit of an ffmpeg decode. */
  decodeTimeoutMs: number;
}

export interface ImageResult {
  classes: NsfwClasses;
  decodeMs: number;
  inferMs: number;
  model: { backend: string; simd: boolean; loadMs: number };
}

// The image worker: decodes the first frame (PNG and GIF here, JPEG and WebP through ffmpeg) to at
// most 224 × 224 RGB and runs nsfwjs on it. One model per thread, loaded on the first task.
import { serveTasks } from "../../pool/serve.js";
import { decodeWithFfmpeg } from "./ffmpeg.js";
import { decodeGif } from "./gif.js";
import { loadImageModel } from "./nsfw.js";
import type { RgbImage } from "./pixels.js";
import { decodePng } from "./png.js";
import type { ImageResult, ImageTask } from "./task.js";

serveTasks<ImageTask, ImageResult>(async (task, ctx) => {
  const model = await loadImageModel();
  ctx.signal.throwIfAborted();
  const started = performance.now();
  let image: RgbImage;
  if (task.format === "png") image = decodePng(task.bytes);
  else if (task.format === "gif") image = decodeGif(task.bytes);
  else image = await decodeWithFfmpeg(task.bytes, task.format, task.width, task.height, task.decodeTimeoutMs, ctx.signal);
  const decoded = performance.now();
  const classes = await model.classify(image);
  return { classes, decodeMs: decoded - started, inferMs: performance.now() - decoded, model: model.info };
});

// The encoder worker: one model per thread, loaded on its first task.
import { serveTasks } from "../pool/serve.js";
import { loadSentenceEncoder } from "./model.js";
import type { EncodeResult, EncodeTask } from "./task.js";

serveTasks<EncodeTask, EncodeResult>(async (task, ctx) => {
  const encoder = await loadSentenceEncoder();
  const vectors = await encoder.embed(task.texts, { dimensions: task.dimensions, signal: ctx.signal });
  ctx.transfer(vectors.buffer as ArrayBuffer);
  return { vectors, model: encoder.info };
});

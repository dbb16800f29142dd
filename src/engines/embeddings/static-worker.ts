// The static model's worker: one table per thread, loaded (or built) on its first task.
import { serveTasks } from "../pool/serve.js";
import { getEncoding } from "../tokenizer/index.js";
import { loadStaticModel } from "./static-model.js";
import type { StaticEncodeResult, StaticEncodeTask } from "./static-task.js";

serveTasks<StaticEncodeTask, StaticEncodeResult>(async (task, ctx) => {
  const model = await loadStaticModel(task.cacheDir);
  ctx.signal.throwIfAborted();
  const vectors = model.embed(task.texts, task.dimensions);
  const cl100k = getEncoding("cl100k_base");
  let tokens = 0;
  for (const text of task.texts) tokens += cl100k.countTokens(text);
  ctx.transfer(vectors.buffer as ArrayBuffer);
  return { vectors, tokens, model: model.info };
});

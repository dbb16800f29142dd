// An ingest worker: extraction (PDF, DOCX, HTML, text) and chunking off the main thread.
import { serveTasks } from "../pool/serve.js";
import { chunkText } from "./chunk.js";
import { extractText } from "./extract.js";
import type { IngestResult, IngestTask } from "./task.js";

serveTasks<IngestTask, IngestResult>(async (task, ctx) => {
  const { format, text } = await extractText(task.bytes, task.filename);
  const chunks = task.chunking ? await chunkText(text, task.chunking, { signal: ctx.signal, maxTotalTokens: task.maxTotalTokens }) : [];
  const start = Uint32Array.from(chunks, (c) => c.start);
  const end = Uint32Array.from(chunks, (c) => c.end);
  const tokens = Uint32Array.from(chunks, (c) => c.tokens);
  const chunkBytes = chunks.reduce((n, c) => n + Buffer.byteLength(c.text), 0);
  ctx.transfer(start.buffer, end.buffer, tokens.buffer);
  return { format, text, start, end, tokens, chunkBytes };
});

// The ingest engine behind a pool of worker threads (docs/architecture.md, principle 7): extracting a PDF or a
// DOCX and tokenizing megabytes of text are CPU work that must not hold the server's event loop.
// The worker does extractText + chunkText; the chunks come back as offsets into one string.
import { WorkerPool, WorkerTaskError, workerScript } from "../pool/index.js";
import type { Chunk, ChunkingOptions } from "./chunk.js";
import type { Format } from "./detect.js";
import { IngestError, type IngestErrorCode } from "./errors.js";
import type { IngestResult, IngestTask } from "./task.js";

export interface IngesterOptions {
  /** Worker threads (default 1: the embedder has its own). */
  workers?: number;
}

export class Ingester {
  private readonly pool: WorkerPool<IngestTask, IngestResult>;

  constructor(opts: IngesterOptions = {}) {
    this.pool = new WorkerPool<IngestTask, IngestResult>({ script: workerScript(import.meta.url, "worker"), size: opts.workers ?? 1, name: "atrium-ingest" });
  }

  /** The file's text and its chunks. IngestError for a file that cannot be read, as in-process. */
  async parse(bytes: Uint8Array, filename: string, chunking: ChunkingOptions, opts: { signal?: AbortSignal; maxTotalTokens?: number } = {}) {
    const r = await this.run({ bytes, filename, chunking, maxTotalTokens: opts.maxTotalTokens }, opts.signal);
    const chunks: Chunk[] = Array.from(r.start, (start, index) => ({ index, start, end: r.end[index]!, tokens: r.tokens[index]!, text: r.text.slice(start, r.end[index]!) }));
    return { format: r.format, text: r.text, chunks, chunkBytes: r.chunkBytes };
  }

  /** The file's text only. */
  async extract(bytes: Uint8Array, filename: string, signal?: AbortSignal): Promise<{ format: Format; text: string }> {
    const r = await this.run({ bytes, filename }, signal);
    return { format: r.format, text: r.text };
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private async run(task: IngestTask, signal: AbortSignal | undefined): Promise<IngestResult> {
    // The bytes move to the worker: a private copy, since a Buffer may share its memory with others.
    const bytes = new Uint8Array(task.bytes);
    try {
      return await this.pool.run({ ...task, bytes }, { signal, transfer: [bytes.buffer] });
    } catch (e) {
      if (e instanceof WorkerTaskError && e.name === "IngestError") throw new IngestError(e.code as IngestErrorCode, e.message);
      throw e;
    }
  }
}

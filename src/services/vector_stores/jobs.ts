// The ingestion job: one per attached file (VECTOR_STORES_INGEST_JOB), run by the durable job runner
// with bounded concurrency. extract → chunk (the ingest engine's worker threads) → embed (batches,
// through the provider) → index.
//
// Exactly once in effect, across crashes and restarts:
// - chunk ids are deterministic (`<file id>:<chunk index>`) and the index replaces a chunk it
//   already has, so indexing a batch twice leaves one copy;
// - after each indexed batch the job checkpoints how many chunks are in; a resumed run extracts
//   and chunks again (the same bytes and strategy give the same chunks) and carries on from there;
// - the file's final state is written in the same transaction that ends the job.
//
// A job stands down when its attachment is no longer current: detached, its store deleted, or
// its batch cancelled (it removes what it indexed), or attached again (the newer job, which waits
// for this one to end, clears the file's chunks before indexing).
import { setImmediate, setTimeout as sleep } from "node:timers/promises";
import type { JobContext, JobHandler, JobRunner, KindOptions } from "../../jobs/index.js";
import { JobAborted, TERMINAL_STATES } from "../../jobs/index.js";
import { IngestError, type Chunk, type Ingester } from "../../engines/ingest/index.js";
import type { ChunkInput, SearchIndex } from "../../engines/search/index.js";
import type { Scope } from "../../storage/types.js";
import { describeEmbedder, embedTexts, storeSetup, type DenseSetup, type DenseSource } from "./embedder.js";
import { chunkId, type FileError, type VsFileRecord } from "./records.js";
import { VECTOR_STORES_INGEST_JOB, type IngestPayload, type VectorStores } from "./vector-stores.js";

/** What the ingestion job works with. */
export interface IngestJobDeps {
  /** The area's rules: where an attachment stands, how a file's processing ends, a File's bytes. */
  vectorStores: Pick<VectorStores, "attachment" | "settleFile" | "readFile" | "embedderOf">;
  index: Pick<SearchIndex, "addChunks" | "removeFile">;
  ingester: Pick<Ingester, "parse">;
  /** The job runner, to see whether an earlier attachment's job has ended. */
  jobs: Pick<JobRunner, "get">;
  /** The server's current embedder; null: lexical only. */
  dense: DenseSource;
}

interface IngestCheckpoint {
  /** Chunks 0..indexed-1 are in the index. */
  indexed: number;
}

/**
 * Chunks per embedding call and per index write (and per checkpoint): small enough that a crash
 * loses little, that the next batch's embedding overlaps this one's indexing, and that one index
 * write (a synchronous SQLite transaction, FTS included: ~2-8 ms for 16 chunks of 800 tokens)
 * holds the event loop only briefly.
 */
const BATCH = 16;
/** Embedding calls in flight per job, ahead of the batch being indexed. */
const EMBED_AHEAD = 2;
const MAX_ATTEMPTS = 4;
/**
 * How long a run waits for the job of the attachment it replaces (told to stand down by the
 * request) to end before it gives the attempt up: that job stops at its next await, well within
 * this, and waiting here costs no attempt, where retrying would spend one per backoff.
 */
const EARLIER_WAIT_MS = 10_000;
const EARLIER_POLL_MS = 25;

const INGEST_OPTIONS: KindOptions = {
  // Extraction and chunking run in the ingest workers, embedding in the provider's: two files at
  // once keep the embedder busy while the other file is parsed or indexed.
  concurrency: 2,
  maxAttempts: MAX_ATTEMPTS,
  backoff: { baseMs: 500, maxMs: 30_000 },
  // A run that dies (kill -9, power cut) is taken over this long after its last heartbeat.
  leaseMs: 10_000,
};

export { VECTOR_STORES_INGEST_JOB };

/** A failure that retrying cannot fix: the file ends failed with this error. */
class FileFailed extends Error {
  constructor(readonly error: FileError) {
    super(error.message);
  }
}

/** The job that ingests one attached file. */
export function ingestJob(deps: IngestJobDeps): { handler: JobHandler<IngestPayload, void, IngestCheckpoint>; options: KindOptions } {
  return { handler: (ctx) => ingestAttachment(deps, ctx), options: INGEST_OPTIONS };
}

async function ingestAttachment(deps: IngestJobDeps, ctx: JobContext<IngestPayload, IngestCheckpoint>): Promise<void> {
  const vs = deps.vectorStores;
  const p = ctx.job.payload;
  const scope = ctx.job.scope;
  const at = await vs.attachment(scope, p);
  if (at.state === "unwritten") {
    // The request that enqueued this job writes the record right after (on several instances
    // this job can start first); a record that never comes means that request failed.
    if (ctx.job.attempt < MAX_ATTEMPTS) throw new Error("the file's record is not written yet");
    return;
  }
  if (at.state !== "current") return;
  const file = at.record.data;
  if (file.supersedes) await earlierEnded(deps, file.supersedes, ctx.signal);
  try {
    await ingest(deps, ctx, scope, file);
  } catch (e) {
    if (e instanceof JobAborted) {
      if (e.why === "cancelled") await standDown(deps, scope, p);
      throw e;
    }
    const error: FileError | undefined =
      e instanceof FileFailed
        ? e.error
        : e instanceof IngestError
          ? { code: e.code, message: e.message }
          : ctx.job.attempt >= MAX_ATTEMPTS
            ? { code: "server_error", message: `The file could not be processed: ${(e as Error).message}` }
            : undefined;
    if (!error) throw e; // transient: the runner retries after a backoff
    await deps.index.removeFile(p.storeId, p.fileId);
    await vs.settleFile(scope, p.storeId, p.fileId, p.attachId, () => ({ status: "failed", lastError: error, usageBytes: 0, chunks: 0 }), (ops) =>
      ctx.complete(undefined, ops),
    );
  }
}

async function ingest(deps: IngestJobDeps, ctx: JobContext<IngestPayload, IngestCheckpoint>, scope: Scope, file: VsFileRecord): Promise<void> {
  const vs = deps.vectorStores;
  const { storeId, fileId } = file;
  const resumed = ctx.job.checkpoint !== undefined;
  // Leftovers of an earlier attachment of the same file (its job has ended, see above).
  if (!resumed) await deps.index.removeFile(storeId, fileId);

  const dense = await storeEmbedder(deps, scope, storeId);
  const bytes = await vs.readFile(scope, fileId);
  if (!bytes) throw new FileFailed({ code: "invalid_file", message: `File ${fileId} was deleted before it could be processed.` });
  const { chunks, chunkBytes } = await deps.ingester.parse(bytes, file.filename, file.chunking, { signal: ctx.signal });
  if (chunks.length === 0) throw new IngestError("invalid_file", `No text could be extracted from ${file.filename}.`);

  // Embedding runs EMBED_AHEAD batches ahead of indexing (in the provider's workers): when the
  // embedder finishes a batch, the next one is already queued, whatever the indexing and the
  // checkpoints take on the main thread meanwhile. Embeddings still queued when the job stops
  // early (detached, cancelled, failed) are withdrawn.
  const start = ctx.job.checkpoint?.indexed ?? 0;
  const stop = new AbortController();
  const signal = AbortSignal.any([ctx.signal, stop.signal]);
  const ahead: Array<Promise<Float32Array[] | undefined>> = [];
  let embedFrom = start;
  const embedAhead = () => {
    for (; ahead.length < EMBED_AHEAD && embedFrom < chunks.length; embedFrom += BATCH) {
      if (!dense) {
        ahead.push(Promise.resolve(undefined));
        continue;
      }
      // Bulk work: searches, embeddings and moderations of every project go first (src/engines/pool/lanes.ts).
      const p = embedTexts(dense, chunks.slice(embedFrom, embedFrom + BATCH).map((c) => c.text), { lane: "bulk", project: scope.projectId, signal });
      p.catch(() => {}); // awaited below; never an unhandled rejection if abandoned
      ahead.push(p);
    }
  };
  try {
    for (let from = start; from < chunks.length; from += BATCH) {
      embedAhead();
      const vectors = await ahead.shift()!;
      embedAhead();
      // Attributes are read now, not at the start: an update during ingestion must not be undone.
      const at = await vs.attachment(scope, { storeId, fileId, attachId: file.attachId });
      if (at.state !== "current") return await standDown(deps, scope, { storeId, fileId, attachId: file.attachId });
      const attributes = at.record.data.attributes ?? {};
      await deps.index.addChunks(storeId, chunks.slice(from, from + BATCH).map((c, i): ChunkInput => chunkInput(fileId, c, attributes, vectors?.[i])));
      await ctx.checkpoint({ indexed: Math.min(chunks.length, from + BATCH) });
      // Every await above may resolve at once (SQLite is synchronous): without this, a lexical-only
      // file would be indexed in one unbroken run of microtasks, holding the event loop throughout.
      await setImmediate();
    }
  } finally {
    stop.abort(new Error("the ingestion stopped"));
  }

  const usageBytes = chunkBytes + (dense ? 4 * vectorLength(dense) * chunks.length : 0);
  const written = await vs.settleFile(scope, storeId, fileId, file.attachId, () => ({ status: "completed", usageBytes, chunks: chunks.length }), (ops) =>
    ctx.complete(undefined, ops),
  );
  if (!written) await standDown(deps, scope, { storeId, fileId, attachId: file.attachId });
}

function chunkInput(fileId: string, c: Chunk, attributes: Record<string, string | number | boolean>, vector: Float32Array | undefined): ChunkInput {
  return { chunkId: chunkId(fileId, c.index), fileId, index: c.index, text: c.text, tokens: c.tokens, attributes, ...(vector && { vector }) };
}

function vectorLength(dense: DenseSetup): number {
  return dense.embedder.dimensions || dense.provider.dimensions || 0;
}

/** Resolves once job `id` has ended (or is gone); throws to retry later if it is still going after EARLIER_WAIT_MS. */
async function earlierEnded(deps: IngestJobDeps, id: string, signal: AbortSignal): Promise<void> {
  for (let waited = 0; ; waited += EARLIER_POLL_MS) {
    const earlier = await deps.jobs.get(id);
    if (!earlier || TERMINAL_STATES.has(earlier.state)) return;
    if (waited >= EARLIER_WAIT_MS) throw new Error("waiting for the file's earlier ingestion to stop");
    await sleep(EARLIER_POLL_MS, undefined, { signal });
  }
}

/** The attachment went away mid-run: remove what this job indexed, unless a newer job owns the file now. */
async function standDown(deps: IngestJobDeps, scope: Scope, p: IngestPayload): Promise<void> {
  const at = await deps.vectorStores.attachment(scope, p);
  if (at.state === "gone") await deps.index.removeFile(p.storeId, p.fileId);
}

/** The embedder the store's vectors come from, which this server must be able to run; null: lexical only. */
async function storeEmbedder(deps: IngestJobDeps, scope: Scope, storeId: string): Promise<DenseSetup | null> {
  const embedder = await deps.vectorStores.embedderOf(scope, storeId);
  const current = deps.dense();
  if (embedder === null && current === null) return null;
  const setup = storeSetup(embedder, current);
  if (!setup)
    throw new FileFailed({
      code: "server_error",
      message: `The vector store was indexed with ${describeEmbedder(embedder)}, but this server embeds with ${describeEmbedder(current?.embedder ?? null)}; re-index the store.`,
    });
  return setup;
}

/**
 * For the runner's finished-listener: a job that ended failed or cancelled without settling its
 * file (the runner gave up after repeated crashes) leaves the file failed, not in progress forever.
 */
export async function settleAbandoned(deps: IngestJobDeps, scope: Scope, p: IngestPayload, lastError: string | null): Promise<void> {
  const error: FileError = { code: "server_error", message: `The file could not be processed${lastError ? `: ${lastError}` : "."}` };
  const settled = await deps.vectorStores.settleFile(scope, p.storeId, p.fileId, p.attachId, () => ({ status: "failed", lastError: error, usageBytes: 0, chunks: 0 }));
  if (settled) await deps.index.removeFile(p.storeId, p.fileId);
}

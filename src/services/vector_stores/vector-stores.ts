// Vector stores: the domain rules (spec 2.3-2.5, 3, 4.3, 4.4) over the record store, the search
// index and the job runner. The service (handler.ts) maps messages onto this; file batches
// (file-batches.ts) and search (search.ts) build on it, and the ingestion job (jobs.ts) calls
// back into it to read and settle the files it processes.
//
// States (spec 3 leaves most moves unstated; these are the choices):
//   store:  completed ⇄ in_progress (while any of its files is)  ──expires_at passes──> expired (final)
//   file:   in_progress ──indexed──> completed
//                       ──unreadable, or retries exhausted──> failed (last_error says why)
//                       ──its batch cancelled──> failed (last_error: server_error, "cancelled"), because
//                         the official SDKs' file poller loops forever on `cancelled` (openai-node #2506)
//           any ──attached again──> in_progress (re-ingested with the new attributes and chunking)
//   batch:  in_progress (while any member is) ──> completed, or failed when every member failed;
//           cancelled once cancelled while members were in progress
import { ApiError, notFound } from "../../common/errors.js";
import { newId } from "../../common/ids.js";
import { allRecords } from "../../common/pages.js";
import type { JobRunner } from "../../jobs/index.js";
import type { SearchIndex } from "../../engines/search/index.js";
import { IngestError, type Ingester } from "../../engines/ingest/index.js";
import { DuplicateRecord, VersionConflict, type ListQuery, type Scope, type StoredRecord, type WriteOp } from "../../storage/types.js";
import { setTimer, timerKind } from "../../jobs/index.js";
import type { ServiceDeps } from "../deps.js";
import type { FilesApi, FileView } from "../files/index.js";
import { describeEmbedder, sameEmbedder, storeSetup, type DenseSource } from "./embedder.js";
import {
  FILE_BATCH_KIND,
  FILE_BATCH_MEMBER_KIND,
  FILE_REF_KIND,
  STORE_KIND,
  VECTOR_STORES_EXPIRE_TIMER,
  VS_FILE_KIND,
  batchFileId,
  fileRefId,
  ingestJobId,
  vsFileId,
  type Attributes,
  type FileBatchMemberRecord,
  type FileBatchRecord,
  type Embedder,
  type FileRefRecord,
  type FileStatus,
  type StoreRecord,
  type VsFileRecord,
} from "./records.js";
import { searchStore, type StoreHit } from "./search.js";
import type { ExpiresAfter, SearchParams } from "./validate.js";
import { attachmentState, countByStatus, type AttachItem, type Attachment, type IngestPayload, type StoreStatus, type StoreView } from "./views.js";

/** The ingestion job of one attached file (jobs.ts). */
export const VECTOR_STORES_INGEST_JOB = "vector_stores.ingest";
const DAY = 24 * 3600;

export type { AttachItem, Attachment, BatchStatus, BatchView, FileCounts, IngestPayload, StoreStatus, StoreView } from "./views.js";

export class VectorStores {
  private readonly stores;
  private readonly files;
  private readonly refs;
  private readonly batches;
  private readonly members;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly fileStore: Pick<FilesApi, "find" | "readAll">,
    private readonly index: SearchIndex,
    private readonly jobs: JobRunner,
    private readonly dense: DenseSource,
    private readonly ingester: Pick<Ingester, "extract">,
  ) {
    const r = deps.records;
    this.stores = r.collection<StoreRecord>(STORE_KIND);
    this.files = r.collection<VsFileRecord>(VS_FILE_KIND);
    this.refs = r.collection<FileRefRecord>(FILE_REF_KIND);
    this.batches = r.collection<FileBatchRecord>(FILE_BATCH_KIND);
    this.members = r.collection<FileBatchMemberRecord>(FILE_BATCH_MEMBER_KIND);
  }

  private now() {
    return this.deps.clock.now();
  }

  // ---- stores ----

  async create(
    scope: Scope,
    input: { name?: string; description?: string; metadata?: Record<string, string>; expiresAfter: ExpiresAfter | null; items: AttachItem[] },
  ): Promise<StoredRecord<StoreRecord>> {
    const now = this.now();
    const store: StoreRecord = {
      id: newId("vs_"),
      name: input.name ?? "",
      description: input.description ?? null,
      metadata: input.metadata ?? {},
      createdAt: now,
      lastActiveAt: now,
      expiresAfter: input.expiresAfter,
      expired: false,
      embedder: this.dense()?.embedder ?? null,
    };
    // The files must exist before anything is written.
    const files = await this.loadFiles(scope, input.items);
    const rec = await this.stores.insert(scope, { id: store.id, createdAt: now, data: store });
    await this.armExpiry(scope, store);
    if (input.items.length) await this.attach(scope, rec, input.items, files, null);
    return (await this.stores.get(scope, store.id)) ?? rec;
  }

  /** The store, 404 when it is not this project's; a store past its expires_at is marked expired here. */
  async get(scope: Scope, id: string, param = "vector_store_id"): Promise<StoredRecord<StoreRecord>> {
    const rec = await this.stores.get(scope, id);
    if (!rec) throw notFound("vector store", id, param);
    if (!rec.data.expired && this.isPastExpiry(rec.data)) return this.markExpired(scope, id);
    return rec;
  }

  /** A store that can take files and answer searches: 400 once it expired. */
  async getUsable(scope: Scope, id: string): Promise<StoredRecord<StoreRecord>> {
    const rec = await this.get(scope, id);
    if (rec.data.expired)
      throw new ApiError(400, `Vector store ${id} has expired and can no longer be searched or modified; create a new vector store.`, {
        param: "vector_store_id",
        code: "vector_store_expired",
      });
    return rec;
  }

  async view(scope: Scope, rec: StoredRecord<StoreRecord>): Promise<StoreView> {
    const counts = await countByStatus(scope, this.files, rec.id);
    const { bytes } = await this.index.stats(rec.id);
    const expired = rec.data.expired || this.isPastExpiry(rec.data); // lists do not go through get()
    const status: StoreStatus = expired ? "expired" : counts.in_progress > 0 ? "in_progress" : "completed";
    return { store: rec.data, counts, usageBytes: bytes, status, expiresAt: expiresAtOf(rec.data) };
  }

  list(scope: Scope, q: ListQuery) {
    return this.stores.list(scope, q);
  }

  async update(
    scope: Scope,
    id: string,
    change: { name?: string; metadata?: Record<string, string>; expiresAfter?: ExpiresAfter | null },
  ): Promise<StoredRecord<StoreRecord>> {
    await this.get(scope, id);
    // An update is activity, as a search or a file change is: it moves last_active_at, and with it
    // expires_at, whose timer is armed again for the new time.
    const now = this.now();
    const rec = await this.mutateStore(scope, id, (s) => ({
      ...s,
      lastActiveAt: now,
      ...(change.name !== undefined && { name: change.name }),
      ...(change.metadata !== undefined && { metadata: change.metadata }),
      ...(change.expiresAfter !== undefined && { expiresAfter: change.expiresAfter }),
    }));
    if (rec.data.expiresAfter && !rec.data.expired) await this.armExpiry(scope, rec.data);
    return rec;
  }

  async delete(scope: Scope, id: string): Promise<void> {
    await this.get(scope, id);
    const files = await allRecords(this.files, scope, { parentId: id, order: "asc" });
    const batches = await allRecords(this.batches, scope, { parentId: id, order: "asc" });
    const ops: WriteOp[] = [{ op: "delete", kind: STORE_KIND, scope, id }];
    for (const f of files) ops.push(this.del(VS_FILE_KIND, scope, f.id), this.del(FILE_REF_KIND, scope, fileRefId(f.data.fileId, id)));
    for (const b of batches) {
      ops.push(this.del(FILE_BATCH_KIND, scope, b.id));
      for (const m of await allRecords(this.members, scope, { parentId: b.id, order: "asc" })) ops.push(this.del(FILE_BATCH_MEMBER_KIND, scope, m.id));
    }
    await this.deps.records.atomically(ops);
    // The records are gone, so running jobs stand down at their next check; stop them sooner.
    for (const f of files) if (f.data.status === "in_progress") await this.jobs.cancel(ingestJobId(id, f.data.fileId, f.data.attachId));
    await this.index.dropStore(id);
    // Its expiry timers find no store when they fire.
  }

  /** last_active_at = now (search and file changes); at most one write per store per second. */
  async touch(scope: Scope, id: string): Promise<void> {
    const now = this.now();
    try {
      await this.mutateStore(scope, id, (s) => (s.lastActiveAt === now ? s : { ...s, lastActiveAt: now }));
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 404)) throw e; // deleted meanwhile: nothing to touch
    }
  }

  private isPastExpiry(s: StoreRecord): boolean {
    const at = expiresAtOf(s);
    return at !== null && at <= this.now();
  }

  private async markExpired(scope: Scope, id: string): Promise<StoredRecord<StoreRecord>> {
    return this.mutateStore(scope, id, (s) => (s.expired ? s : { ...s, expired: true }));
  }

  /**
   * A durable timer at the store's expires_at. Searches move last_active_at (and so expires_at)
   * without re-arming: a timer that fires early finds the store not yet due and arms the next one.
   * Each timer's id carries its due time, so arming never collides with a timer being swept.
   */
  private async armExpiry(scope: Scope, s: StoreRecord): Promise<void> {
    const at = expiresAtOf(s);
    if (at === null || s.expired) return;
    try {
      await setTimer(this.deps.records, VECTOR_STORES_EXPIRE_TIMER, scope, `${s.id}:${at}`, at);
    } catch (e) {
      if (!(e instanceof DuplicateRecord)) throw e;
    }
  }

  /** The expiry timer's handler: expire the store if it is due, else arm the next timer. */
  async onExpiryTimer(scope: Scope, targetId: string): Promise<void> {
    const id = targetId.split(":")[0]!;
    const rec = await this.stores.get(scope, id);
    if (!rec || rec.data.expired) return;
    if (this.isPastExpiry(rec.data)) await this.markExpired(scope, id);
    else await this.armExpiry(scope, rec.data);
  }

  /** Read-modify-write of a store with compare-and-set, retried when another write came first. */
  private mutateStore(scope: Scope, id: string, change: (s: StoreRecord) => StoreRecord): Promise<StoredRecord<StoreRecord>> {
    return this.stores.mutate(scope, id, (rec) => {
      if (!rec) throw notFound("vector store", id, "vector_store_id");
      const data = change(rec.data);
      if (data === rec.data) return { write: "none", result: rec };
      // Each write moves a record's version on by one.
      return { write: "update", data, result: { ...rec, data, version: rec.version + 1 } };
    });
  }

  // ---- files ----

  /** The Files behind `items`, in order; 404 naming the request field for one that does not exist. */
  async loadFiles(scope: Scope, items: AttachItem[]): Promise<FileView[]> {
    const out: FileView[] = [];
    for (const item of items) {
      const f = await this.fileStore.find(scope, item.fileId);
      if (!f) throw notFound("file", item.fileId, item.param);
      out.push(f);
    }
    return out;
  }

  /**
   * Attaches files (each `items[i]` with `files[i]`, its File): in_progress records and one
   * ingestion job per file. A file already in the store is attached again: re-ingested with the
   * new attributes and chunking, its earlier job told to stand down.
   *
   * The jobs are enqueued before the records are written: a job that starts first (on another
   * instance) finds no record, or the attachment its payload `replaces`, and retries shortly,
   * whereas records written first would be stranded without a job by a crash in between.
   */
  async attach(scope: Scope, store: StoredRecord<StoreRecord>, requested: AttachItem[], requestedFiles: FileView[], batchId: string | null): Promise<void> {
    const storeId = store.id;
    // A file named twice in one request is attached once (its first mention counts).
    const seen = new Set<string>();
    const items: AttachItem[] = [];
    const files: FileView[] = [];
    requested.forEach((item, i) => {
      if (seen.has(item.fileId)) return;
      seen.add(item.fileId);
      items.push(item);
      files.push(requestedFiles[i]!);
    });
    const now = this.now();
    const ops: WriteOp[] = [];
    const jobs: Array<{ scope: Scope; kind: string; payload: IngestPayload; id: string }> = [];
    const superseded: string[] = [];

    // The store's embedder: an empty store takes the server's current one; a store with files
    // keeps its own, which must be one this server can run.
    const currentSetup = this.dense();
    let current = currentSetup?.embedder ?? null;
    if (!sameEmbedder(store.data.embedder, current)) {
      const hasFiles = (await this.files.count(scope, { parentId: storeId })) > 0;
      const kept = hasFiles ? storeSetup(store.data.embedder, currentSetup) : null;
      if (kept) current = kept.embedder;
      else if (hasFiles)
        throw new ApiError(
          400,
          `Vector store ${storeId} was indexed with ${describeEmbedder(store.data.embedder)}, but this server now embeds with ${describeEmbedder(current)}. ` +
            `Re-index it to add files: detach its files and attach them again, or create a new vector store.`,
          { param: "vector_store_id", code: "embedder_mismatch" },
        );
      // Empty: its index starts over (the vector length it had fixed goes with it).
      else await this.index.dropStore(storeId);
    }
    // Compare-and-set on its own (searches touch the store all the time), not in the files' batch.
    await this.mutateStore(scope, storeId, (s) => (sameEmbedder(s.embedder, current) && s.lastActiveAt === now ? s : { ...s, embedder: current, lastActiveAt: now }));

    for (const [i, item] of items.entries()) {
      const attachId = newId("").slice(0, 12);
      const existing = await this.files.get(scope, vsFileId(storeId, item.fileId));
      const data: VsFileRecord = {
        storeId,
        fileId: item.fileId,
        filename: files[i]!.filename,
        createdAt: existing?.data.createdAt ?? now,
        status: "in_progress",
        lastError: null,
        attributes: item.attributes,
        chunking: item.chunking,
        usageBytes: 0,
        chunks: 0,
        attachId,
        supersedes: existing ? ingestJobId(storeId, item.fileId, existing.data.attachId) : null,
        batchId,
      };
      if (existing) {
        ops.push({ op: "update", kind: VS_FILE_KIND, scope, id: existing.id, data, tag: "in_progress", expectVersion: existing.version });
        if (existing.data.batchId && existing.data.batchId !== batchId) ops.push(this.del(FILE_BATCH_MEMBER_KIND, scope, batchFileId(existing.data.batchId, item.fileId)));
        superseded.push(data.supersedes!);
      } else {
        ops.push({ op: "insert", kind: VS_FILE_KIND, scope, record: { id: vsFileId(storeId, item.fileId), parentId: storeId, createdAt: now, tag: "in_progress", data } });
        ops.push({ op: "insert", kind: FILE_REF_KIND, scope, record: { id: fileRefId(item.fileId, storeId), parentId: item.fileId, createdAt: now, data: { storeId } } });
      }
      if (batchId) {
        const member = { storeId, fileId: item.fileId };
        if (existing?.data.batchId === batchId) ops.push({ op: "update", kind: FILE_BATCH_MEMBER_KIND, scope, id: batchFileId(batchId, item.fileId), data: member, tag: "in_progress" });
        else ops.push({ op: "insert", kind: FILE_BATCH_MEMBER_KIND, scope, record: { id: batchFileId(batchId, item.fileId), parentId: batchId, createdAt: now, tag: "in_progress", data: member } });
      }
      const payload: IngestPayload = { storeId, fileId: item.fileId, attachId, ...(existing && { replaces: existing.data.attachId }) };
      jobs.push({ scope, kind: VECTOR_STORES_INGEST_JOB, payload, id: ingestJobId(storeId, item.fileId, attachId) });
    }

    await this.jobs.enqueueMany(jobs);
    try {
      await this.deps.records.atomically(ops);
    } catch (e) {
      for (const j of jobs) await this.jobs.cancel(j.id);
      if (e instanceof VersionConflict)
        throw new ApiError(409, "A file of this request was attached by another request at the same time; retry the request.", { code: "conflict", type: "conflict_error", cause: e });
      throw e;
    }
    for (const id of superseded) await this.jobs.cancel(id);
  }

  async getFile(scope: Scope, storeId: string, fileId: string): Promise<StoredRecord<VsFileRecord>> {
    await this.get(scope, storeId);
    const rec = await this.files.get(scope, vsFileId(storeId, fileId));
    if (!rec) throw notFound("vector store file", fileId, "file_id");
    return rec;
  }

  /** The store's record of File `fileId`, if it is attached. */
  async findFile(scope: Scope, storeId: string, fileId: string): Promise<StoredRecord<VsFileRecord> | undefined> {
    return this.files.get(scope, vsFileId(storeId, fileId));
  }

  /** A page of the store's files; `after`/`before` are File ids, as the API shows them. */
  async listFiles(scope: Scope, storeId: string, q: ListQuery, status: FileStatus | undefined) {
    await this.get(scope, storeId);
    const cursor = (id: string | undefined) => (id === undefined ? undefined : vsFileId(storeId, id));
    return this.files.list(scope, { ...q, parentId: storeId, tag: status, after: cursor(q.after), before: cursor(q.before) });
  }

  async updateFileAttributes(scope: Scope, storeId: string, fileId: string, attributes: Attributes | null): Promise<StoredRecord<VsFileRecord>> {
    await this.getUsable(scope, storeId);
    await this.getFile(scope, storeId, fileId);
    const updated = await this.files.mutate(scope, vsFileId(storeId, fileId), (rec) => {
      if (!rec) throw notFound("vector store file", fileId, "file_id");
      const data = { ...rec.data, attributes };
      return { write: "update", data, result: { ...rec, data, version: rec.version + 1 } };
    });
    // Filters see the new attributes at once. (A job still indexing reads them from the record.)
    await this.index.updateAttributes(storeId, fileId, attributes ?? {});
    await this.touch(scope, storeId);
    return updated;
  }

  /** Removes the file from the store: its record and its chunks. The File stays. */
  async detach(scope: Scope, storeId: string, fileId: string): Promise<void> {
    const rec = await this.getFile(scope, storeId, fileId);
    await this.dropFile(scope, rec);
    await this.touch(scope, storeId);
  }

  private async dropFile(scope: Scope, rec: StoredRecord<VsFileRecord>): Promise<void> {
    const { storeId, fileId, batchId, attachId } = rec.data;
    const ops: WriteOp[] = [this.del(VS_FILE_KIND, scope, rec.id), this.del(FILE_REF_KIND, scope, fileRefId(fileId, storeId))];
    if (batchId) ops.push(this.del(FILE_BATCH_MEMBER_KIND, scope, batchFileId(batchId, fileId)));
    await this.deps.records.atomically(ops);
    await this.jobs.cancel(ingestJobId(storeId, fileId, attachId));
    await this.index.removeFile(storeId, fileId);
  }

  /** A File was deleted through the Files API (or expired): it leaves every store that holds it. */
  async onFileDeleted(scope: Scope, fileId: string): Promise<void> {
    for (const ref of await allRecords(this.refs, scope, { parentId: fileId, order: "asc" })) {
      const rec = await this.files.get(scope, vsFileId(ref.data.storeId, fileId));
      if (rec) await this.dropFile(scope, rec);
      else await this.refs.delete(scope, ref.id);
    }
  }

  /**
   * The text of a processed file, as indexed (empty until it is processed). Extracted again from
   * the File on request rather than stored: the same bytes and extractor give the same text, and
   * ingestion does not pay for writing a second copy of every file.
   */
  async fileContent(scope: Scope, storeId: string, fileId: string): Promise<string[]> {
    const rec = await this.getFile(scope, storeId, fileId);
    if (rec.data.status !== "completed") return [];
    const bytes = await this.readFile(scope, fileId);
    if (!bytes) return [];
    try {
      return [(await this.ingester.extract(bytes, rec.data.filename)).text];
    } catch (e) {
      if (e instanceof IngestError) return [];
      throw e;
    }
  }

  /** A File's bytes; undefined when it is gone. */
  async readFile(scope: Scope, fileId: string): Promise<Uint8Array | undefined> {
    const file = await this.fileStore.find(scope, fileId);
    if (!file) return undefined;
    // Whatever its size: the Files area capped it at upload.
    return this.fileStore.readAll(scope, file, { maxBytes: Number.POSITIVE_INFINITY });
  }

  // ---- search ----

  /** `signal`: the caller went away (its query's embedding leaves the encoder's queue). */
  search(scope: Scope, storeId: string, p: SearchParams, signal?: AbortSignal): Promise<{ queries: string[]; hits: StoreHit[] }> {
    return searchStore({ vectorStores: this, index: this.index, dense: this.dense }, scope, storeId, p, signal);
  }

  // ---- what the ingestion job asks ----

  /** The embedder a store's vectors come from; null for a lexical-only store (or one that is gone). */
  async embedderOf(scope: Scope, storeId: string): Promise<Embedder | null> {
    return (await this.stores.get(scope, storeId))?.data.embedder ?? null;
  }

  /** Where the attachment a job was enqueued for stands now. */
  async attachment(scope: Scope, p: IngestPayload): Promise<Attachment> {
    const record = await this.files.get(scope, vsFileId(p.storeId, p.fileId));
    return attachmentState(record, record !== undefined || (await this.stores.get(scope, p.storeId)) !== undefined, p);
  }

  /**
   * Ends an in-progress file's processing: applies `change` (status, error, usage) to its record
   * and its batch membership, compare-and-set, retrying when a concurrent write (an attributes
   * update) came first. `commit` writes the ops (the job commits them with its own end); without
   * it they are written here. Returns the record's data as written, or undefined when the file is
   * no longer this attachment's or no longer in progress (the change did not apply).
   */
  async settleFile(
    scope: Scope,
    storeId: string,
    fileId: string,
    attachId: string | undefined,
    change: (f: VsFileRecord) => Partial<VsFileRecord> | undefined,
    commit?: (ops: WriteOp[]) => Promise<void>,
  ): Promise<VsFileRecord | undefined> {
    return this.files.mutate(
      scope,
      vsFileId(storeId, fileId),
      (rec) => {
        if (!rec || rec.data.status !== "in_progress" || (attachId !== undefined && rec.data.attachId !== attachId)) return { write: "none", result: undefined };
        const patch = change(rec.data);
        if (!patch) return { write: "none", result: undefined };
        const data: VsFileRecord = { ...rec.data, ...patch };
        const also: WriteOp[] = [];
        if (data.batchId) also.push({ op: "update", kind: FILE_BATCH_MEMBER_KIND, scope, id: batchFileId(data.batchId, fileId), data: { storeId, fileId }, tag: data.status });
        return { write: "update", data, tag: data.status, also, result: data };
      },
      commit && { commit },
    );
  }

  // ---- helpers ----

  private del(kind: string, scope: Scope, id: string): WriteOp {
    return { op: "delete", kind, scope, id };
  }
}

/** expires_at = last_active_at + days (the only anchor). */
export function expiresAtOf(s: StoreRecord): number | null {
  return s.expiresAfter ? s.lastActiveAt + s.expiresAfter.days * DAY : null;
}

/** The record kind of the stores' expiry timers (the sweeper calls onExpiryTimer for them). */
export const EXPIRY_TIMER_KIND = timerKind(VECTOR_STORES_EXPIRE_TIMER);

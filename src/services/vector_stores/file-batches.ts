// File batches of a vector store (spec 4.4): a set of Files attached together, with counts by
// status and a cancel that stops the files still in progress. Attaching is the store's own
// (vector-stores.ts); a batch's members are records beside its files, tagged with their status.
import { notFound } from "../../common/errors.js";
import { newId } from "../../common/ids.js";
import { allRecords } from "../../common/pages.js";
import type { SearchIndex } from "../../engines/search/index.js";
import type { JobRunner } from "../../jobs/index.js";
import type { ListQuery, Scope, StoredRecord } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import {
  FILE_BATCH_KIND,
  FILE_BATCH_MEMBER_KIND,
  batchFileId,
  ingestJobId,
  type FileBatchMemberRecord,
  type FileBatchRecord,
  type FileError,
  type FileStatus,
  type VsFileRecord,
} from "./records.js";
import type { VectorStores } from "./vector-stores.js";
import { countByStatus, type AttachItem, type BatchStatus, type BatchView } from "./views.js";

export class FileBatches {
  private readonly batches;
  private readonly members;

  constructor(
    private readonly deps: Pick<ServiceDeps, "records" | "clock">,
    private readonly vs: Pick<VectorStores, "get" | "getUsable" | "loadFiles" | "attach" | "settleFile" | "findFile">,
    private readonly jobs: Pick<JobRunner, "cancel">,
    private readonly index: Pick<SearchIndex, "removeFile">,
  ) {
    this.batches = deps.records.collection<FileBatchRecord>(FILE_BATCH_KIND);
    this.members = deps.records.collection<FileBatchMemberRecord>(FILE_BATCH_MEMBER_KIND);
  }

  async create(scope: Scope, storeId: string, items: AttachItem[]): Promise<StoredRecord<FileBatchRecord>> {
    const store = await this.vs.getUsable(scope, storeId);
    const files = await this.vs.loadFiles(scope, items);
    const now = this.deps.clock.now();
    const batch: FileBatchRecord = { id: newId("vsfb_"), storeId, createdAt: now, cancelled: false };
    const rec = await this.batches.insert(scope, { id: batch.id, parentId: storeId, createdAt: now, data: batch });
    try {
      await this.vs.attach(scope, store, items, files, batch.id);
    } catch (e) {
      await this.batches.delete(scope, batch.id);
      throw e;
    }
    return rec;
  }

  async get(scope: Scope, storeId: string, batchId: string): Promise<StoredRecord<FileBatchRecord>> {
    await this.vs.get(scope, storeId);
    const rec = await this.batches.get(scope, batchId);
    if (!rec || rec.data.storeId !== storeId) throw notFound("vector store file batch", batchId, "batch_id");
    return rec;
  }

  async view(scope: Scope, rec: StoredRecord<FileBatchRecord>): Promise<BatchView> {
    const counts = await countByStatus(scope, this.members, rec.id);
    let status: BatchStatus = "completed";
    // A cancel settles its files one by one (on several instances, while their jobs run
    // elsewhere): the batch reads cancelled only once none is left in progress, so a poller that
    // sees a terminal status never sees a file still running.
    if (counts.in_progress > 0) status = "in_progress";
    else if (rec.data.cancelled) status = "cancelled";
    else if (counts.total > 0 && counts.failed === counts.total) status = "failed";
    return { batch: rec.data, counts, status };
  }

  /**
   * Stops the batch's outstanding files as soon as possible: each still in progress ends failed
   * (see the state notes at the top), its job is cancelled (a running one is aborted mid-call) and
   * whatever it had indexed is removed. Files already processed stay. A batch with nothing left
   * to stop is returned as it is.
   */
  async cancel(scope: Scope, storeId: string, batchId: string): Promise<StoredRecord<FileBatchRecord>> {
    let rec = await this.get(scope, storeId, batchId);
    const outstanding = await allRecords(this.members, scope, { parentId: batchId, tag: "in_progress", order: "asc" });
    if (outstanding.length === 0) return rec;
    // Marked first, so the files settled below are the batch's cancel (a retried cancel after a
    // crash mid-way goes on with those left).
    if (!rec.data.cancelled) rec = (await this.batches.update(scope, batchId, { ...rec.data, cancelled: true })) ?? rec;
    const error: FileError = { code: "server_error", message: `Processing was cancelled: file batch ${batchId} was cancelled before this file was processed.` };
    for (const m of outstanding) {
      const settled = await this.vs.settleFile(scope, storeId, m.data.fileId, undefined, (f) => (f.batchId === batchId ? { status: "failed", lastError: error } : undefined));
      if (!settled) continue;
      await this.jobs.cancel(ingestJobId(storeId, m.data.fileId, settled.attachId));
      await this.index.removeFile(storeId, m.data.fileId);
    }
    return rec;
  }

  async listFiles(scope: Scope, storeId: string, batchId: string, q: ListQuery, status: FileStatus | undefined) {
    await this.get(scope, storeId, batchId);
    const cursor = (id: string | undefined) => (id === undefined ? undefined : batchFileId(batchId, id));
    const page = await this.members.list(scope, { ...q, parentId: batchId, tag: status, after: cursor(q.after), before: cursor(q.before) });
    const records: StoredRecord<VsFileRecord>[] = [];
    for (const m of page.records) {
      const f = await this.vs.findFile(scope, storeId, m.data.fileId);
      if (f) records.push(f);
    }
    return { records, hasMore: page.hasMore };
  }
}

// Where an ingestion job's attachment stands (views.ts, attachmentState). On several instances a
// job can start before the request that enqueued it has written the file's record: for a file
// attached again, the record then still shows the attachment being replaced, and the job must wait
// for its own rather than stand down as if a newer attachment had taken the file over (which left
// the file in progress with no job, the SDK's poller waiting forever).
import { describe, expect, it } from "vitest";
import type { StoredRecord } from "../../../src/storage/types.js";
import type { VsFileRecord } from "../../../src/services/vector_stores/records.js";
import { attachmentState } from "../../../src/services/vector_stores/views.js";

function fileRecord(attachId: string, status: VsFileRecord["status"] = "in_progress"): StoredRecord<VsFileRecord> {
  const data: VsFileRecord = {
    storeId: "vs_1",
    fileId: "file-1",
    filename: "a.txt",
    createdAt: 1,
    status,
    lastError: null,
    attributes: null,
    chunking: { maxTokens: 800, overlapTokens: 400 },
    usageBytes: 0,
    chunks: 0,
    attachId,
    supersedes: null,
    batchId: null,
  };
  return { id: "vs_1:file-1", projectId: "p", parentId: "vs_1", createdAt: 1, expiresAt: null, tag: status, version: 1, data };
}

const first = { storeId: "vs_1", fileId: "file-1", attachId: "A" };
const again = { storeId: "vs_1", fileId: "file-1", attachId: "B", replaces: "A" };

describe("attachmentState", () => {
  it("a first attachment: no record yet is unwritten while the store exists, gone once it does not", () => {
    expect(attachmentState(undefined, true, first)).toEqual({ state: "unwritten" });
    expect(attachmentState(undefined, false, first)).toEqual({ state: "gone" });
  });

  it("an attachment again: the record still showing the attachment it replaces is unwritten, whatever that one's status", () => {
    expect(attachmentState(fileRecord("A"), true, again)).toEqual({ state: "unwritten" });
    expect(attachmentState(fileRecord("A", "completed"), true, again)).toEqual({ state: "unwritten" });
    expect(attachmentState(fileRecord("A", "failed"), true, again)).toEqual({ state: "unwritten" });
  });

  it("a record of any other attachment is superseded: the replaced one's job, and a job with no replaces (enqueued before the field existed)", () => {
    expect(attachmentState(fileRecord("B"), true, first)).toEqual({ state: "superseded" });
    expect(attachmentState(fileRecord("C"), true, again)).toEqual({ state: "superseded" });
    expect(attachmentState(fileRecord("A"), true, { ...again, replaces: undefined })).toEqual({ state: "superseded" });
  });

  it("its own record: current while in progress, gone once settled", () => {
    const rec = fileRecord("B");
    expect(attachmentState(rec, true, again)).toEqual({ state: "current", record: rec });
    expect(attachmentState(fileRecord("B", "failed"), true, again)).toEqual({ state: "gone" });
    expect(attachmentState(fileRecord("B", "completed"), true, again)).toEqual({ state: "gone" });
  });
});

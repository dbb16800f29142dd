// File storage per project (spec 8: 2.5 TB; ATRIUM_STORAGE_LIMIT_BYTES for tests and smaller
// deployments). What counts is the bytes of the project's Files, as a running total the record
// store keeps in the same atomic write as every File insert and delete (FILE_BYTES; an expired
// File counts until the sweeper deletes it). The cap holds in two steps:
// - early: POST /v1/uploads against the `bytes` it declares, POST /v1/files and upload parts
//   chunk by chunk, so an upload that plainly does not fit stops while it streams;
// - strict: the write that records a caller's File carries a `cap` op (commit()), so it applies
//   only if the total stays within the cap with that File in it. Uploads racing for the last
//   bytes, on one instance or several sharing PostgreSQL, cannot together pass it; the one
//   refused answers the same 400, and its caller removes the blob it wrote.
// Files the platform writes (batch output, fine-tuning results) count but are not refused.
import { ApiError } from "../common/errors.js";
import { recordTotalMigration } from "../storage/record-totals.js";
import { TotalOverCap, type RecordStore, type RecordTotal, type Scope, type WriteOp } from "../storage/types.js";

/** The files area's record kind and size field: limits sit below the areas and name their kinds. */
export const FILE_BYTES: RecordTotal = { name: "file_bytes", kind: "file", field: "bytes" };

/** Declares FILE_BYTES (the files area lists it among its migrations). */
export const FILE_BYTES_MIGRATION = recordTotalMigration("limits/0001_file_bytes_total", FILE_BYTES);

export class ProjectStorage {
  constructor(
    private readonly records: RecordStore,
    readonly capBytes: number,
  ) {}

  /** Bytes of the project's Files. */
  used(projectId: string): Promise<number> {
    return this.records.total({ projectId }, FILE_BYTES.name);
  }

  /** Refuses `adding` more bytes if they do not fit. */
  async check(projectId: string, adding: number, param: string): Promise<void> {
    const used = await this.used(projectId);
    if (used + adding > this.capBytes) throw this.full(used, adding, param);
  }

  /**
   * The request stream of an upload, counting the bytes fields of each message against the
   * project's room; throws (ending the upload) at the first chunk that does not fit.
   */
  meter<T>(projectId: string, requests: AsyncIterable<T>, param: string): AsyncIterable<T> {
    const self = this;
    return (async function* () {
      const used = await self.used(projectId);
      let adding = 0;
      for await (const r of requests) {
        for (const v of Object.values(r as object)) if (v instanceof Uint8Array) adding += v.byteLength;
        if (used + adding > self.capBytes) throw self.full(used, adding, param);
        yield r;
      }
    })();
  }

  /**
   * Applies `ops`, which record a caller's File of `adding` bytes, only if the project's Files
   * then fit the cap; otherwise nothing is written and it is the 400 naming `param`.
   */
  async commit(scope: Scope, ops: WriteOp[], adding: number, param: string): Promise<void> {
    try {
      await this.records.atomically([...ops, { op: "cap", scope, total: FILE_BYTES.name, max: this.capBytes }]);
    } catch (e) {
      if (e instanceof TotalOverCap) throw this.full(e.value - adding, adding, param);
      throw e;
    }
  }

  private full(used: number, adding: number, param: string): ApiError {
    return new ApiError(
      400,
      `This project's file storage is full: ${used} of its ${this.capBytes} bytes are in use, and this upload needs at least ${adding} more. Delete files to make room.`,
      { param, code: "storage_limit_exceeded" },
    );
  }
}

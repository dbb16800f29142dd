// File storage per project (spec 8: 2.5 TB; ATRIUM_STORAGE_LIMIT_BYTES for tests and smaller
// deployments). What counts is the bytes of the project's live Files. An upload is checked as it
// arrives: POST /v1/uploads against the `bytes` it declares, POST /v1/files and upload parts
// chunk by chunk, so an upload that would pass the cap stops there and is refused whole (the
// blob store drops its temp file; no record is written). Two uploads racing for the last bytes
// can both pass the check: the cap may be exceeded by what is in flight at one moment, no more.
import { ApiError } from "../common/errors.js";
import type { RecordStore } from "../storage/types.js";

// The files area's record kind: limits sit below the areas and count their records by kind.
const FILE_KIND = "file";

export class ProjectStorage {
  constructor(
    private readonly records: RecordStore,
    readonly capBytes: number,
  ) {}

  /** Bytes of the project's live Files. */
  used(projectId: string): Promise<number> {
    return this.records.collection<{ bytes: number }>(FILE_KIND).sum({ projectId }, "bytes");
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

  private full(used: number, adding: number, param: string): ApiError {
    return new ApiError(
      400,
      `This project's file storage is full: ${used} of its ${this.capBytes} bytes are in use, and this upload needs at least ${adding} more. Delete files to make room.`,
      { param, code: "storage_limit_exceeded" },
    );
  }
}

// The files area's API for other areas: everything they do with Files (read one, stream or read
// its bytes, create one, share its bytes, delete it) goes through FilesApi, so the File record
// kinds stay private to this folder. Reached through `filesApi(deps)` from files/index.ts.
import { capChars, MAX_ID_CHARS } from "../../common/caps.js";
import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { ApiError, notFound } from "../../common/errors.js";
import { BlobTooLarge, VersionConflict, type ListPage, type ListQuery, type Scope, type StoredRecord, type WriteOp } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { MAX_FILE_BYTES, mimeFor, newFileId, releaseFileBytes } from "./files.js";
import { FILE_KIND, FILE_SHARE_KIND, type FileRecord, type FileShareRecord } from "./records.js";

/** A File as other areas see it. */
export interface FileView {
  id: string;
  bytes: number;
  filename: string;
  purpose: string;
  mimeType: string;
  /** Unix seconds. */
  createdAt: number;
  /** Unix seconds; null = never. */
  expiresAt: number | null;
  /** Every stored File is processed: its bytes are complete once the record exists. */
  status: "processed";
  /** Where the bytes are in the BlobStore. */
  blobKey: string;
}

/** The metadata of a File to create; `createdAt` defaults to the clock, `mimeType` to the filename's. */
export interface NewFile {
  filename: string;
  purpose: string;
  mimeType?: string;
  createdAt?: number;
  expiresAt?: number | null;
}

function viewOf(r: FileRecord): FileView {
  return {
    id: r.id,
    bytes: r.bytes,
    filename: r.filename,
    purpose: r.purpose,
    mimeType: r.mimeType,
    createdAt: r.createdAt,
    expiresAt: r.expiresAt,
    status: "processed",
    blobKey: r.id,
  };
}

const tooLarge = (limit: number, param: string) =>
  new ApiError(413, `File is too large: the limit is ${limit} bytes${limit === MAX_FILE_BYTES ? " (512 MB)" : ""}.`, { param, code: "file_too_large" });

export class FilesApi {
  constructor(private readonly deps: Pick<ServiceDeps, "records" | "blobs" | "clock" | "events" | "log">) {}

  private get records() {
    return this.deps.records.collection<FileRecord>(FILE_KIND);
  }

  /** The File `id` of the scope's project, or undefined when absent or expired. */
  async find(scope: Scope, id: string): Promise<FileView | undefined> {
    const r = await this.records.get(scope, id);
    return r && viewOf(r.data);
  }

  /** The File `id`, or a 404 "No such File object" naming `param`. */
  async get(scope: Scope, id: string, param: string | null = "file_id"): Promise<FileView> {
    // Every area names Files through here: an id no File can have is refused before the lookup.
    if (param !== null) capChars(id, param, MAX_ID_CHARS);
    const r = await this.records.get(scope, id);
    if (!r) throw notFound("File object", id, param);
    return viewOf(r.data);
  }

  /** The scope's Files in list order (`tag` filters by purpose). */
  async list(scope: Scope, query: ListQuery): Promise<ListPage<FileView>> {
    const page = await this.records.list(scope, query);
    return { hasMore: page.hasMore, records: page.records.map((r): StoredRecord<FileView> => ({ ...r, data: viewOf(r.data) })) };
  }

  /**
   * A File's bytes as a stream, [start, end] inclusive when `range` is given. Takes the File's id
   * (404 when absent) or a view already read.
   */
  async open(scope: Scope, file: string | FileView, range?: { start: number; end: number }): Promise<Readable> {
    const view = typeof file === "string" ? await this.get(scope, file) : file;
    return this.deps.blobs.get(view.blobKey, range);
  }

  /**
   * A File's bytes in one buffer. Over `maxBytes` it is a 413 naming `param` (the caller checks
   * `bytes` first when it answers differently); absent, a 404.
   */
  async readAll(scope: Scope, file: string | FileView, opts: { maxBytes: number; param?: string }): Promise<Buffer> {
    const param = opts.param ?? "file_id";
    const view = typeof file === "string" ? await this.get(scope, file, param) : file;
    if (view.bytes > opts.maxBytes) throw tooLarge(opts.maxBytes, param);
    return buffer(this.deps.blobs.get(view.blobKey));
  }

  /** A fresh File id, for bytes written with writeContent() before the File is recorded. */
  newId(): string {
    return newFileId();
  }

  /**
   * Streams the content of File `id` (not yet recorded) into the blob store; returns its size.
   * Over `maxBytes` (default MAX_FILE_BYTES) nothing is kept and it is a 413 naming `param`.
   */
  async writeContent(id: string, source: AsyncIterable<Uint8Array> | Readable, opts: { maxBytes?: number; param?: string } = {}): Promise<number> {
    const maxBytes = opts.maxBytes ?? MAX_FILE_BYTES;
    try {
      return (await this.deps.blobs.put(id, source, { maxBytes })).bytes;
    } catch (e) {
      if (e instanceof BlobTooLarge) throw tooLarge(maxBytes, opts.param ?? "file");
      throw e;
    }
  }

  /**
   * Writes the content of File `id` (not yet recorded) as the concatenation of existing blobs, in
   * order (an upload's parts); returns its size and hex MD5.
   */
  async concatContent(id: string, blobKeys: string[]): Promise<{ bytes: number; md5: string | undefined }> {
    const info = await this.deps.blobs.concat(id, blobKeys);
    return { bytes: info.bytes, md5: info.md5 };
  }

  /** Removes content written for a File that is not going to be recorded. */
  async discardContent(id: string): Promise<void> {
    await this.deps.blobs.delete(id);
  }

  /**
   * The File `id` whose `bytes` are already written (writeContent), as the insert op for the
   * caller's own atomic write: the File exists exactly when the caller's write applies. If that
   * write fails, the caller discards the content.
   */
  prepare(scope: Scope, id: string, bytes: number, meta: NewFile): { file: FileView; ops: WriteOp[] } {
    const createdAt = meta.createdAt ?? this.deps.clock.now();
    const rec: FileRecord = {
      id,
      bytes,
      createdAt,
      filename: meta.filename,
      purpose: meta.purpose,
      mimeType: meta.mimeType ?? mimeFor(meta.filename),
      expiresAt: meta.expiresAt ?? null,
    };
    return {
      file: viewOf(rec),
      ops: [{ op: "insert", kind: FILE_KIND, scope, record: { id, createdAt, expiresAt: rec.expiresAt, tag: rec.purpose, data: rec } }],
    };
  }

  /** Creates a File from a stream of bytes (nothing is kept when it fails). */
  async createFromStream(scope: Scope, meta: NewFile & { source: AsyncIterable<Uint8Array> | Readable; maxBytes?: number }): Promise<FileView> {
    const id = this.newId();
    const bytes = await this.writeContent(id, meta.source, { maxBytes: meta.maxBytes });
    const { file, ops } = this.prepare(scope, id, bytes, meta);
    try {
      await this.deps.records.atomically(ops);
    } catch (e) {
      await this.discardContent(id);
      throw e;
    }
    return file;
  }

  /** Creates a File holding `bytes`. */
  createFromBytes(scope: Scope, meta: NewFile & { bytes: Uint8Array }): Promise<FileView> {
    return this.createFromStream(scope, { ...meta, source: Readable.from([Buffer.from(meta.bytes)]) });
  }

  /**
   * Deletes File `id` (404 when absent): its record, then whatever other areas hold of it
   * (deps.events.fileDeleted), then its bytes unless a share still holds them.
   */
  async delete(scope: Scope, id: string): Promise<void> {
    if (!(await this.records.delete(scope, id))) await this.get(scope, id);
    await this.deps.events.fileDeleted(scope, id);
    await releaseFileBytes(this.deps, scope, id);
  }

  /**
   * The ops that make holder `holderId` (a container file) share File `fileId`'s bytes, for the
   * caller's atomic write: the share record, and a no-change update of the File that fails the
   * write with a VersionConflict (see fileConflict()) if the File changed or went meanwhile,
   * so its bytes are never freed under the new holder. 404 naming `param` when the File is absent.
   */
  async share(scope: Scope, fileId: string, holderId: string, holder: FileShareRecord, param = "file_id"): Promise<{ file: FileView; ops: WriteOp[] }> {
    const f = await this.records.get(scope, fileId);
    if (!f) throw notFound("File object", fileId, param);
    return { file: viewOf(f.data), ops: this.shareOps(scope, f, holderId, holder) };
  }

  private shareOps(scope: Scope, f: StoredRecord<FileRecord>, holderId: string, holder: FileShareRecord): WriteOp[] {
    return [
      { op: "insert", kind: FILE_SHARE_KIND, scope, record: { id: holderId, parentId: f.id, createdAt: this.deps.clock.now(), data: holder } },
      { op: "update", kind: FILE_KIND, scope, id: f.id, data: f.data, expectVersion: f.version },
    ];
  }

  /** The op that ends holder `holderId`'s share, for the caller's atomic write; then call release(). */
  unshareOp(scope: Scope, holderId: string): WriteOp {
    return { op: "delete", kind: FILE_SHARE_KIND, scope, id: holderId };
  }

  /** Frees File `fileId`'s bytes once neither the File nor any share holds them. */
  release(scope: Scope, fileId: string): Promise<void> {
    return releaseFileBytes(this.deps, scope, fileId);
  }

  /** The id of the File whose change failed a write made with share() ops, else undefined. */
  fileConflict(e: unknown): string | undefined {
    return e instanceof VersionConflict && e.kind === FILE_KIND ? e.id : undefined;
  }
}

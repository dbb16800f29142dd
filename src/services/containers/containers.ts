// Containers (spec 4.2, 2.2): the domain rules and storage behind ContainersService.
//
// Records: the container (tag = its name, for the exact-match `name` filter); its files (parent =
// the container); one path record per file (id "<container>:<path>") so two uploads can never
// take the same path; its skills (inline bundles keep their bytes in a blob under the skill's id).
// A container file made from a file_id shares the File's blob (FilesApi.share), and whichever
// holder goes last frees the bytes (FilesApi.release).
//
// Life cycle: running → expired after `expires_after.minutes` without activity, or deleted.
// Activity (any call on the container or its files, except listing containers) moves
// last_active_at and, in the same transaction, the due time of a durable timer; the sweeper fires
// it after a restart too. An expired container keeps its record (retrieve shows `expired`); its
// files and skills are purged. Deleting writes a purge timer in the same transaction as the
// delete, so a crash half-way through the clean-up is finished by the sweeper.
import { removeBlobsOfDeleted } from "../../common/blobs.js";
import { Readable } from "node:stream";
import { ApiError, invalidParam, missingParam, notFound } from "../../common/errors.js";
import { newId } from "../../common/ids.js";
import type { ListQuery, Scope, StoredRecord, WriteOp } from "../../storage/types.js";
import { BlobTooLarge, DuplicateRecord } from "../../storage/types.js";
import { timerKind, type TimerData } from "../../jobs/expiry.js";
import type { ServiceDeps } from "../deps.js";
import { filesApi, MAX_FILE_BYTES, mimeFor, type FilesApi, type FileView } from "../files/index.js";
import { checkNetworkPolicy } from "./network-policy.js";
import {
  CONTAINER_FILE_KIND,
  CONTAINER_KIND,
  CONTAINER_PATH_KIND,
  CONTAINER_SKILL_KIND,
  type ContainerFileRecord,
  type ContainerRecord,
  type SkillRecord,
} from "./records.js";
import type { SecretBox } from "./secrets.js";
import { checkSkills, type SkillSpec } from "./skills.js";

export const EXPIRY_TIMER = "containers.expire";
export const PURGE_TIMER = "containers.purge";

export const MEMORY_LIMITS = ["1g", "4g", "16g", "64g"] as const;
export const DEFAULT_MINUTES = 20;
export const MIN_MINUTES = 1;
export const MAX_MINUTES = 1440;
export const MAX_NAME_CHARS = 256;
export const MAX_FILE_IDS = 100;
export const MOUNT_DIR = "/mnt/data";
/** A file name's limit on common file systems (bytes of UTF-8). */
const MAX_FILENAME_BYTES = 255;

export interface CreateContainerInput {
  name?: string;
  expiresAfter?: { anchor?: string; minutes?: number };
  fileIds: string[];
  memoryLimit?: string;
  networkPolicy?: Parameters<typeof checkNetworkPolicy>[0];
  skills: Parameters<typeof checkSkills>[0];
}

/** Associated data of a sealed secret: it opens only for this container, domain and name. */
export const secretContext = (containerId: string, domain: string, name: string) => `container/${containerId}/${domain}/${name}`;

const deadlineOf = (c: ContainerRecord) => c.lastActiveAt + c.minutes * 60;
const pathId = (containerId: string, path: string) => `${containerId}:${path}`;

/** The record that reserves `path` in a container (its unique id settles races for a name). */
function pathOp(scope: Scope, containerId: string, path: string, fileId: string, now: number): WriteOp {
  return { op: "insert", kind: CONTAINER_PATH_KIND, scope, record: { id: pathId(containerId, path), parentId: containerId, createdAt: now, data: { fileId } } };
}

function expiredError(c: ContainerRecord): ApiError {
  return new ApiError(400, `Invalid 'container_id': container ${c.id} expired after ${c.minutes} minutes without activity, and its files are gone. Create a new container.`, {
    param: "container_id",
    code: "container_expired",
  });
}

function checkMinutes(ea: CreateContainerInput["expiresAfter"]): number {
  if (!ea) return DEFAULT_MINUTES;
  if (ea.anchor === undefined) throw missingParam("expires_after.anchor");
  if (ea.anchor !== "last_active_at")
    throw invalidParam("expires_after.anchor", `Invalid value for 'expires_after.anchor': expected 'last_active_at', got '${ea.anchor}'.`);
  if (ea.minutes === undefined) throw missingParam("expires_after.minutes");
  if (ea.minutes < MIN_MINUTES || ea.minutes > MAX_MINUTES)
    throw invalidParam(
      "expires_after.minutes",
      `Invalid value for 'expires_after.minutes': expected ${MIN_MINUTES} to ${MAX_MINUTES}, got ${ea.minutes}.`,
      "integer_out_of_range",
    );
  return ea.minutes;
}

/**
 * The name a file gets in the container: the last component of the uploaded name (no
 * directories), refused when empty, "." / "..", with control characters, or over 255 bytes.
 */
export function baseName(raw: string | undefined, param: string): string {
  const name = (raw ?? "").split(/[\\/]/).pop()!.trim();
  if (!name) throw invalidParam(param, `Invalid '${param}': the file has no name.`, "invalid_filename");
  if (name === "." || name === ".." || /[\u0000-\u001f\u007f]/.test(name))
    throw invalidParam(param, `Invalid '${param}': '${name.replace(/[\u0000-\u001f\u007f]/g, "?")}' is not a usable file name.`, "invalid_filename");
  if (Buffer.byteLength(name) > MAX_FILENAME_BYTES)
    throw invalidParam(param, `Invalid '${param}': a file name can be at most ${MAX_FILENAME_BYTES} bytes.`, "invalid_filename");
  return name;
}

/**
 * The n-th candidate path for `name`: "report.txt", then "report (1).txt", "report (2).txt", ...
 * (the number goes before the last extension; a leading dot is not an extension).
 */
export function candidatePath(name: string, n: number): string {
  if (n === 0) return `${MOUNT_DIR}/${name}`;
  const dot = name.lastIndexOf(".");
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ""];
  return `${MOUNT_DIR}/${stem} (${n})${ext}`;
}

export class Containers {
  private readonly sharedFiles: FilesApi;

  constructor(
    private readonly deps: ServiceDeps,
    private readonly secrets: SecretBox,
  ) {
    this.sharedFiles = filesApi(deps);
  }

  get containers() {
    return this.deps.records.collection<ContainerRecord>(CONTAINER_KIND);
  }
  get files() {
    return this.deps.records.collection<ContainerFileRecord>(CONTAINER_FILE_KIND);
  }
  private get skills() {
    return this.deps.records.collection<SkillRecord>(CONTAINER_SKILL_KIND);
  }
  private get paths() {
    return this.deps.records.collection<{ fileId: string }>(CONTAINER_PATH_KIND);
  }

  // ---- containers ----

  async create(scope: Scope, input: CreateContainerInput): Promise<ContainerRecord> {
    if (input.name === undefined) throw missingParam("name");
    if (!input.name.trim()) throw invalidParam("name", "Invalid 'name': it cannot be empty.", "empty_string");
    if (input.name.length > MAX_NAME_CHARS) throw invalidParam("name", `Invalid 'name': at most ${MAX_NAME_CHARS} characters.`, "string_above_max_length");
    const memoryLimit = input.memoryLimit ?? "1g";
    if (!(MEMORY_LIMITS as readonly string[]).includes(memoryLimit))
      throw invalidParam("memory_limit", `Invalid value for 'memory_limit': '${memoryLimit}'. Supported values are: ${MEMORY_LIMITS.map((m) => `'${m}'`).join(", ")}.`);
    const minutes = checkMinutes(input.expiresAfter);
    const { policy, secrets } = checkNetworkPolicy(input.networkPolicy);
    const skills = checkSkills(input.skills);
    if (input.fileIds.length > MAX_FILE_IDS) throw invalidParam("file_ids", `'file_ids' can list at most ${MAX_FILE_IDS} files.`, "array_above_max_length");
    const sources: FileView[] = [];
    for (const [i, fileId] of input.fileIds.entries()) {
      const param = `file_ids[${i}]`;
      if (!fileId) throw invalidParam(param, `Invalid '${param}': empty file id.`);
      if (input.fileIds.indexOf(fileId) !== i) throw invalidParam(param, `Invalid '${param}': '${fileId}' is listed more than once.`);
      sources.push(await this.sharedFiles.get(scope, fileId, param));
    }

    const id = newId("cntr_");
    const now = this.deps.clock.now();
    const rec: ContainerRecord = {
      id,
      name: input.name,
      createdAt: now,
      status: "running",
      minutes,
      lastActiveAt: now,
      memoryLimit,
      networkPolicy: policy,
      domainSecrets: secrets.map((s) => ({ domain: s.domain, name: s.name, sealed: this.secrets.seal(s.value, secretContext(id, s.domain, s.name)) })),
    };
    const ops: WriteOp[] = [
      { op: "insert", kind: CONTAINER_KIND, scope, record: { id, createdAt: now, tag: rec.name, data: rec } },
      { op: "insert", kind: timerKind(EXPIRY_TIMER), scope, record: { id, createdAt: now, expiresAt: deadlineOf(rec), data: { targetId: id } satisfies TimerData } },
    ];
    const skillBlobs: string[] = [];
    try {
      for (const s of skills) {
        const skill = await this.storeSkill(s, skillBlobs);
        ops.push({ op: "insert", kind: CONTAINER_SKILL_KIND, scope, record: { id: skill.id, parentId: id, createdAt: now, data: skill } });
      }
      // A new container: the paths only need to differ from each other.
      const taken = new Set<string>();
      for (const [i, f] of sources.entries()) {
        const name = baseName(f.filename, `file_ids[${i}]`);
        let path = candidatePath(name, 0);
        for (let n = 1; taken.has(path); n++) path = candidatePath(name, n);
        taken.add(path);
        const shared = await this.sharedFile(scope, id, f.id, path, now, `file_ids[${i}]`);
        ops.push(...shared.ops, pathOp(scope, id, path, shared.rec.id, now));
      }
      await this.deps.records.atomically(ops);
    } catch (e) {
      for (const key of skillBlobs) await this.deps.blobs.delete(key);
      // A source File deleted while this request ran.
      const gone = this.sharedFiles.fileConflict(e);
      if (gone !== undefined) throw notFound("File object", gone, `file_ids[${input.fileIds.indexOf(gone)}]`);
      throw e;
    }
    return rec;
  }

  private async storeSkill(s: SkillSpec, blobs: string[]): Promise<SkillRecord> {
    const id = newId("skill_");
    if (s.type === "skill_reference") return { id, type: s.type, skillId: s.skillId, version: s.version };
    blobs.push(id);
    const { bytes } = await this.deps.blobs.put(id, Readable.from([s.zip]));
    return { id, type: "inline", name: s.name, description: s.description, bytes };
  }

  /** The container (404 when absent or another project's), expired first if its time is up. */
  async get(scope: Scope, id: string): Promise<StoredRecord<ContainerRecord>> {
    const r = await this.containers.get(scope, id);
    if (!r) throw notFound("Container", id, "container_id");
    // Past its deadline but not yet swept: it is expired all the same.
    if (r.data.status === "running" && this.deps.clock.now() >= deadlineOf(r.data)) {
      await this.expire(scope, id);
      return this.get(scope, id);
    }
    return r;
  }

  /** GET /containers/{id}: counts as activity while running; an expired one is shown as it is. */
  async retrieve(scope: Scope, id: string): Promise<ContainerRecord> {
    const r = await this.get(scope, id);
    return r.data.status === "running" ? (await this.touch(scope, id)).data : r.data;
  }

  list(scope: Scope, q: ListQuery, name: string | undefined) {
    return this.containers.list(scope, { ...q, tag: name });
  }

  /**
   * A running container, touched: last_active_at = now and the expiry timer moved, in one
   * transaction. The timer update only applies while the timer is not yet due (the store hides
   * due rows), so a touch can never race the sweeper into reviving an expiring container.
   */
  async touch(scope: Scope, id: string): Promise<StoredRecord<ContainerRecord>> {
    return this.containers.mutate(scope, id, async (cur) => {
      const touched = await this.touched(scope, id, cur);
      if (touched.data === cur!.data) return { write: "none", result: cur! };
      return { write: "update", data: touched.data, also: touched.also, result: { ...cur!, data: touched.data, version: cur!.version + 1 } };
    });
  }

  /**
   * What touching `cur` writes: the container with last_active_at = now (the same object when it
   * already is now) and the timer's move. Absent: 404; not running: container_expired, after
   * expiring it first when its time is up but the sweeper has not come yet.
   */
  private async touched(scope: Scope, id: string, cur: StoredRecord<ContainerRecord> | undefined): Promise<{ data: ContainerRecord; also: WriteOp[] }> {
    if (!cur) throw notFound("Container", id, "container_id");
    const now = this.deps.clock.now();
    if (cur.data.status === "running" && now >= deadlineOf(cur.data)) {
      await this.expire(scope, id);
      throw expiredError(cur.data);
    }
    if (cur.data.status !== "running") throw expiredError(cur.data);
    if (cur.data.lastActiveAt === now) return { data: cur.data, also: [] };
    const data: ContainerRecord = { ...cur.data, lastActiveAt: now };
    return { data, also: [{ op: "update", kind: timerKind(EXPIRY_TIMER), scope, id, data: { targetId: id } satisfies TimerData, expiresAt: deadlineOf(data) }] };
  }

  async delete(scope: Scope, id: string): Promise<void> {
    await this.containers.mutate(scope, id, (cur) => {
      if (!cur) throw notFound("Container", id, "container_id");
      const now = this.deps.clock.now();
      return {
        write: "delete",
        also: [
          { op: "delete", kind: timerKind(EXPIRY_TIMER), scope, id },
          { op: "insert", kind: timerKind(PURGE_TIMER), scope, record: { id, createdAt: now, expiresAt: now, data: { targetId: id } satisfies TimerData } },
        ],
        result: undefined,
      };
    });
    await this.purge(scope, id);
    await this.deps.records.collection(timerKind(PURGE_TIMER)).delete(scope, id);
  }

  /**
   * Expiry timer handler (and the lazy path in get): a running container becomes expired and its
   * files and skills go. The timer is authoritative: a touch cannot move a due timer (see touch).
   * Idempotent, so a crash half-way is finished when the sweeper retries.
   */
  async expire(scope: Scope, id: string): Promise<void> {
    const exists = await this.containers.mutate(scope, id, (cur) => {
      if (!cur) return { write: "none", result: false }; // deleted: its purge timer cleans up
      if (cur.data.status !== "running") return { write: "none", result: true };
      return { write: "update", data: { ...cur.data, status: "expired" }, result: true };
    });
    if (exists) await this.purge(scope, id);
  }

  /** Removes every file and skill of a container (whose record is expired or gone). */
  async purge(scope: Scope, containerId: string): Promise<void> {
    // Each pass removes what it lists, so listing again from the start always makes progress.
    for (;;) {
      const page = await this.files.list(scope, { parentId: containerId, limit: 200, order: "asc" });
      for (const f of page.records) await this.removeFile(scope, f.data);
      if (!page.hasMore) break;
    }
    for (;;) {
      const page = await this.skills.list(scope, { parentId: containerId, limit: 200, order: "asc" });
      for (const s of page.records) {
        await this.skills.delete(scope, s.id);
        if (s.data.type === "inline") await removeBlobsOfDeleted(this.deps, [s.id]);
      }
      if (!page.hasMore) break;
    }
  }

  // ---- container files ----

  /** A file of a running container, touching the container. */
  async getFile(scope: Scope, containerId: string, fileId: string): Promise<ContainerFileRecord> {
    await this.touch(scope, containerId);
    const f = await this.files.get(scope, fileId);
    if (!f || f.parentId !== containerId) throw notFound("Container file", fileId, "file_id");
    return f.data;
  }

  async listFiles(scope: Scope, containerId: string, q: ListQuery) {
    await this.touch(scope, containerId);
    return this.files.list(scope, { ...q, parentId: containerId });
  }

  async deleteFile(scope: Scope, containerId: string, fileId: string): Promise<void> {
    const f = await this.getFile(scope, containerId, fileId);
    await this.removeFile(scope, f);
  }

  /** Streams an upload into its own blob, then records it under a free path. */
  async addUploadedFile(scope: Scope, containerId: string, filename: () => string | undefined, chunks: AsyncIterable<Uint8Array>): Promise<ContainerFileRecord> {
    // Checked before any byte is stored: no 512 MB upload into a container that is not there.
    await this.touch(scope, containerId);
    const id = newId("cfile_");
    const bytes = await this.storeUpload(id, chunks);
    try {
      const name = baseName(filename(), "file");
      if (bytes === 0) throw invalidParam("file", "The file is empty.", "empty_file");
      return await this.insertFile(scope, containerId, name, (path, now) => {
        const rec: ContainerFileRecord = { id, containerId, bytes, createdAt: now, path, source: "user", mimeType: mimeFor(name), blobKey: id };
        return { rec, ops: [{ op: "insert", kind: CONTAINER_FILE_KIND, scope, record: { id, parentId: containerId, createdAt: now, data: rec } }] };
      });
    } catch (e) {
      await this.deps.blobs.delete(id);
      throw e;
    }
  }

  /** Streams an uploaded container file into its own blob; over MAX_FILE_BYTES nothing is kept. */
  private async storeUpload(id: string, chunks: AsyncIterable<Uint8Array>): Promise<number> {
    try {
      return (await this.deps.blobs.put(id, chunks, { maxBytes: MAX_FILE_BYTES })).bytes;
    } catch (e) {
      if (e instanceof BlobTooLarge)
        throw new ApiError(413, `File is too large: the limit is ${MAX_FILE_BYTES} bytes (512 MB).`, { param: "file", code: "file_too_large" });
      throw e;
    }
  }

  /** A container file sharing the bytes of the project's File `fileId` (nothing is copied). */
  async addSharedFile(scope: Scope, containerId: string, fileId: string): Promise<ContainerFileRecord> {
    await this.touch(scope, containerId);
    const source = await this.sharedFiles.get(scope, fileId, "file_id");
    const name = baseName(source.filename, "file_id");
    // Each attempt shares the File as it is then: one deleted meanwhile is a 404.
    return this.insertFile(scope, containerId, name, (path, now) => this.sharedFile(scope, containerId, fileId, path, now, "file_id"));
  }

  /**
   * A container file sharing File `fileId`, and its writes (but the path record): the file and
   * the share (FilesApi.share), which fails the transaction if the File is gone or expired by
   * then (otherwise its bytes could be freed under the new file).
   */
  private async sharedFile(scope: Scope, containerId: string, fileId: string, path: string, now: number, param: string) {
    const id = newId("cfile_");
    const share = await this.sharedFiles.share(scope, fileId, id, { containerId }, param);
    const rec: ContainerFileRecord = { id, containerId, bytes: share.file.bytes, createdAt: now, path, source: "user", mimeType: mimeFor(path), blobKey: share.file.blobKey };
    const ops: WriteOp[] = [{ op: "insert", kind: CONTAINER_FILE_KIND, scope, record: { id, parentId: containerId, createdAt: now, data: rec } }, ...share.ops];
    return { rec, ops };
  }

  /**
   * Records a new file of a running container under the first free path for `name`, touching
   * the container in the same write (which fails if it expired or went meanwhile). The path
   * record's unique id settles races between uploads of the same name: the one that loses moves
   * on to the next candidate path.
   */
  private async insertFile(
    scope: Scope,
    containerId: string,
    name: string,
    build: (path: string, now: number) => Promise<{ rec: ContainerFileRecord; ops: WriteOp[] }> | { rec: ContainerFileRecord; ops: WriteOp[] },
  ): Promise<ContainerFileRecord> {
    let n = 0;
    for (;;) {
      try {
        return await this.containers.mutate(scope, containerId, async (cur) => {
          const touched = await this.touched(scope, containerId, cur);
          while (await this.paths.get(scope, pathId(containerId, candidatePath(name, n)))) n++;
          const path = candidatePath(name, n);
          const now = this.deps.clock.now();
          const { rec, ops } = await build(path, now);
          return { write: "update", data: touched.data, also: [...touched.also, ...ops, pathOp(scope, containerId, path, rec.id, now)], result: rec };
        });
      } catch (e) {
        if (e instanceof DuplicateRecord && e.kind === CONTAINER_PATH_KIND) n++;
        else throw e;
      }
    }
  }

  /** Removes a file's records, then its bytes (or its share of a File's bytes). */
  private async removeFile(scope: Scope, f: ContainerFileRecord): Promise<void> {
    const shared = f.blobKey !== f.id;
    await this.deps.records.atomically([
      { op: "delete", kind: CONTAINER_FILE_KIND, scope, id: f.id },
      { op: "delete", kind: CONTAINER_PATH_KIND, scope, id: pathId(f.containerId, f.path) },
      ...(shared ? [this.sharedFiles.unshareOp(scope, f.id)] : []),
    ]);
    if (shared) await this.sharedFiles.release(scope, f.blobKey);
    else await removeBlobsOfDeleted(this.deps, [f.id]);
  }
}

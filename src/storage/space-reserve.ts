// Space kept back so that deletes work on a full disk. A file of `bytes` zeros sits in the data
// directory; the first write that meets ENOSPC (a blob, or SQLite's SQLITE_FULL) removes it, so the
// database has room again for what frees space: a DELETE's few pages of WAL. From then until the
// file system has room for the reserve twice over, new blob writes are refused at once (StorageFull,
// a 507 for the caller) instead of eating the released space; once it has, the reserve is written
// again and writes go on, with no restart.
import * as fsp from "node:fs/promises";
import * as path from "node:path";
import { StorageFull } from "./types.js";

const CHUNK = 1 << 20;
/** Error codes that mean "no space left": the file system's, a quota's, SQLite's. */
const NO_SPACE = new Set(["ENOSPC", "EDQUOT", "SQLITE_FULL"]);

/** Whether `err` (or an error it wraps) says the disk or the database is full. */
export function isNoSpace(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof StorageFull) return true;
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NO_SPACE.has(code)) return true;
  }
  return false;
}

/** Free bytes an unprivileged writer may use on the file system holding `dir`. */
export async function freeBytes(dir: string): Promise<number> {
  const st = await fsp.statfs(dir);
  return st.bavail * st.bsize;
}

export class SpaceReserve {
  readonly file: string;
  private released = false;
  private refilling: Promise<void> | undefined;

  constructor(
    private readonly dir: string,
    readonly bytes: number,
  ) {
    this.file = path.join(dir, "reserve.bin");
  }

  /** Whether the reserve is given up (the disk filled) and not yet written again. */
  get isReleased(): boolean {
    return this.released;
  }

  /** At start-up: writes the reserve unless it is there whole; without the space, starts released. */
  async open(): Promise<void> {
    const size = await fsp.stat(this.file).then((s) => s.size, () => -1);
    if (size === this.bytes) return;
    this.released = !(await this.write());
  }

  /** Gives the reserve's space back to the file system (a write met ENOSPC). */
  async release(): Promise<void> {
    this.released = true;
    await fsp.rm(this.file, { force: true });
  }

  /**
   * Before a blob write: refuses it with StorageFull while the reserve is released and the file
   * system has not got room for it twice over; with that room, writes the reserve again first.
   */
  async admit(): Promise<void> {
    if (!this.released) return;
    this.refilling ??= this.refill().finally(() => (this.refilling = undefined));
    await this.refilling;
  }

  private async refill(): Promise<void> {
    if (!this.released) return;
    if (!(await this.write())) throw new StorageFull(`${await freeBytes(this.dir)} bytes free`);
    this.released = false;
  }

  /**
   * Writes the reserve file (temp, fsync, rename) when the file system has room for it twice over;
   * false, leaving nothing, when it has not (checked first, and again by ENOSPC while writing).
   */
  private async write(): Promise<boolean> {
    if ((await freeBytes(this.dir)) < 2 * this.bytes) return false;
    const tmp = `${this.file}.tmp`;
    try {
      const fh = await fsp.open(tmp, "w", 0o600);
      try {
        const zeros = Buffer.alloc(Math.min(CHUNK, this.bytes));
        for (let done = 0; done < this.bytes; done += zeros.length) await fh.write(zeros, 0, Math.min(zeros.length, this.bytes - done));
        await fh.sync();
      } finally {
        await fh.close();
      }
      await fsp.rename(tmp, this.file);
      return true;
    } catch (err) {
      await fsp.rm(tmp, { force: true }).catch(() => {});
      if (isNoSpace(err)) return false;
      throw err;
    }
  }
}

// WAL checkpoints off the event loop. SQLite's own checkpoint runs inside the commit that takes the
// write-ahead log past 1,000 pages (wal_autocheckpoint): it copies ~4 MB into the database file and
// fsyncs it, 10-25 ms on the main thread during an ingestion. The index asks this worker, on its
// own connection, for a PASSIVE checkpoint (which never blocks the writer) at most every
// `intervalMs` while it writes, so the log rarely reaches the automatic threshold; when the
// worker falls behind or fails, the writer's automatic checkpoint still bounds the log.
import { WorkerPool, workerScript } from "../pool/index.js";

export interface CheckpointTask {
  path: string;
}

export interface CheckpointResult {
  /** The checkpoint could not run to the end (a reader still used part of the log). */
  busy: boolean;
  /** Pages in the log, and how many of them are now in the database file. */
  frames: number;
  copied: number;
}

export class WalCheckpointer {
  private pool: WorkerPool<CheckpointTask, CheckpointResult> | null = null;
  private running = false;
  private lastStart = 0;
  private closed = false;
  /** Checkpoints finished, the last one's result and the last failure (diagnostics). */
  done = 0;
  last: CheckpointResult | null = null;
  lastError: string | null = null;

  constructor(
    private readonly path: string,
    private readonly intervalMs = 100,
  ) {}

  /** After a write: starts a checkpoint unless one is running or one started less than `intervalMs` ago. */
  afterWrite(): void {
    if (this.closed || this.running) return;
    const now = Date.now();
    if (now - this.lastStart < this.intervalMs) return;
    this.running = true;
    this.lastStart = now;
    // The worker starts with the first checkpoint: a server that never indexes never starts it.
    this.pool ??= new WorkerPool<CheckpointTask, CheckpointResult>({ script: workerScript(import.meta.url, "wal-checkpoint-worker"), size: 1, name: "atrium-wal-checkpoint" });
    this.pool
      .run({ path: this.path })
      .then(
        (r) => {
          this.done++;
          this.last = r;
        },
        (e: Error) => {
          this.lastError = e.message;
        },
      )
      .finally(() => {
        this.running = false;
      });
  }

  /** A checkpoint is under way. */
  get busy(): boolean {
    return this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.pool?.close();
  }
}

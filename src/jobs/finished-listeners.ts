// The finished-listeners of the runner's kinds (JobRunner.onFinished) and their delivery: at least
// once, since a job's end is marked for delivery in the same write that ends it.
import type { Logger } from "pino";
import type { Job, JobStore } from "./types.js";

export type FinishedListener = (job: Job) => void | Promise<void>;

export class FinishedListeners {
  private readonly byKind = new Map<string, FinishedListener[]>();

  constructor(
    private readonly store: JobStore,
    private readonly log: Pick<Logger, "error" | "warn">,
  ) {}

  add(kind: string, listener: FinishedListener): void {
    const list = this.byKind.get(kind) ?? [];
    list.push(listener);
    this.byKind.set(kind, list);
  }

  /** Whether a listener waits for `kind`: its jobs' ends are then marked for delivery. */
  has(kind: string): boolean {
    return this.byKind.has(kind);
  }

  /** Calls the kind's listeners, then marks the job delivered; a failure leaves it for redeliver(). */
  async deliver(job: Job): Promise<void> {
    const list = this.byKind.get(job.kind);
    if (!list) return;
    try {
      for (const listener of list) await listener(job);
      await this.store.ackNotification(job.id);
    } catch (err) {
      this.log.error({ err, jobId: job.id, kind: job.kind }, "job finished-listener failed; it is called again at the next start");
    }
  }

  /** Delivers the ends that an earlier process recorded but did not deliver. */
  async redeliver(): Promise<void> {
    const kinds = [...this.byKind.keys()];
    if (!kinds.length) return;
    try {
      for (const job of await this.store.pendingNotifications(kinds, 10_000)) await this.deliver(job);
    } catch (err) {
      this.log.error({ err }, "redelivering job notifications failed");
    }
  }
}

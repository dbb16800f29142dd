// Durable timers: a due time stored as a record whose expiresAt is the deadline. The Sweeper
// finds due timers (and expired records) with one indexed query and hands them to the handler
// registered for their kind; a timer survives restarts because it is just a row.
import type { Logger } from "pino";
import type { RecordStore, Scope, StoredRecord } from "../../storage/types.js";
import type { Clock } from "../deps.js";

export interface TimerData {
  /** The record the timer is about. */
  targetId: string;
}

export const timerKind = (name: string) => `timer:${name}`;

export async function setTimer(records: RecordStore, name: string, scope: Scope, targetId: string, dueAt: number): Promise<void> {
  await records.collection<TimerData>(timerKind(name)).insert(scope, { id: targetId, createdAt: dueAt, expiresAt: dueAt, data: { targetId } });
}

export type ExpiryHandler = (scope: Scope, record: StoredRecord<unknown>) => Promise<void>;

export class Sweeper {
  private handlers = new Map<string, ExpiryHandler>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly records: RecordStore,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {}

  /** Called for each expired record of `kind` (a plain kind, or timerKind(name)); must remove it. */
  on(kind: string, handler: ExpiryHandler) {
    this.handlers.set(kind, handler);
  }

  start(intervalMs = 1000) {
    this.timer = setInterval(() => void this.runOnce(), intervalMs);
    this.timer.unref();
    void this.runOnce();
  }

  async stop() {
    clearInterval(this.timer);
    await this.running;
  }

  /** One pass over everything due now. Safe to call concurrently (passes do not overlap). */
  runOnce(): Promise<void> {
    this.running ??= this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass() {
    for (;;) {
      const due = await this.records.expired(this.clock.now(), 200);
      if (!due.length) return;
      for (const { kind, projectId, record } of due) {
        const handler = this.handlers.get(kind);
        try {
          if (handler) await handler({ projectId }, record);
          // Whatever the handler did, the expired row itself goes (no handler: plain expiry).
          await this.records.collection(kind).delete({ projectId }, record.id);
        } catch (err) {
          this.log.error({ err, kind, id: record.id }, "expiry handler failed; will retry");
          return;
        }
      }
    }
  }
}

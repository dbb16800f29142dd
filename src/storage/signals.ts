// Hints between the instances sharing one database: "key K was revoked", "project P changed". A
// signal only shortens a delay that is bounded without it — a key cache entry lives CACHE_MS — so
// a lost signal (a listener reconnecting) costs time, never correctness. (Jobs have their own
// channel: the job store's watch, src/jobs/types.ts.) On PostgreSQL the signals
// travel by LISTEN/NOTIFY on the database the instances already share (one connection per
// instance, postgres-signals.ts, loaded only then); the embedded store has one instance, so they
// stay in the process.
import { EventEmitter } from "node:events";

export interface Signals {
  /** Tells every instance, this one included. Best effort: never throws, never waits. */
  publish(topic: string, message: string): void;
  on(topic: string, handler: (message: string) => void): void;
  close(): Promise<void>;
}

/** One instance: the signals stay in the process. */
export class LocalSignals implements Signals {
  private readonly events = new EventEmitter();
  publish(topic: string, message: string): void {
    queueMicrotask(() => this.events.emit(topic, message));
  }
  on(topic: string, handler: (message: string) => void): void {
    this.events.on(topic, handler);
  }
  async close(): Promise<void> {
    this.events.removeAllListeners();
  }
}

// The default LimitStore: state in this process. Exact (GCRA, see store.ts), synchronous (no
// promise on the request path), and bounded: at most `maxKeys` keys. A key whose TAT has passed
// holds nothing (a fresh key answers the same), so when the map is full those go first; if it is
// still full the oldest keys are dropped, which forgives their recent use — a bound on memory
// wins over exactness for keys nobody has touched for longest. State ends with the process; with
// several instances, or to keep the month's spend over restarts, use the Redis store.
import { rateCharge, rateConforms, type LimitEntry, type LimitStore, type TakeResult } from "./store.js";

export interface MemoryLimitStoreOptions {
  /** Default 100,000 keys (a few per organization, project and uploading key). */
  maxKeys?: number;
  now?: () => number;
}

interface Quota {
  used: number;
  expiresAt: number;
}

export class MemoryLimitStore implements LimitStore {
  readonly kind = "memory" as const;
  private readonly rates = new Map<string, number>();
  private readonly quotas = new Map<string, Quota>();
  private readonly maxKeys: number;
  private readonly clock: () => number;

  constructor(opts: MemoryLimitStoreOptions = {}) {
    this.maxKeys = opts.maxKeys ?? 100_000;
    this.clock = opts.now ?? Date.now;
  }

  get size(): number {
    return this.rates.size + this.quotas.size;
  }

  take(entries: readonly LimitEntry[], costs: readonly number[], now = this.clock()): TakeResult {
    const values = new Array<number>(entries.length);
    let ok = true;
    for (let i = 0; i < entries.length; i++) {
      const e = entries[i]!;
      if (e.kind === "rate") {
        let tat = this.rates.get(e.key) ?? now;
        if (tat < now) tat = now;
        values[i] = tat;
        if (!rateConforms(e, tat, costs[i]!, now)) ok = false;
      } else {
        const q = this.quotas.get(e.key);
        const used = q !== undefined && q.expiresAt > now ? q.used : 0;
        values[i] = used;
        if (costs[i]! > 0 && used + costs[i]! > e.limit) ok = false;
      }
    }
    if (!ok) return { ok, now, values };
    for (let i = 0; i < entries.length; i++) {
      const cost = costs[i]!;
      const e = entries[i]!;
      // A negative cost gives units back to a rate (leases.ts), never moving its TAT before now.
      if (!(cost > 0) && !(cost < 0 && e.kind === "rate")) continue;
      if (e.kind === "rate") {
        const tat = rateCharge(e, values[i]!, cost);
        values[i] = tat < now ? now : tat;
        if (!this.rates.has(e.key)) this.makeRoom(now);
        this.rates.set(e.key, values[i]!);
      } else {
        values[i] = values[i]! + cost;
        const q = this.quotas.get(e.key);
        if (q !== undefined && q.expiresAt > now) q.used = values[i]!;
        else {
          if (q === undefined) this.makeRoom(now);
          this.quotas.set(e.key, { used: values[i]!, expiresAt: e.expiresAt });
        }
      }
    }
    return { ok, now, values };
  }

  /** Before adding a key: drop spent keys when full, then the oldest if that was not enough. */
  private makeRoom(now: number) {
    if (this.size < this.maxKeys) return;
    for (const [k, tat] of this.rates) if (tat <= now) this.rates.delete(k);
    for (const [k, q] of this.quotas) if (q.expiresAt <= now) this.quotas.delete(k);
    // Leave a tenth free so the sweep above runs once per many new keys, not once per key.
    const target = Math.floor(this.maxKeys * 0.9);
    for (const k of this.rates.keys()) {
      if (this.size < target) break;
      this.rates.delete(k);
    }
    for (const k of this.quotas.keys()) {
      if (this.size < target) break;
      this.quotas.delete(k);
    }
  }

  async close(): Promise<void> {
    this.rates.clear();
    this.quotas.clear();
  }
}

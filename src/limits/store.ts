// Where limit state lives. A LimitStore takes the cost of one request from several entries at
// once — the organization's and the project's requests and tokens per minute, the monthly token
// cap, ... — atomically and all-or-nothing: when any entry would go over, nothing is charged, so
// a refused request costs nothing and the retry time it reports is exact.
//
// Rates are GCRA (the generic cell rate algorithm, as in ATM networks and redis-cell): per key one
// number, the theoretical arrival time (TAT). A rate of `limit` per `windowMs` lets a full window's
// worth through at once and then one unit every windowMs/limit; the TAT says when the key is back
// to a full allowance. Quotas are plain counters for a period (a calendar month) that end with it.
//
// Both implementations (memory.ts, redis.ts) run the same arithmetic in IEEE doubles in the same
// order, so given the same `now` they answer the same sequence identically (test/limits/limiter.test.ts).

/** `limit` units per `windowMs`, smoothed (GCRA). */
export interface RateEntry {
  kind: "rate";
  key: string;
  limit: number;
  windowMs: number;
}

/** At most `limit` units until `expiresAt` (ms since the epoch), when the counter starts again. */
export interface QuotaEntry {
  kind: "quota";
  key: string;
  limit: number;
  expiresAt: number;
}

export type LimitEntry = RateEntry | QuotaEntry;

export interface TakeResult {
  /** Every entry conformed and was charged; otherwise nothing was. */
  ok: boolean;
  /** The time the decision was made at (ms since the epoch; Redis's clock for the Redis store). */
  now: number;
  /** Per entry: a rate's TAT, a quota's amount used — after the charge when ok, else as found. */
  values: number[];
}

export interface LimitStore {
  readonly kind: "memory" | "redis";
  /**
   * Charges `costs[i]` to `entries[i]` for every i, or nothing. `now` (ms) is for tests and
   * benches; by default the store's own clock. A negative cost on a rate gives units back (its
   * TAT moves back, never before now); on a quota it is ignored.
   */
  take(entries: readonly LimitEntry[], costs: readonly number[], now?: number): TakeResult | Promise<TakeResult>;
  close(): Promise<void>;
}

// ---- GCRA arithmetic shared by both stores (and mirrored in redis.ts's Lua) ----

/** Whether charging `cost` to a rate whose TAT (already at least `now`) is `tat` stays within it. */
export function rateConforms(e: RateEntry, tat: number, cost: number, now: number): boolean {
  return !(cost > 0 && tat + cost * (e.windowMs / e.limit) - e.windowMs > now);
}

/** The TAT after charging `cost`. */
export function rateCharge(e: RateEntry, tat: number, cost: number): number {
  return tat + cost * (e.windowMs / e.limit);
}

/** Units that could be taken at once now. The epsilon absorbs rounding in windowMs/limit. */
export function rateRemaining(e: RateEntry, tat: number, now: number): number {
  const used = tat > now ? tat - now : 0;
  const n = Math.floor((e.windowMs - used) / (e.windowMs / e.limit) + 1e-9);
  return n < 0 ? 0 : n > e.limit ? e.limit : n;
}

/** Time until the rate is back to its full allowance. */
export function rateResetMs(tat: number, now: number): number {
  return tat > now ? tat - now : 0;
}

/**
 * Time until `cost` would conform (0 if it does now); Infinity when it never can (more than a
 * whole window's worth: a request too large for the limit).
 */
export function rateRetryMs(e: RateEntry, tat: number, cost: number, now: number): number {
  if (cost > e.limit) return Infinity;
  const wait = tat + cost * (e.windowMs / e.limit) - e.windowMs - now;
  return wait > 0 ? wait : 0;
}

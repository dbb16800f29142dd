// Leases: on a shared store (Redis) an instance charges a high rate a few units ahead and spends
// them in the process, so most calls cost no round trip. A call to Redis is ~40–60 µs of this
// process's CPU (the command, the Lua arguments, the reply) against a request's ~120 µs; with a
// lease, one call in up to a hundred pays it.
//
// The allowance stays one: every unit an instance spends was charged in Redis first, and the
// units it holds but has not spent go back (a negative charge, which moves the TAT back and never
// below now) when the lease ends: after `leaseMs`, when a call needs more than is left, or when
// the store closes. What changes is when the others see the charge: while a lease is held, the
// other instances see its unspent units as taken, at most `unitsFor(limit)` (½ % of the limit,
// at most 100) per instance for at most `leaseMs`. So leases are only taken where that is noise:
//   - rates of at least LEASE_MIN_LIMIT per window (smaller limits are charged call by call, so
//     the platform's small per-minute limits answer exactly as on one instance);
//   - for entry lists seen before (RateLimits keeps one per organization and project; a list built
//     for one call would park its units until the lease ends);
//   - with room to spare: a lease that would leave a rate with fewer than 4 leases' worth is given
//     back at once, so near a limit every call is exact again;
//   - never on quotas (monthly token caps), nor on a rate a call charges nothing (a GET's tokens).
// A call that costs more than the lease holds of a leased rate ends the lease (its rest goes back)
// and takes a new one; a call that also costs what the lease holds none of (a request's tokens)
// is charged that part in Redis, and its leased part comes from the lease once Redis admitted it.
// The x-ratelimit-* values of a call served from a lease are the TAT it would have had if the
// leased units had been charged one by one (the lease's TAT less the units still held).
import { rateRemaining, type LimitEntry, type LimitStore, type TakeResult } from "./store.js";

/** Rates below this many units per window are never leased. */
export const LEASE_MIN_LIMIT = 1000;
/** How long an instance holds leased units before giving back what it did not spend. */
export const LEASE_MS = 250;

/** Units leased ahead on a rate of `limit` per window. */
export const unitsFor = (limit: number) => Math.min(100, Math.floor(limit / 200));

interface Lease {
  /** Per entry, whether the lease holds units of it. */
  leased: boolean[];
  /** Per entry, units charged in the store and not yet spent here. */
  units: number[];
  /** Per entry, the store's value after the lease was charged (a rate's TAT). */
  values: number[];
  /** The store's clock minus this process's, when the lease was taken. */
  offset: number;
  expires: number;
  timer: NodeJS.Timeout;
}

export interface LeasedLimitStoreOptions {
  leaseMs?: number;
}

export class LeasedLimitStore implements LimitStore {
  readonly kind: LimitStore["kind"];
  private readonly leaseMs: number;
  private readonly leases = new Map<readonly LimitEntry[], Lease>();
  private readonly seen = new WeakSet<readonly LimitEntry[]>();
  private readonly acquiring = new WeakSet<readonly LimitEntry[]>();
  private readonly refunds = new Set<Promise<unknown>>();

  constructor(
    readonly inner: LimitStore,
    opts: LeasedLimitStoreOptions = {},
  ) {
    this.kind = inner.kind;
    this.leaseMs = opts.leaseMs ?? LEASE_MS;
  }

  take(entries: readonly LimitEntry[], costs: readonly number[], now?: number): TakeResult | Promise<TakeResult> {
    // An explicit time is a test's or a bench's exact sequence: no leases.
    if (now !== undefined) return this.inner.take(entries, costs, now);
    const lease = this.leases.get(entries);
    if (lease !== undefined) {
      const local = Date.now();
      if (local < lease.expires) {
        const fit = fitOf(lease, costs);
        if (fit === "all") return spend(entries, lease, costs, local);
        // The call also costs what the lease does not hold (its tokens): that part is charged in
        // Redis, the rest from the lease once Redis has admitted the call.
        if (fit === "held") return this.takeBeside(entries, lease, costs);
      }
      this.giveBack(entries, lease);
    }
    const extra = this.seen.has(entries) && !this.acquiring.has(entries) ? leaseUnits(entries, costs) : undefined;
    this.seen.add(entries);
    if (extra === undefined) return this.inner.take(entries, costs);
    this.acquiring.add(entries);
    const charged = costs.map((c, i) => c + extra[i]!);
    return Promise.resolve(this.inner.take(entries, charged)).then(
      (r) => {
        this.acquiring.delete(entries);
        // Refused with the lease: the call alone may still fit, and is charged exactly.
        if (!r.ok) return this.inner.take(entries, costs);
        const values = valuesLess(entries, r.values, extra, r.now);
        if (!roomy(entries, extra, r)) this.refund(entries, extra);
        else this.hold(entries, { leased: extra.map((u) => u > 0), units: extra, values: r.values, offset: r.now - Date.now(), expires: Date.now() + this.leaseMs });
        return { ok: true, now: r.now, values };
      },
      (e) => {
        this.acquiring.delete(entries);
        throw e;
      },
    );
  }

  private takeBeside(entries: readonly LimitEntry[], lease: Lease, costs: readonly number[]): Promise<TakeResult> {
    const leased = lease.leased;
    const remote = costs.map((c, i) => (leased[i] ? 0 : c));
    const covered = costs.map((c, i) => (leased[i] ? c : 0));
    return Promise.resolve(this.inner.take(entries, remote)).then(async (r) => {
      if (!r.ok) return r;
      const local = Date.now();
      if (this.leases.get(entries) === lease && local < lease.expires) {
        const held = spend(entries, lease, covered, local);
        for (let i = 0; i < costs.length; i++) if (!leased[i]) held.values[i] = r.values[i]!;
        return { ok: true, now: r.now, values: held.values };
      }
      // The lease ended while Redis answered and its units went back: charge its part there too,
      // and if that is refused, give back what was charged above (the call is all or nothing).
      const rest = await this.inner.take(entries, covered);
      if (!rest.ok) this.refund(entries, remote);
      return rest;
    });
  }

  /** Units held per entry of `entries` (for tests). */
  held(entries: readonly LimitEntry[]): number[] | undefined {
    return this.leases.get(entries)?.units.slice();
  }

  async close(): Promise<void> {
    for (const [entries, lease] of this.leases) this.giveBack(entries, lease);
    await Promise.allSettled([...this.refunds]);
    await this.inner.close();
  }

  private hold(entries: readonly LimitEntry[], lease: Omit<Lease, "timer">) {
    const old = this.leases.get(entries);
    if (old !== undefined) this.giveBack(entries, old);
    const held: Lease = { ...lease, timer: setTimeout(() => this.leases.get(entries) === held && this.giveBack(entries, held), this.leaseMs) };
    held.timer.unref();
    this.leases.set(entries, held);
  }

  private giveBack(entries: readonly LimitEntry[], lease: Lease) {
    this.leases.delete(entries);
    clearTimeout(lease.timer);
    if (lease.units.some((u) => u > 0)) this.refund(entries, lease.units);
  }

  /**
   * Charges the units back as negative costs. Best effort: a refund lost with the connection
   * leaves those units taken until the TAT passes (at most the limit's window), never more.
   */
  private refund(entries: readonly LimitEntry[], units: readonly number[]) {
    const p = Promise.resolve()
      .then(() => this.inner.take(entries, units.map((u) => -u)))
      .catch(() => {})
      .finally(() => this.refunds.delete(p));
    this.refunds.add(p);
  }
}

/**
 * "all": the lease holds every cost; "held": it holds the costs of the entries it leased, and the
 * others are entries it holds nothing of; "short": a leased entry has run out.
 */
function fitOf(lease: Lease, costs: readonly number[]): "all" | "held" | "short" {
  let all = true;
  for (let i = 0; i < costs.length; i++) {
    if (costs[i]! <= lease.units[i]!) continue;
    if (lease.leased[i]) return "short";
    all = false;
  }
  return all ? "all" : "held";
}

function spend(entries: readonly LimitEntry[], lease: Lease, costs: readonly number[], local: number): TakeResult {
  for (let i = 0; i < costs.length; i++) lease.units[i]! -= costs[i]!;
  const now = local + lease.offset;
  return { ok: true, now, values: valuesLess(entries, lease.values, lease.units, now) };
}

/** What the store would hold had `units` not been charged: a rate's TAT moved back, never below now. */
function valuesLess(entries: readonly LimitEntry[], values: readonly number[], units: readonly number[], now: number): number[] {
  const out = new Array<number>(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.kind !== "rate" || units[i] === 0) {
      out[i] = values[i]!;
      continue;
    }
    const tat = values[i]! - units[i]! * (e.windowMs / e.limit);
    out[i] = tat > now ? tat : now;
  }
  return out;
}

/** Per entry, the units to lease beside this call's costs; undefined when none is worth it. */
function leaseUnits(entries: readonly LimitEntry[], costs: readonly number[]): number[] | undefined {
  let any = false;
  const extra = new Array<number>(entries.length);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    const leasable = e.kind === "rate" && costs[i]! > 0 && e.limit >= LEASE_MIN_LIMIT;
    extra[i] = leasable ? unitsFor(e.limit) : 0;
    if (extra[i]! > 0) any = true;
  }
  return any ? extra : undefined;
}

/** Whether every leased rate keeps at least four leases' worth after this one. */
function roomy(entries: readonly LimitEntry[], extra: readonly number[], r: TakeResult): boolean {
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (extra[i]! > 0 && e.kind === "rate" && rateRemaining(e, r.values[i]!, r.now) < 4 * extra[i]!) return false;
  }
  return true;
}

// Leased rate units on a real redis-server (started here on a free port): an instance charges a
// high rate a few units ahead and spends them without a round trip, the allowance stays one
// between instances, unspent units go back when the lease ends, and small limits, lists built for
// one call and rates near their limit are charged call by call as before.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LEASE_MIN_LIMIT, LeasedLimitStore, unitsFor } from "../../src/limits/leases.js";
import { RedisLimitStore } from "../../src/limits/redis.js";
import { rateRemaining, type LimitEntry, type LimitStore, type RateEntry, type TakeResult } from "../../src/limits/store.js";
import { REDIS_INSTALL_HINT, hasRedis, startRedis, type RedisProcess } from "../shared/operability.js";

const available = hasRedis();
if (!available) console.warn(`test/limits/leases.test.ts skipped: ${REDIS_INSTALL_HINT}`);

/** A Redis store that counts its round trips. */
class Counted implements LimitStore {
  readonly kind = "redis" as const;
  calls = 0;
  constructor(readonly store: RedisLimitStore) {}
  take(entries: readonly LimitEntry[], costs: readonly number[], now?: number): Promise<TakeResult> {
    this.calls++;
    return this.store.take(entries, costs, now);
  }
  close() {
    return this.store.close();
  }
}

const DAY = 86_400_000;

describe.skipIf(!available)("leased rate limits on Redis", () => {
  let redis: RedisProcess;
  let n = 0;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => redis?.stop());

  const open = async (prefix: string, leaseMs?: number) => {
    const counted = new Counted(await RedisLimitStore.open(redis.url, { prefix }));
    return { counted, leased: new LeasedLimitStore(counted, { leaseMs }) };
  };
  /** Units left on `entry` as Redis holds it now (a zero-cost take through a plain store). */
  const leftInRedis = async (prefix: string, entry: RateEntry) => {
    const plain = await RedisLimitStore.open(redis.url, { prefix });
    try {
      const r = await plain.take([entry], [0]);
      return rateRemaining(entry, r.values[0]!, r.now);
    } finally {
      await plain.close();
    }
  };

  it("spends leased units without a round trip, with the headers' values of exact charging", async () => {
    const prefix = `lease-a:${n++}:`;
    const entry: RateEntry = { kind: "rate", key: "org:req", limit: 20_000, windowMs: DAY };
    const tokens: RateEntry = { kind: "rate", key: "org:tok", limit: 1_000_000, windowMs: DAY };
    const entries = [entry, tokens];
    const { counted, leased } = await open(prefix, 60_000);
    const left: number[] = [];
    for (let i = 0; i < 300; i++) {
      const r = await leased.take(entries, [1, 0]);
      expect(r.ok).toBe(true);
      left.push(rateRemaining(entry, r.values[0]!, r.now));
      // The token rate (cost 0 on these calls) is never leased.
      expect(rateRemaining(tokens, r.values[1]!, r.now)).toBe(1_000_000);
    }
    // Each call saw one unit fewer, as if charged one by one (a day's window refills nothing here).
    expect(left).toEqual(Array.from({ length: 300 }, (_, i) => 20_000 - 1 - i));
    // The first call only marks the list as reused; then one round trip per lease of 100 + the call.
    expect(unitsFor(entry.limit)).toBe(100);
    expect(counted.calls).toBeLessThanOrEqual(1 + Math.ceil(299 / 101) + 1);
    // Redis holds the calls and the unspent rest of the current lease …
    const held = leased.held(entries)![0]!;
    expect(held).toBeGreaterThan(0);
    expect(await leftInRedis(prefix, entry)).toBe(20_000 - 300 - held);
    // … which closing gives back.
    await leased.close();
    expect(await leftInRedis(prefix, entry)).toBe(20_000 - 300);
  });

  it("two instances share one allowance: every unit is spent once, none is lost", async () => {
    const prefix = `lease-b:${n++}:`;
    const entry: RateEntry = { kind: "rate", key: "org:req", limit: 2_000, windowMs: DAY };
    const a = await open(prefix, 200);
    const b = await open(prefix, 200);
    const listA = [entry];
    const listB = [entry];
    let admitted = 0;
    // Alternate until both refuse; then wait for any lease to end and try again, until nothing more is admitted.
    for (let round = 0; round < 5; round++) {
      let refused = 0;
      for (let i = 0; refused < 4; i++) {
        const r = await (i % 2 ? a : b).leased.take(i % 2 ? listA : listB, [1]);
        if (r.ok) {
          admitted++;
          refused = 0;
        } else refused++;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(admitted).toBe(2_000);
    // Far fewer round trips than calls.
    expect(a.counted.calls + b.counted.calls).toBeLessThan(admitted / 2);
    await Promise.all([a.leased.close(), b.leased.close()]);
    expect(await leftInRedis(prefix, entry)).toBe(0);
  });

  it("a call that also costs tokens charges them in Redis and takes its request from the lease", async () => {
    const prefix = `lease-f:${n++}:`;
    const req: RateEntry = { kind: "rate", key: "req", limit: 10_000, windowMs: DAY };
    const tok: RateEntry = { kind: "rate", key: "tok", limit: 5_000, windowMs: DAY };
    const list = [req, tok];
    const { counted, leased } = await open(prefix, 60_000);
    await leased.take(list, [1, 0]);
    await leased.take(list, [1, 0]); // leases 50 requests, no tokens
    expect(leased.held(list)).toEqual([50, 0]);
    counted.calls = 0;
    for (let i = 0; i < 9; i++) {
      const r = await leased.take(list, [1, 500]);
      expect(r.ok).toBe(true);
      // Tokens as Redis counts them; requests as the lease does (the call's own included).
      expect(rateRemaining(tok, r.values[1]!, r.now)).toBe(5_000 - 500 * (i + 1));
      expect(rateRemaining(req, r.values[0]!, r.now)).toBe(10_000 - 3 - 2 * i);
      expect((await leased.take(list, [1, 0])).ok).toBe(true);
    }
    // One script per token-bearing call, none for the others; the lease was kept throughout.
    expect(counted.calls).toBe(9);
    expect(leased.held(list)).toEqual([50 - 18, 0]);
    // Refused on its tokens: nothing is taken from the lease either.
    expect((await leased.take(list, [1, 600])).ok).toBe(false);
    expect(leased.held(list)).toEqual([32, 0]);
    await leased.close();
    expect(await leftInRedis(prefix, req)).toBe(10_000 - 2 - 18);
    expect(await leftInRedis(prefix, tok)).toBe(5_000 - 4_500);
  });

  it("unspent units go back when the lease ends", async () => {
    const prefix = `lease-c:${n++}:`;
    const entry: RateEntry = { kind: "rate", key: "k", limit: 10_000, windowMs: DAY };
    const { leased } = await open(prefix, 100);
    const list = [entry];
    await leased.take(list, [1]);
    await leased.take(list, [1]);
    expect(leased.held(list)).toEqual([unitsFor(10_000)]);
    expect(await leftInRedis(prefix, entry)).toBe(10_000 - 2 - unitsFor(10_000));
    await new Promise((r) => setTimeout(r, 300));
    expect(leased.held(list)).toBeUndefined();
    expect(await leftInRedis(prefix, entry)).toBe(10_000 - 2);
    await leased.close();
  });

  it("charges call by call: small limits, lists built for one call, rates near their limit, explicit times", async () => {
    const prefix = `lease-d:${n++}:`;
    const { counted, leased } = await open(prefix, 60_000);
    const small: RateEntry[] = [{ kind: "rate", key: "small", limit: LEASE_MIN_LIMIT - 1, windowMs: DAY }];
    for (let i = 0; i < 20; i++) await leased.take(small, [1]);
    expect(counted.calls).toBe(20);
    expect(leased.held(small)).toBeUndefined();

    const big: RateEntry = { kind: "rate", key: "big", limit: 10_000, windowMs: DAY };
    counted.calls = 0;
    for (let i = 0; i < 20; i++) await leased.take([big], [1]);
    expect(counted.calls).toBe(20);

    // 10,000 with 120 left: a lease of 50 would leave fewer than four leases' worth, so it goes back at once.
    const near: RateEntry = { kind: "rate", key: "near", limit: 10_000, windowMs: DAY };
    const list = [near];
    await leased.take(list, [10_000 - 120]);
    counted.calls = 0;
    for (let i = 0; i < 10; i++) expect((await leased.take(list, [1])).ok).toBe(true);
    expect(leased.held(list)).toBeUndefined();
    await new Promise((r) => setTimeout(r, 50));
    expect(await leftInRedis(prefix, near)).toBe(110);

    counted.calls = 0;
    const timed = [{ ...big, key: "timed" }];
    for (let i = 0; i < 5; i++) await leased.take(timed, [1], Date.now());
    expect(counted.calls).toBe(5);
    await leased.close();
  });

  it("a call larger than the lease's rest is charged in Redis, and a refusal charges nothing", async () => {
    const prefix = `lease-e:${n++}:`;
    const entry: RateEntry = { kind: "rate", key: "k", limit: 1_000, windowMs: DAY };
    const { leased } = await open(prefix, 60_000);
    const list = [entry];
    await leased.take(list, [1]);
    await leased.take(list, [1]); // leases 5
    expect(leased.held(list)).toEqual([5]);
    expect((await leased.take(list, [6])).ok).toBe(true); // more than held: the lease goes back, the call is charged
    expect((await leased.take(list, [2_000])).ok).toBe(false);
    await leased.close();
    expect(await leftInRedis(prefix, entry)).toBe(1_000 - 8);
  });
});

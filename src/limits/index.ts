// The limiter set-up: the store (memory by default, Redis with ATRIUM_REDIS_URL), the per-call
// rate limits over it, and the project storage cap. See rate-limits.ts for what is charged.
import type { DescMethod } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import type { CallLimiter } from "../auth/secure.js";
import type { Principal } from "../auth/principal.js";
import { ProjectStorage } from "./storage.js";
import type { LimitsEnv, LimitsFileConfig } from "./config.js";
import { LeasedLimitStore } from "./leases.js";
import { MemoryLimitStore } from "./memory.js";
import { RateLimits, type Rejection } from "./rate-limits.js";

export { RateLimits, type AreaCharge, type RateRule, type LimitCheck, type Rejection } from "./rate-limits.js";
export { MemoryLimitStore } from "./memory.js";
export { limitsEnv, type LimitsEnv, type LimitsFileConfig } from "./config.js";
export { FILE_BYTES, FILE_BYTES_MIGRATION, ProjectStorage } from "./storage.js";

/** The per-call rate limits, or undefined when ATRIUM_RATE_LIMITS=off. */
export async function openRateLimits(
  env: LimitsEnv,
  file: LimitsFileConfig,
  o: { log?: Pick<Logger, "warn">; onReject?: (r: Rejection) => void; now?: () => number } = {},
): Promise<RateLimits | undefined> {
  if (!env.enabled) return undefined;
  // On Redis, high rates are leased a few units ahead (leases.ts): most calls cost no round trip.
  const store = env.redisUrl
    ? new LeasedLimitStore(await (await import("./redis.js")).RedisLimitStore.open(env.redisUrl, { prefix: `${env.redisKeyPrefix}rl:` }))
    : new MemoryLimitStore({ now: o.now });
  return new RateLimits(store, file, o);
}

/** How an RPC's uploaded bytes meet the project storage cap. */
const STORAGE_METERED: Record<string, { declared?: string; streamed?: string }> = {
  "atrium.v1.FilesService.CreateFile": { streamed: "file" },
  "atrium.v1.UploadsService.AddUploadPart": { streamed: "data" },
  "atrium.v1.UploadsService.CreateUpload": { declared: "bytes" },
};

/**
 * Everything the auth wrapper (src/auth/secure.ts) applies per call: the rate limits (when on) and
 * the project storage cap (always, spec 8).
 */
export class CallLimits implements CallLimiter {
  private readonly metered = new WeakMap<DescMethod, { declared?: string; streamed?: string } | null>();

  constructor(
    /** Undefined with ATRIUM_RATE_LIMITS=off. */
    readonly rate: RateLimits | undefined,
    readonly storage: ProjectStorage,
  ) {}

  admit(p: Principal, method: DescMethod, request: unknown, responseHeader: Headers): void | Promise<void> {
    const charging = this.rate?.admit(p, method, request, responseHeader);
    const declared = this.storageRule(method)?.declared;
    if (declared === undefined) return charging;
    const check = () => this.storage.check(p.projectId, Number((request as Record<string, unknown>)[declared] ?? 0), declared);
    return charging ? charging.then(check) : check();
  }

  uploadStream<T>(p: Principal, method: DescMethod, requests: AsyncIterable<T>): AsyncIterable<T> {
    const streamed = this.storageRule(method)?.streamed;
    return streamed === undefined ? requests : this.storage.meter(p.projectId, requests, streamed);
  }

  close(): Promise<void> {
    return this.rate?.close() ?? Promise.resolve();
  }

  private storageRule(method: DescMethod) {
    let r = this.metered.get(method);
    if (r === undefined) this.metered.set(method, (r = STORAGE_METERED[`${method.parent.typeName}.${method.name}`] ?? null));
    return r;
  }
}

// The LimitStore for several instances: the state in Redis, each take() one Lua script, so the
// check-then-charge of every entry is atomic across all instances sharing the server. The script
// does in Lua (IEEE doubles, same order of operations) exactly what memory.ts does in JS, and
// TATs travel as "%.17g" strings, which round-trip a double exactly: both stores answer the same
// sequence identically. Without an explicit `now` the script reads Redis's clock (TIME), so
// instances whose clocks disagree still share one timeline.
//
// Keys are `<prefix>{<organization>}:...`: the braces are a Redis Cluster hash tag, so every key
// one request touches lives in one slot.
import { Redis } from "ioredis";
import { redactedUrl } from "../common/redacted-url.js";
import { EngineUnreachable } from "../storage/shared-engines.js";
import type { LimitEntry, LimitStore, TakeResult } from "./store.js";

const TAKE_SCRIPT = `
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local n = #KEYS
local values = {}
local ok = 1
for i = 1, n do
  local a = 1 + (i - 1) * 4
  local kind, limit, span, cost = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
  local stored = tonumber(redis.call('GET', KEYS[i]))
  if kind == 'r' then
    local tat = stored or now
    if tat < now then tat = now end
    values[i] = tat
    if cost > 0 and tat + cost * (span / limit) - span > now then ok = 0 end
  else
    local used = stored or 0
    values[i] = used
    if cost > 0 and used + cost > limit then ok = 0 end
  end
end
if ok == 1 then
  for i = 1, n do
    local a = 1 + (i - 1) * 4
    local kind, limit, span, cost = ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), tonumber(ARGV[a + 4])
    if cost > 0 or (kind == 'r' and cost < 0) then
      if kind == 'r' then
        local tat = values[i] + cost * (span / limit)
        if tat < now then tat = now end
        values[i] = tat
        redis.call('SET', KEYS[i], string.format('%.17g', tat), 'PX', math.max(1, math.ceil(tat - now)))
      else
        values[i] = redis.call('INCRBY', KEYS[i], cost)
        redis.call('PEXPIRE', KEYS[i], math.max(1, math.ceil(span - now)))
      end
    end
  end
end
local out = { ok, string.format('%.17g', now) }
for i = 1, n do out[i + 2] = string.format('%.17g', values[i]) end
return out
`;

export interface RedisLimitStoreOptions {
  /** Prefix of every key; default "atrium:rl:". */
  prefix?: string;
  /** Per-command timeout (ms), so a stalled Redis delays a request by at most this. Default 1000. */
  commandTimeoutMs?: number;
}

type TakeCommand = (numKeys: number, ...args: Array<string | number>) => Promise<string[] | [number, ...string[]]>;

/** The script's arguments with the per-call slots (now, each cost) left empty. */
function fixedArgs(prefix: string, entries: readonly LimitEntry[]): string[] {
  const args: string[] = [];
  for (const e of entries) args.push(prefix + e.key);
  args.push("");
  // Numbers as JS writes them: the shortest string that reads back as the same double.
  for (const e of entries) args.push(e.kind === "rate" ? "r" : "q", String(e.limit), String(e.kind === "rate" ? e.windowMs : e.expiresAt), "");
  return args;
}

export class RedisLimitStore implements LimitStore {
  readonly kind = "redis" as const;
  readonly prefix: string;
  private readonly argsOf = new WeakMap<readonly LimitEntry[], string[]>();

  private constructor(
    readonly client: Redis,
    opts: RedisLimitStoreOptions,
  ) {
    this.prefix = opts.prefix ?? "atrium:rl:";
    client.defineCommand("atriumTake", { lua: TAKE_SCRIPT });
  }

  /** Connects (failing if Redis cannot be reached: a misconfigured URL should stop start-up). */
  static async open(url: string, opts: RedisLimitStoreOptions = {}): Promise<RedisLimitStore> {
    const client = new Redis(url, {
      lazyConnect: true,
      commandTimeout: opts.commandTimeoutMs ?? 1000,
      // Fail fast while disconnected rather than queueing requests behind a dead connection; the
      // caller admits the request (fail open) and logs.
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      connectTimeout: 5000,
      // Calls admitted in the same tick share one write to Redis (one syscall, one round trip).
      enableAutoPipelining: true,
    });
    // ioredis reconnects by itself; errors are reported by the commands that fail.
    client.on("error", () => {});
    try {
      await client.connect();
    } catch (e) {
      client.disconnect();
      throw new EngineUnreachable(`cannot connect to Redis at ${redactedUrl(url)} (ATRIUM_REDIS_URL): ${(e as Error).message}`);
    }
    return new RedisLimitStore(client, opts);
  }

  async take(entries: readonly LimitEntry[], costs: readonly number[], now?: number): Promise<TakeResult> {
    // The keys and each entry's kind, limit and span depend on the entries only: built once per
    // entries array (RateLimits keeps one per organization and project), then copied per call.
    let fixed = this.argsOf.get(entries);
    if (fixed === undefined) this.argsOf.set(entries, (fixed = fixedArgs(this.prefix, entries)));
    const args = fixed.slice();
    const n = entries.length;
    args[n] = now === undefined ? "" : String(now);
    for (let i = 0; i < n; i++) args[n + 4 + i * 4] = String(costs[i]);
    const out = (await (this.client as unknown as { atriumTake: TakeCommand }).atriumTake(entries.length, ...args)) as Array<number | string>;
    const values = new Array<number>(entries.length);
    for (let i = 0; i < entries.length; i++) values[i] = Number(out[i + 2]);
    return { ok: Number(out[0]) === 1, now: Number(out[1]), values };
  }

  async close(): Promise<void> {
    await this.client.quit().catch(() => this.client.disconnect());
  }
}

// Per-call rate limits (spec 8, "Rate limits"): what each authenticated call is charged, the
// x-ratelimit-* headers it answers with, and the 429 when a limit is reached. Called once per RPC
// by the auth wrapper (src/auth/secure.ts), so REST, Connect, gRPC-Web and gRPC callers share the
// same limits and see the same headers (as response metadata over RPC).
//
// Each call is charged, atomically across every entry that applies to it:
//   - the organization's requests per minute (and per day) and tokens per minute (and per day);
//   - its project's own caps, where configured;
//   - the monthly token caps (`spend_limit_tokens_per_month`) of both;
//   - for file uploads, 1,000 requests per minute per credential (spec 8, file upload rate).
// Tokens are the documented estimate (tokens.ts). A call is charged when it is admitted, whatever
// it answers later: failed requests count (spec 8). A refused call is charged nothing, so waiting
// the `retry-after` it reports is enough.
//
// Headers: `x-ratelimit-{limit,remaining,reset}-requests` describe the request limit that binds
// now (the one with the least left: the project's own cap, a per-day limit, ...), the `-tokens`
// trio the organization's token limit, and the `-project-tokens` trio a project's token limit
// when one is configured. Resets are the time until the limit is back to its full allowance.
//
// Areas with limits of their own (vector stores: 300 requests per minute per store, 2,000 attached
// files per minute per organization) call `enforceAll` (or `check` / `enforce`) with keys and rules;
// `organizationRule` reads an organization's setting of such a limit from its `rate_limits`.
import type { DescMethod } from "@bufbuild/protobuf";
import type { Logger } from "pino";
import { ApiError, type ErrorType } from "../common/errors.js";
import type { Principal } from "../auth/principal.js";
import {
  AREA_RATES_PER_MINUTE,
  DEFAULT_REQUESTS_PER_MINUTE,
  DEFAULT_TOKENS_PER_MINUTE,
  UPLOADS_PER_MINUTE_PER_USER,
  type AreaRateSetting,
  type LimitedProject,
  type LimitsFileConfig,
  type RateLimitRules,
} from "./config.js";
import { formatDuration } from "./duration.js";
import { rateConforms, rateRemaining, rateResetMs, rateRetryMs, type LimitEntry, type LimitStore, type RateEntry, type TakeResult } from "./store.js";
import { tokenMeter, type TokenMeter } from "./tokens.js";

const MINUTE = 60_000;
const DAY = 86_400_000;

/** A rate an area enforces itself: `limit` per `windowMs`. `name` labels it in errors and metrics. */
export interface RateRule {
  name: string;
  limit: number;
  windowMs: number;
}

export interface LimitCheck {
  ok: boolean;
  limit: number;
  remaining: number;
  /** Until the full allowance is back. */
  resetMs: number;
  /** When refused: how long until `cost` would be admitted (Infinity: never, cost > limit). */
  retryAfterMs: number;
}

/** One of an area's limits a call is charged (RateLimits.enforceAll). */
export interface AreaCharge {
  /** What is limited, under the organization: a store ("proj_1:vs_123"), the organization itself (""). */
  key: string;
  rule: RateRule;
  /** Names the limit in the 429's message: "requests per minute to the files of vector store vs_123". */
  what: string;
  /** Default 1. */
  cost?: number;
}

/** What a refusal was about, for metrics. */
export interface Rejection {
  /** requests | tokens | spend | upload, or an area rule's name. */
  limit: string;
  scope: "organization" | "project" | "user" | "area";
}

/** RPCs that upload file content: spec 8's "file upload rate" applies to them. */
const UPLOAD_METHODS = new Set(["atrium.v1.FilesService.CreateFile", "atrium.v1.UploadsService.CreateUpload", "atrium.v1.UploadsService.AddUploadPart"]);

type Role = "requests" | "tokens" | "project-tokens" | "spend" | "upload";

interface PlanEntry {
  role: Role;
  scope: "organization" | "project" | "user";
  owner: string;
}

/** The entries one kind of call is charged, built once per organization/project (and month). */
interface Plan {
  entries: LimitEntry[];
  meta: PlanEntry[];
  /** The costs of a call that spends no tokens (most calls): 1 per request entry, 0 elsewhere. */
  unitCosts: number[];
  /** String(limit) per entry, for the x-ratelimit-limit-* headers. */
  limitText: string[];
  requests: number[];
  tokens: number[];
  projectTokens: number[];
  /** The month's end when the plan holds spend caps (their keys name the month), else Infinity. */
  validUntil: number;
}

export const RATE_LIMIT_HEADERS = [
  "x-ratelimit-limit-requests",
  "x-ratelimit-remaining-requests",
  "x-ratelimit-reset-requests",
  "x-ratelimit-limit-tokens",
  "x-ratelimit-remaining-tokens",
  "x-ratelimit-reset-tokens",
] as const;

/** The headers of an organization nothing was charged to yet under the default limits. */
export const DEFAULT_RATE_LIMIT_HEADERS: Readonly<Record<string, string>> = {
  "x-ratelimit-limit-requests": String(DEFAULT_REQUESTS_PER_MINUTE),
  "x-ratelimit-remaining-requests": String(DEFAULT_REQUESTS_PER_MINUTE),
  "x-ratelimit-reset-requests": "0s",
  "x-ratelimit-limit-tokens": String(DEFAULT_TOKENS_PER_MINUTE),
  "x-ratelimit-remaining-tokens": String(DEFAULT_TOKENS_PER_MINUTE),
  "x-ratelimit-reset-tokens": "0s",
};

export interface RateLimitsOptions {
  log?: Pick<Logger, "warn">;
  /** Called for every refused call (metrics). */
  onReject?: (r: Rejection) => void;
  /** Clock (ms) for the memory store and month boundaries; default Date.now. */
  now?: () => number;
}

function month(now: number): { label: string; end: number } {
  const d = new Date(now);
  const y = d.getUTCFullYear();
  const m = d.getUTCMonth();
  return { label: `${y}-${String(m + 1).padStart(2, "0")}`, end: Date.UTC(y, m + 1, 1) };
}

export class RateLimits {
  private orgs = new Map<string, { org: LimitedProject; projects: Map<string, LimitedProject> }>();
  /** organization → project → plan. */
  private plans = new Map<string, Map<string, Plan>>();
  private readonly methodKinds = new WeakMap<DescMethod, { upload: boolean; meter: TokenMeter | null }>();
  /** organization → area setting → rule, rebuilt on configure(). */
  private areaRules = new Map<string, Map<AreaRateSetting, RateRule>>();
  private readonly clock: () => number;
  private lastStoreWarning = 0;

  constructor(
    readonly store: LimitStore,
    file: LimitsFileConfig,
    private readonly opts: RateLimitsOptions = {},
  ) {
    this.clock = opts.now ?? Date.now;
    this.configure(file);
  }

  /** Takes (new) limits from ATRIUM_CONFIG; state already charged is kept. */
  configure(file: LimitsFileConfig) {
    const orgs = new Map<string, { org: LimitedProject; projects: Map<string, LimitedProject> }>();
    for (const o of file.organizations ?? []) orgs.set(o.id, { org: o, projects: new Map((o.projects ?? []).map((p) => [p.id, p])) });
    this.orgs = orgs;
    this.plans = new Map();
    this.areaRules = new Map();
  }

  /**
   * Charges one call and writes its x-ratelimit-* headers into `headers`; throws the 429
   * ApiError when a limit is reached. Synchronous with the memory store.
   */
  admit(p: Principal, method: DescMethod, request: unknown, headers: Headers): void | Promise<void> {
    const now = this.clock();
    let plan = this.planFor(p.organizationId, p.projectId, now);
    const kind = this.methodKind(method);
    if (kind.upload) plan = withUpload(plan, p, this.orgs.get(p.organizationId)?.org.rate_limits?.uploads_per_minute ?? UPLOADS_PER_MINUTE_PER_USER);
    const tokens = kind.meter === null ? 0 : kind.meter(request);
    // The plan's own array when no tokens are spent: no allocation on the common path (the stores only read it).
    let costs = plan.unitCosts;
    if (tokens !== 0) {
      costs = new Array<number>(plan.entries.length);
      for (let i = 0; i < costs.length; i++) costs[i] = plan.unitCosts[i] === 1 ? 1 : tokens;
    }
    let taken: TakeResult | Promise<TakeResult>;
    try {
      taken = this.store.take(plan.entries, costs, this.store.kind === "memory" ? now : undefined);
    } catch (e) {
      return this.storeFailed(e);
    }
    if (taken instanceof Promise)
      return taken.then(
        (r) => this.decide(plan, costs, r, headers, tokens),
        (e) => this.storeFailed(e),
      );
    this.decide(plan, costs, taken, headers, tokens);
  }

  /** An area's own limit: charges `cost` to `key` under `rule` if it fits. Nothing is thrown. */
  check(key: string, rule: RateRule, cost = 1): LimitCheck | Promise<LimitCheck> {
    const entry = areaEntry(`{${key}}`, rule);
    const out = (r: TakeResult): LimitCheck => areaCheck(entry, cost, r, 0);
    const taken = this.store.take([entry], [cost], this.store.kind === "memory" ? this.clock() : undefined);
    return taken instanceof Promise ? taken.then(out) : out(taken);
  }

  /**
   * `check`, throwing the platform's 429 (`rate_limit_exceeded`, with retry-after) when refused.
   * `what` names the limit in the message, e.g. "requests per minute on vector store vs_123".
   */
  enforce(key: string, rule: RateRule, what: string, cost = 1): void | Promise<void> {
    const entry = areaEntry(`{${key}}`, rule);
    return this.chargeArea([entry], [{ key, rule, what, cost }]);
  }

  /**
   * Several of an area's limits charged together, all or nothing (a refused call is charged
   * nothing: waiting the retry-after it reports is enough); throws the 429 of the one that waits
   * longest. Keys live under the organization (one Redis Cluster slot per call, like `admit`).
   */
  enforceAll(organizationId: string, charges: readonly AreaCharge[]): void | Promise<void> {
    if (charges.length === 0) return;
    const tag = `{${organizationId}}:`;
    return this.chargeArea(
      charges.map((c) => areaEntry(tag + c.key, c.rule)),
      charges,
    );
  }

  /** An organization's setting of an area's per-minute limit (`rate_limits.<setting>`), or its default. */
  organizationRule(organizationId: string, setting: AreaRateSetting): RateRule {
    let byOrg = this.areaRules.get(organizationId);
    if (byOrg === undefined) this.areaRules.set(organizationId, (byOrg = new Map()));
    let rule = byOrg.get(setting);
    if (rule === undefined) {
      const limit = this.orgs.get(organizationId)?.org.rate_limits?.[setting] ?? AREA_RATES_PER_MINUTE[setting];
      byOrg.set(setting, (rule = { name: setting, limit, windowMs: MINUTE }));
    }
    return rule;
  }

  close(): Promise<void> {
    return this.store.close();
  }

  // ---- internals ----

  private chargeArea(entries: RateEntry[], charges: readonly AreaCharge[]): void | Promise<void> {
    const costs = charges.map((c) => c.cost ?? 1);
    const done = (r: TakeResult) => {
      if (r.ok) return;
      let worst = 0;
      let worstMs = -1;
      for (let i = 0; i < entries.length; i++) {
        if (rateConforms(entries[i]!, r.values[i]!, costs[i]!, r.now)) continue;
        const wait = rateRetryMs(entries[i]!, r.values[i]!, costs[i]!, r.now);
        if (wait > worstMs) {
          worstMs = wait;
          worst = i;
        }
      }
      const { rule, what } = charges[worst]!;
      const c = areaCheck(entries[worst]!, costs[worst]!, r, worst);
      this.opts.onReject?.({ limit: rule.name, scope: "area" });
      const retryable = Number.isFinite(c.retryAfterMs);
      throw rateLimitError(
        429,
        retryable
          ? `Rate limit reached for ${what}: Limit ${rule.limit}, Used ${rule.limit - c.remaining}, Requested ${costs[worst]}. Please try again in ${formatDuration(c.retryAfterMs)}.`
          : `Request too large for ${what}: Limit ${rule.limit}, Requested ${costs[worst]}. Split the request into parts of at most ${rule.limit}.`,
        "requests",
        "rate_limit_exceeded",
        retryable ? c.retryAfterMs : undefined,
      );
    };
    let taken: TakeResult | Promise<TakeResult>;
    try {
      taken = this.store.take(entries, costs, this.store.kind === "memory" ? this.clock() : undefined);
    } catch (e) {
      return this.storeFailed(e);
    }
    return taken instanceof Promise ? taken.then(done, (e) => this.storeFailed(e)) : done(taken);
  }

  /** Whether the method uploads (spec 8's upload rate) and how it spends tokens, looked up once per method. */
  private methodKind(method: DescMethod): { upload: boolean; meter: TokenMeter | null } {
    let k = this.methodKinds.get(method);
    if (k === undefined) this.methodKinds.set(method, (k = { upload: UPLOAD_METHODS.has(`${method.parent.typeName}.${method.name}`), meter: tokenMeter(method) }));
    return k;
  }

  private planFor(orgId: string, projectId: string, now: number): Plan {
    let byProject = this.plans.get(orgId);
    if (byProject === undefined) this.plans.set(orgId, (byProject = new Map()));
    let plan = byProject.get(projectId);
    if (plan === undefined || now >= plan.validUntil) {
      const known = this.orgs.get(orgId);
      plan = buildPlan(orgId, known?.org, projectId, known?.projects.get(projectId), now);
      byProject.set(projectId, plan);
    }
    return plan;
  }

  private decide(plan: Plan, costs: number[], r: TakeResult, headers: Headers, tokens: number) {
    writeHeaders(plan, r, headers);
    if (!r.ok) throw this.refusal(plan, costs, r, tokens);
  }

  private refusal(plan: Plan, costs: number[], r: TakeResult, tokens: number): ApiError {
    let worst = -1;
    let worstMs = -1;
    for (let i = 0; i < plan.entries.length; i++) {
      const e = plan.entries[i]!;
      const m = plan.meta[i]!;
      if (e.kind === "quota") {
        if (costs[i]! > 0 && r.values[i]! + costs[i]! > e.limit) {
          this.opts.onReject?.({ limit: "spend", scope: m.scope as "organization" | "project" });
          return rateLimitError(
            429,
            `You exceeded your current quota: the ${m.scope} ${m.owner} has a hard limit of ${e.limit} tokens per month (used ${r.values[i]}, this request needs ${tokens}). ` +
              `Retrying will not help before the limit is raised or the month ends.`,
            "insufficient_quota",
            "insufficient_quota",
            undefined,
          );
        }
        continue;
      }
      if (rateConforms(e, r.values[i]!, costs[i]!, r.now)) continue;
      const wait = rateRetryMs(e, r.values[i]!, costs[i]!, r.now);
      if (wait > worstMs) {
        worstMs = wait;
        worst = i;
      }
    }
    const e = plan.entries[worst] as RateEntry;
    const m = plan.meta[worst]!;
    const unit = m.role === "requests" || m.role === "upload" ? "requests" : "tokens";
    this.opts.onReject?.({ limit: m.role === "project-tokens" ? "tokens" : m.role, scope: m.scope });
    const per = e.windowMs === DAY ? "day" : "min";
    const label = `${unit} per ${per} (${unit === "requests" ? "R" : "T"}P${per === "day" ? "D" : "M"})`;
    const where = m.role === "upload" ? `file uploads of this ${"credential"} (${m.owner})` : `${m.scope} ${m.owner}`;
    const cost = costs[worst]!;
    if (!Number.isFinite(worstMs))
      return rateLimitError(
        429,
        `Request too large for ${where} on ${label}: Limit ${e.limit}, Requested ${cost}. Reduce the input or the maximum output tokens.`,
        unit,
        "rate_limit_exceeded",
        undefined,
      );
    const used = e.limit - rateRemaining(e, r.values[worst]!, r.now);
    return rateLimitError(
      429,
      `Rate limit reached for ${label} in ${where}: Limit ${e.limit}, Used ${used}, Requested ${cost}. Please try again in ${formatDuration(worstMs)}.`,
      unit,
      "rate_limit_exceeded",
      worstMs,
    );
  }

  private storeFailed(e: unknown): void {
    // Fail open: an unreachable limit store must not take the API down with it.
    const now = Date.now();
    if (now - this.lastStoreWarning > 10_000) {
      this.lastStoreWarning = now;
      this.opts.log?.warn({ err: e }, "rate limit store failed; admitting requests without limits");
    }
  }
}

function areaEntry(key: string, rule: RateRule): RateEntry {
  return { kind: "rate", key: `x:${key}:${rule.name}`, limit: rule.limit, windowMs: rule.windowMs };
}

function areaCheck(entry: RateEntry, cost: number, r: TakeResult, i: number): LimitCheck {
  const tat = r.values[i]!;
  return {
    ok: r.ok,
    limit: entry.limit,
    remaining: rateRemaining(entry, tat, r.now),
    resetMs: rateResetMs(tat, r.now),
    retryAfterMs: r.ok ? 0 : rateRetryMs(entry, tat, cost, r.now),
  };
}

function buildPlan(orgId: string, org: LimitedProject | undefined, projectId: string, project: LimitedProject | undefined, now: number): Plan {
  const plan: Plan = { entries: [], meta: [], unitCosts: [], limitText: [], requests: [], tokens: [], projectTokens: [], validUntil: Infinity };
  const tag = `{${orgId}}`;
  const add = (entry: LimitEntry, meta: PlanEntry) => {
    const i = plan.entries.push(entry) - 1;
    plan.meta.push(meta);
    plan.unitCosts.push(meta.role === "requests" ? 1 : 0);
    plan.limitText.push(String(entry.limit));
    if (meta.role === "requests") plan.requests.push(i);
    else if (meta.role === "tokens") plan.tokens.push(i);
    else if (meta.role === "project-tokens") plan.projectTokens.push(i);
  };
  const rates = (prefix: string, rules: RateLimitRules, scope: "organization" | "project", owner: string) => {
    const tokenRole: Role = scope === "project" ? "project-tokens" : "tokens";
    const r = (suffix: string, limit: number | undefined, windowMs: number, role: Role) => {
      if (limit !== undefined) add({ kind: "rate", key: `${prefix}:${suffix}`, limit, windowMs }, { role, scope, owner });
    };
    r("rpm", rules.requests_per_minute, MINUTE, "requests");
    r("rpd", rules.requests_per_day, DAY, "requests");
    r("tpm", rules.tokens_per_minute, MINUTE, tokenRole);
    r("tpd", rules.tokens_per_day, DAY, tokenRole);
  };
  const orgRules = org?.rate_limits ?? {};
  rates(`${tag}:o`, {
    ...orgRules,
    requests_per_minute: orgRules.requests_per_minute ?? DEFAULT_REQUESTS_PER_MINUTE,
    tokens_per_minute: orgRules.tokens_per_minute ?? DEFAULT_TOKENS_PER_MINUTE,
  }, "organization", orgId);
  if (project?.rate_limits) rates(`${tag}:p:${projectId}`, project.rate_limits, "project", projectId);
  const caps: Array<[string, number | undefined, "organization" | "project", string]> = [
    [`${tag}:o`, org?.spend_limit_tokens_per_month, "organization", orgId],
    [`${tag}:p:${projectId}`, project?.spend_limit_tokens_per_month, "project", projectId],
  ];
  for (const [prefix, limit, scope, owner] of caps) {
    if (limit === undefined) continue;
    const { label, end } = month(now);
    add({ kind: "quota", key: `${prefix}:spend:${label}`, limit, expiresAt: end }, { role: "spend", scope, owner });
    plan.validUntil = end;
  }
  return plan;
}

/** The plan plus the credential's upload rate (built per upload call: uploads are not the hot path). */
function withUpload(plan: Plan, p: Principal, perMinute: number): Plan {
  return {
    ...plan,
    entries: [...plan.entries, { kind: "rate", key: `{${p.organizationId}}:u:${p.credentialId}:uploads`, limit: perMinute, windowMs: MINUTE }],
    meta: [...plan.meta, { role: "upload", scope: "user", owner: p.credentialId }],
    unitCosts: [...plan.unitCosts, 1],
    limitText: [...plan.limitText, String(perMinute)],
  };
}

/**
 * One x-ratelimit-* trio: of the rate entries `idx`, the one with the least left (on a tie, the
 * longer reset). Runs on every call, so it allocates nothing but the header strings.
 */
function writeTrio(plan: Plan, idx: number[], r: TakeResult, headers: Headers, limitName: string, remainingName: string, resetName: string) {
  let best = -1;
  let bestRemaining = 0;
  let bestReset = 0;
  for (let j = 0; j < idx.length; j++) {
    const i = idx[j]!;
    const remaining = rateRemaining(plan.entries[i] as RateEntry, r.values[i]!, r.now);
    const resetMs = rateResetMs(r.values[i]!, r.now);
    if (best < 0 || remaining < bestRemaining || (remaining === bestRemaining && resetMs > bestReset)) {
      best = i;
      bestRemaining = remaining;
      bestReset = resetMs;
    }
  }
  if (best < 0) return;
  const limitText = plan.limitText[best]!;
  headers.set(limitName, limitText);
  // A limit nothing was charged to (the tokens of most calls) reads back its own text.
  headers.set(remainingName, bestRemaining === plan.entries[best]!.limit ? limitText : String(bestRemaining));
  headers.set(resetName, formatDuration(bestReset));
}

function writeHeaders(plan: Plan, r: TakeResult, headers: Headers) {
  writeTrio(plan, plan.requests, r, headers, "x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests");
  writeTrio(plan, plan.tokens, r, headers, "x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens");
  writeTrio(plan, plan.projectTokens, r, headers, "x-ratelimit-limit-project-tokens", "x-ratelimit-remaining-project-tokens", "x-ratelimit-reset-project-tokens");
}

/**
 * A 429 in the platform's shape. Temporary limits carry `retry-after` (whole seconds, rounded up)
 * and `retry-after-ms`; the rest carry `x-should-retry: false`, which the official SDKs obey, since
 * retrying cannot help. The same headers travel as Connect/gRPC error metadata.
 */
export function rateLimitError(status: number, message: string, type: ErrorType, code: string, retryAfterMs: number | undefined): ApiError {
  const headers: Record<string, string> =
    retryAfterMs === undefined
      ? { "x-should-retry": "false" }
      : { "retry-after": String(Math.max(1, Math.ceil(retryAfterMs / 1000))), "retry-after-ms": String(Math.max(1, Math.ceil(retryAfterMs))) };
  const err = new ApiError(status, message, { type, code, headers });
  for (const [k, v] of Object.entries(headers)) err.metadata.set(k, v);
  return err;
}

// The limiter on its own: the duration format of x-ratelimit-reset-*, GCRA in the memory store
// (burst, smoothing, all-or-nothing, bounded keys), the monthly quota, the token estimate, and
// RateLimits' decisions (binding headers, 429 shapes, the file upload rate, areas' check API).
import { describe, expect, it } from "vitest";
import { create } from "@bufbuild/protobuf";
import { ConnectError, Code } from "@connectrpc/connect";
import { formatDuration } from "../../src/limits/duration.js";
import { MemoryLimitStore } from "../../src/limits/memory.js";
import { rateRemaining, rateResetMs, type LimitEntry, type RateEntry } from "../../src/limits/store.js";
import { RateLimits, type Rejection } from "../../src/limits/rate-limits.js";
import { charsOf, tokenMeter } from "../../src/limits/tokens.js";
import { ApiError } from "../../src/common/errors.js";
import type { Principal } from "../../src/auth/principal.js";
import { ModelsService } from "../../gen/atrium/v1/models_pb.js";
import { FilesService } from "../../gen/atrium/v1/files_pb.js";
import { ResponsesService, CountInputTokensRequestSchema } from "../../gen/atrium/v1/responses_pb.js";
import { fromJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";

const MIN = 60_000;
const T0 = Date.UTC(2026, 4, 15, 12, 0, 0);

describe("x-ratelimit-reset-* durations (the platform's format)", () => {
  it.each([
    [0, "0s"],
    [-5, "0s"],
    [0.2, "1ms"],
    [17, "17ms"],
    [999, "999ms"],
    [1000, "1s"],
    [1500, "1.5s"],
    [7660, "7.66s"],
    [60_000, "1m0s"],
    [360_000, "6m0s"],
    [361_250, "6m1.25s"],
    [3_600_000, "1h0m0s"],
    [86_400_000, "24h0m0s"],
    [10_000_000, "2h46m40s"],
  ])("%d ms → %s", (ms, want) => expect(formatDuration(ms)).toBe(want));
});

describe("memory store: GCRA", () => {
  const rpm = (limit: number): RateEntry => ({ kind: "rate", key: "k", limit, windowMs: MIN });

  it("lets a full window through at once, then one per windowMs/limit", () => {
    const s = new MemoryLimitStore();
    const e = rpm(60);
    for (let i = 0; i < 60; i++) expect(s.take([e], [1], T0).ok).toBe(true);
    const refused = s.take([e], [1], T0);
    expect(refused.ok).toBe(false);
    expect(rateRemaining(e, refused.values[0]!, T0)).toBe(0);
    expect(rateResetMs(refused.values[0]!, T0)).toBe(60_000);
    expect(s.take([e], [1], T0 + 999).ok).toBe(false);
    expect(s.take([e], [1], T0 + 1000).ok).toBe(true);
    expect(s.take([e], [1], T0 + 1000).ok).toBe(false);
    // After a whole quiet window the full allowance is back.
    const later = s.take([e], [1], T0 + 1000 + MIN);
    expect(later.ok).toBe(true);
    expect(rateRemaining(e, later.values[0]!, T0 + 1000 + MIN)).toBe(59);
  });

  it("charges all entries or none", () => {
    const s = new MemoryLimitStore();
    const a: RateEntry = { kind: "rate", key: "a", limit: 10, windowMs: MIN };
    const b: RateEntry = { kind: "rate", key: "b", limit: 2, windowMs: MIN };
    expect(s.take([a, b], [1, 1], T0).ok).toBe(true);
    expect(s.take([a, b], [1, 1], T0).ok).toBe(true);
    const r = s.take([a, b], [1, 1], T0);
    expect(r.ok).toBe(false);
    // a was not charged by the refused take: 8 left, not 7.
    expect(rateRemaining(a, r.values[0]!, T0)).toBe(8);
  });

  it("a zero cost never refuses and charges nothing; a cost above the limit never fits", () => {
    const s = new MemoryLimitStore();
    const e = rpm(100);
    expect(s.take([e], [100], T0).ok).toBe(true);
    expect(s.take([e], [0], T0).ok).toBe(true);
    expect(s.take([e], [101], T0 + 10 * MIN).ok).toBe(false);
  });

  it("a monthly quota counts up to its limit and starts again after expiresAt", () => {
    const s = new MemoryLimitStore();
    const q: LimitEntry = { kind: "quota", key: "q", limit: 100, expiresAt: T0 + 1000 };
    expect(s.take([q], [60], T0)).toMatchObject({ ok: true, values: [60] });
    expect(s.take([q], [50], T0)).toMatchObject({ ok: false, values: [60] });
    expect(s.take([q], [40], T0)).toMatchObject({ ok: true, values: [100] });
    expect(s.take([q], [0], T0)).toMatchObject({ ok: true, values: [100] });
    expect(s.take([q], [1], T0 + 1000)).toMatchObject({ ok: true, values: [1] });
  });

  it("holds at most maxKeys keys, dropping spent ones first", () => {
    const s = new MemoryLimitStore({ maxKeys: 100 });
    for (let i = 0; i < 1000; i++) s.take([{ kind: "rate", key: `k${i}`, limit: 10, windowMs: 1000 }], [1], T0 + i * 10);
    expect(s.size).toBeLessThanOrEqual(100);
    // A key still inside its window when the map filled is still charged (the newest survive).
    const recent: RateEntry = { kind: "rate", key: "k999", limit: 10, windowMs: 1000 };
    expect(rateRemaining(recent, s.take([recent], [0], T0 + 9990).values[0]!, T0 + 9990)).toBe(9);
  });
});

describe("token estimate", () => {
  const count = ResponsesService.method.countInputTokens;
  it("meters methods that take model input: max(output cap, ceil(characters / 4))", () => {
    const meter = tokenMeter(count)!;
    expect(meter).toBeTypeOf("function");
    const req = create(CountInputTokensRequestSchema, {
      model: "gpt-4o", // 6
      input: fromJson(ValueSchema, [{ role: "user", content: "x".repeat(390) }]), // keys 4+7, values 4+390
    });
    expect(charsOf(CountInputTokensRequestSchema, req)).toBe(6 + 4 + 7 + 4 + 390);
    expect(meter(req)).toBe(Math.ceil(411 / 4));
  });
  it("costs no tokens elsewhere (models, files)", () => {
    expect(tokenMeter(ModelsService.method.listModels)).toBeNull();
    expect(tokenMeter(ModelsService.method.getModel)).toBeNull();
    expect(tokenMeter(FilesService.method.createFile)).toBeNull();
  });
});

function principal(over: Partial<Principal> = {}): Principal {
  return { kind: "key", credentialId: "key_1", organizationId: "org-acme", projectId: "proj_web", role: "member", scopes: null, ...over };
}

function refusal(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ApiError);
    return e as ApiError;
  }
  throw new Error("expected a refusal");
}

describe("RateLimits", () => {
  const config = {
    organizations: [
      {
        id: "org-acme",
        rate_limits: { requests_per_minute: 500, tokens_per_minute: 1000, requests_per_day: 10000 },
        spend_limit_tokens_per_month: 5000,
        projects: [{ id: "proj_web", rate_limits: { requests_per_minute: 3, tokens_per_minute: 800 } }, { id: "proj_batch" }],
      },
    ],
  };
  const list = ModelsService.method.listModels;

  function limits(now: () => number, rejections: Rejection[] = []) {
    return new RateLimits(new MemoryLimitStore({ now }), config, { now, onReject: (r) => rejections.push(r) });
  }

  it("headers: the binding request limit, the organization's tokens, the project's tokens", () => {
    const l = limits(() => T0);
    const h = new Headers();
    l.admit(principal(), list, create(list.input), h);
    expect(Object.fromEntries(h)).toEqual({
      "x-ratelimit-limit-requests": "3",
      "x-ratelimit-remaining-requests": "2",
      "x-ratelimit-reset-requests": "20s",
      "x-ratelimit-limit-tokens": "1000",
      "x-ratelimit-remaining-tokens": "1000",
      "x-ratelimit-reset-tokens": "0s",
      "x-ratelimit-limit-project-tokens": "800",
      "x-ratelimit-remaining-project-tokens": "800",
      "x-ratelimit-reset-project-tokens": "0s",
    });
    // Another project of the organization: only the organization's limits, and no project trio.
    const h2 = new Headers();
    l.admit(principal({ projectId: "proj_batch" }), list, create(list.input), h2);
    expect(h2.get("x-ratelimit-limit-requests")).toBe("500");
    expect(h2.get("x-ratelimit-remaining-requests")).toBe("498");
    expect(h2.get("x-ratelimit-limit-project-tokens")).toBeNull();
  });

  it("an organization with nothing configured gets the documented defaults", () => {
    const l = limits(() => T0);
    const h = new Headers();
    l.admit(principal({ organizationId: "org-unknown", projectId: "p" }), list, create(list.input), h);
    expect(h.get("x-ratelimit-limit-requests")).toBe("10000");
    expect(h.get("x-ratelimit-remaining-requests")).toBe("9999");
    expect(h.get("x-ratelimit-limit-tokens")).toBe("10000000");
  });

  it("a 429 names the limit, and carries retry-after / retry-after-ms and the metadata for RPC callers", () => {
    const rejections: Rejection[] = [];
    const l = limits(() => T0, rejections);
    for (let i = 0; i < 3; i++) l.admit(principal(), list, create(list.input), new Headers());
    const h = new Headers();
    const e = refusal(() => l.admit(principal(), list, create(list.input), h));
    expect(e.status).toBe(429);
    expect(e.type).toBe("requests");
    expect(e.errorCode).toBe("rate_limit_exceeded");
    expect(e.rawMessage).toBe("Rate limit reached for requests per min (RPM) in project proj_web: Limit 3, Used 3, Requested 1. Please try again in 20s.");
    expect(e.restHeaders).toEqual({ "retry-after": "20", "retry-after-ms": "20000" });
    expect(e.metadata.get("retry-after-ms")).toBe("20000");
    expect(ConnectError.from(e).code).toBe(Code.ResourceExhausted);
    expect(h.get("x-ratelimit-remaining-requests")).toBe("0");
    expect(rejections).toEqual([{ limit: "requests", scope: "project" }]);
  });

  it("tokens: a request larger than the limit is refused for good (x-should-retry: false)", () => {
    const l = limits(() => T0);
    const count = ResponsesService.method.countInputTokens;
    const big = create(CountInputTokensRequestSchema, { input: fromJson(ValueSchema, "y".repeat(4400)) });
    const e = refusal(() => l.admit(principal({ projectId: "proj_batch" }), count, big, new Headers()));
    expect(e.type).toBe("tokens");
    expect(e.errorCode).toBe("rate_limit_exceeded");
    expect(e.rawMessage).toBe("Request too large for organization org-acme on tokens per min (TPM): Limit 1000, Requested 1100. Reduce the input or the maximum output tokens.");
    expect(e.restHeaders).toEqual({ "x-should-retry": "false" });
  });

  it("the monthly spend cap: 429 insufficient_quota, not retryable, until the month ends", () => {
    let now = T0;
    const l = limits(() => now);
    const count = ResponsesService.method.countInputTokens;
    const req = create(CountInputTokensRequestSchema, { input: fromJson(ValueSchema, "z".repeat(3200)) }); // 800 tokens
    for (let i = 0; i < 6; i++) {
      l.admit(principal({ projectId: "proj_batch" }), count, req, new Headers());
      now += MIN;
    }
    const e = refusal(() => l.admit(principal({ projectId: "proj_batch" }), count, req, new Headers()));
    expect(e.status).toBe(429);
    expect(e.type).toBe("insufficient_quota");
    expect(e.errorCode).toBe("insufficient_quota");
    expect(e.restHeaders).toEqual({ "x-should-retry": "false" });
    // Calls that cost no tokens still go through.
    l.admit(principal({ projectId: "proj_batch" }), list, create(list.input), new Headers());
    now = Date.UTC(2026, 5, 1);
    l.admit(principal({ projectId: "proj_batch" }), count, req, new Headers());
  });

  it("file uploads: 1,000 per minute per credential", () => {
    const l = new RateLimits(new MemoryLimitStore(), {}, { now: () => T0 });
    const upload = FilesService.method.createFile;
    // Under the organization's default 10,000 per minute.
    for (let i = 0; i < 1000; i++) l.admit(principal({ organizationId: "org-x" }), upload, undefined, new Headers());
    const e = refusal(() => l.admit(principal({ organizationId: "org-x" }), upload, undefined, new Headers()));
    expect(e.rawMessage).toMatch(/^Rate limit reached for requests per min \(RPM\) in file uploads of this credential \(key_1\): Limit 1000/);
    // Another credential of the same organization is not affected.
    l.admit(principal({ organizationId: "org-x", credentialId: "key_2" }), upload, undefined, new Headers());
  });

  it("file uploads: an organization's rate_limits.uploads_per_minute replaces the default", () => {
    const l = new RateLimits(new MemoryLimitStore(), { organizations: [{ id: "org-x", rate_limits: { uploads_per_minute: 3 } }] }, { now: () => T0 });
    const upload = FilesService.method.createFile;
    for (let i = 0; i < 3; i++) l.admit(principal({ organizationId: "org-x" }), upload, undefined, new Headers());
    expect(refusal(() => l.admit(principal({ organizationId: "org-x" }), upload, undefined, new Headers())).rawMessage).toMatch(/file uploads of this credential \(key_1\): Limit 3/);
  });

  it("check / enforce: an area's own limit (vector stores: 300 per minute per store)", async () => {
    const rejections: Rejection[] = [];
    const l = limits(() => T0, rejections);
    const rule = { name: "vector_store_requests", limit: 300, windowMs: MIN };
    for (let i = 0; i < 300; i++) expect((await l.check("vs_1", rule)).ok).toBe(true);
    const c = await l.check("vs_1", rule);
    expect(c).toMatchObject({ ok: false, limit: 300, remaining: 0 });
    expect(c.retryAfterMs).toBe(200);
    expect((await l.check("vs_2", rule)).ok).toBe(true);
    const e = refusal(() => l.enforce("vs_1", rule, "requests per minute on vector store vs_1"));
    expect(e.rawMessage).toBe("Rate limit reached for requests per minute on vector store vs_1: Limit 300, Used 300, Requested 1. Please try again in 200ms.");
    expect(e.restHeaders).toEqual({ "retry-after": "1", "retry-after-ms": "200" });
    expect(rejections).toEqual([{ limit: "vector_store_requests", scope: "area" }]);
  });

  it("enforceAll: an area's limits charged all or nothing; rules from the organization's rate_limits or the defaults", () => {
    const rejections: Rejection[] = [];
    const l = new RateLimits(
      new MemoryLimitStore(),
      { organizations: [{ id: "org-x", rate_limits: { vector_store_file_requests_per_minute: 10, vector_store_attached_files_per_minute: 3 } }] },
      { now: () => T0, onReject: (r) => rejections.push(r) },
    );
    expect(l.organizationRule("org-other", "vector_store_file_requests_per_minute")).toEqual({ name: "vector_store_file_requests_per_minute", limit: 300, windowMs: MIN });
    expect(l.organizationRule("org-other", "vector_store_attached_files_per_minute").limit).toBe(2000);
    const store = { key: "proj_1:vs_1", rule: l.organizationRule("org-x", "vector_store_file_requests_per_minute"), what: "requests to vs_1" };
    const files = (cost: number) => ({ key: "", rule: l.organizationRule("org-x", "vector_store_attached_files_per_minute"), what: "attached files", cost });
    l.enforceAll("org-x", [store, files(2)]);
    // 2 more files do not fit in the 1 left: refused, and the store's request is not charged either.
    const e = refusal(() => l.enforceAll("org-x", [store, files(2)]));
    expect(e.rawMessage).toBe("Rate limit reached for attached files: Limit 3, Used 2, Requested 2. Please try again in 20s.");
    expect(e.restHeaders).toEqual({ "retry-after": "20", "retry-after-ms": "20000" });
    expect(rejections).toEqual([{ limit: "vector_store_attached_files_per_minute", scope: "area" }]);
    for (let i = 0; i < 9; i++) l.enforceAll("org-x", [store]); // 1 + 9 = the store's 10
    expect(refusal(() => l.enforceAll("org-x", [store])).rawMessage).toMatch(/^Rate limit reached for requests to vs_1: Limit 10, Used 10, Requested 1\. Please try again in 6s\.$/);
    // Another organization's keys are apart; more than a window's worth can never pass.
    l.enforceAll("org-y", [store, files(3)]);
    const tooLarge = refusal(() => l.enforceAll("org-x", [files(4)]));
    expect(tooLarge.rawMessage).toBe("Request too large for attached files: Limit 3, Requested 4. Split the request into parts of at most 3.");
    expect(tooLarge.restHeaders).toEqual({ "x-should-retry": "false" });
    // A reloaded configuration changes the rules.
    l.configure({ organizations: [{ id: "org-x", rate_limits: { vector_store_attached_files_per_minute: 50 } }] });
    expect(l.organizationRule("org-x", "vector_store_attached_files_per_minute").limit).toBe(50);
  });
});

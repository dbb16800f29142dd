// The console's only way to data: the public REST API (/v1) with the user's key, and the operator
// endpoints. The key lives in sessionStorage (gone when the tab closes) and travels only in the
// Authorization header, never in a URL.
const KEY = "atrium.key";
const PROJECT = "atrium.project";

export const session = {
  key: (): string | null => sessionStorage.getItem(KEY),
  project: (): string | null => sessionStorage.getItem(PROJECT),
  signIn(key: string, project: string) {
    sessionStorage.setItem(KEY, key);
    if (project) sessionStorage.setItem(PROJECT, project);
    else sessionStorage.removeItem(PROJECT);
  },
  signOut() {
    sessionStorage.removeItem(KEY);
    sessionStorage.removeItem(PROJECT);
  },
};

/** An error as the API reports it: `{"error": {message, type, param, code}}` plus the HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type: string | null,
    readonly param: string | null,
    readonly code: string | null,
  ) {
    super(message);
  }
}

export interface RateLimitState {
  limitRequests?: string;
  remainingRequests?: string;
  resetRequests?: string;
  limitTokens?: string;
  remainingTokens?: string;
  resetTokens?: string;
}

let rateLimits: RateLimitState = {};
const rateListeners = new Set<(r: RateLimitState) => void>();
export function onRateLimits(f: (r: RateLimitState) => void): () => void {
  rateListeners.add(f);
  f(rateLimits);
  return () => rateListeners.delete(f);
}

function noteRateLimits(h: Headers) {
  if (!h.has("x-ratelimit-limit-requests")) return;
  rateLimits = {
    limitRequests: h.get("x-ratelimit-limit-requests") ?? undefined,
    remainingRequests: h.get("x-ratelimit-remaining-requests") ?? undefined,
    resetRequests: h.get("x-ratelimit-reset-requests") ?? undefined,
    limitTokens: h.get("x-ratelimit-limit-tokens") ?? undefined,
    remainingTokens: h.get("x-ratelimit-remaining-tokens") ?? undefined,
    resetTokens: h.get("x-ratelimit-reset-tokens") ?? undefined,
  };
  for (const f of rateListeners) f(rateLimits);
}

export function authHeaders(key = session.key(), project = session.project()): Record<string, string> {
  const h: Record<string, string> = {};
  if (key) h.authorization = `Bearer ${key}`;
  if (project) h["openai-project"] = project;
  return h;
}

async function errorOf(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const e = JSON.parse(text).error;
    if (e && typeof e === "object") return new ApiError(res.status, String(e.message ?? text), e.type ?? null, e.param ?? null, e.code ?? null);
  } catch {
    // Not the API's error shape: shown as the raw body below.
  }
  return new ApiError(res.status, text || res.statusText, null, null, null);
}

export interface CallOptions {
  method?: string;
  query?: Record<string, string | number | undefined>;
  json?: unknown;
  form?: FormData;
  signal?: AbortSignal;
  /** Another key than the session's: the sign-in form checks a key before keeping it. */
  key?: string;
  project?: string;
}

export async function raw(path: string, o: CallOptions = {}): Promise<Response> {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(o.query ?? {})) if (v !== undefined && v !== "") q.set(k, String(v));
  const url = `/v1${path}${q.size ? `?${q}` : ""}`;
  const headers = authHeaders(o.key ?? session.key(), o.project ?? session.project());
  let body: BodyInit | undefined;
  if (o.json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(o.json);
  } else if (o.form) body = o.form;
  const res = await fetch(url, { method: o.method ?? (body ? "POST" : "GET"), headers, body, signal: o.signal });
  noteRateLimits(res.headers);
  if (!res.ok) throw await errorOf(res);
  return res;
}

export async function call<T = any>(path: string, o: CallOptions = {}): Promise<T> {
  return (await raw(path, o)).json() as Promise<T>;
}

export interface Page<T> {
  object: "list";
  data: T[];
  has_more: boolean;
  first_id?: string | null;
  last_id?: string | null;
}

/** Bytes of a content endpoint, as a Blob (downloads, previews, video playback). */
export async function blobOf(path: string): Promise<Blob> {
  return (await raw(path)).blob();
}

/** Saves a Blob under a name through a temporary object URL. */
export function saveBlob(blob: Blob, name: string) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** An operator endpoint's status and text as served (no key: they need none by default). */
export async function operator(path: "/metrics" | "/readyz" | "/openapi.json"): Promise<{ status: number; text: string }> {
  const res = await fetch(path);
  return { status: res.status, text: await res.text() };
}

// Helpers for the black-box REST tests: the official SDK pointed at a test server, raw fetch with a
// key, the exact REST error body check, random content and on-disk inspection of the data dir.
import { createHash, randomBytes } from "node:crypto";
import { existsSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import OpenAI, { toFile } from "openai";
import { expect } from "vitest";
import type { BlobStore } from "../../src/storage/types.js";
import { parseJsonl } from "./jsonl.js";
import { API_KEY } from "./server.js";

export { toFile };

/** The official SDK, no retries (a test must see the first answer), short timeout. */
export function sdk(baseURL: string, apiKey = API_KEY, extra: Partial<ConstructorParameters<typeof OpenAI>[0]> = {}): OpenAI {
  return new OpenAI({ apiKey, baseURL, maxRetries: 0, timeout: 30_000, ...extra });
}

/** fetch against `${baseURL}${path}` with a bearer key (pass key: null for none). */
export function api(
  baseURL: string,
  path: string,
  init: RequestInit & { key?: string | null; json?: unknown } = {},
): Promise<Response> {
  const { key = API_KEY, json, headers, ...rest } = init;
  const h = new Headers(headers);
  if (key !== null && !h.has("authorization")) h.set("authorization", `Bearer ${key}`);
  let body = rest.body;
  if (json !== undefined) {
    h.set("content-type", "application/json");
    body = JSON.stringify(json);
  }
  return fetch(`${baseURL}${path}`, { ...rest, headers: h, body });
}

export interface RestError {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/**
 * Asserts the response is `status` with exactly the REST error body `{error: {message, type,
 * param, code}}` (all four keys present, nothing else), and optionally checks param/code/type.
 */
export async function expectError(
  res: Response,
  status: number,
  want: { param?: string | null; code?: string | null; type?: string; message?: RegExp | string } = {},
): Promise<RestError["error"]> {
  const text = await res.text();
  expect(res.status, `status (body: ${text.slice(0, 300)})`).toBe(status);
  expect(res.headers.get("content-type") ?? "").toMatch(/^application\/json/);
  const body = JSON.parse(text);
  expectErrorShape(body);
  const e = body.error as RestError["error"];
  if ("param" in want) expect(e.param).toBe(want.param);
  if ("code" in want) expect(e.code).toBe(want.code);
  if (want.type !== undefined) expect(e.type).toBe(want.type);
  if (want.message !== undefined) expect(e.message).toMatch(want.message);
  return e;
}

export function expectErrorShape(body: unknown) {
  expect(body).toBeTypeOf("object");
  expect(Object.keys(body as object)).toEqual(["error"]);
  const e = (body as RestError).error;
  expect(Object.keys(e).sort()).toEqual(["code", "message", "param", "type"]);
  expect(typeof e.message).toBe("string");
  expect(e.message.length).toBeGreaterThan(0);
  expect(typeof e.type).toBe("string");
  expect(e.param === null || typeof e.param === "string").toBe(true);
  expect(e.code === null || typeof e.code === "string").toBe(true);
}

/** Asserts an SDK call rejects with an APIError of `status`; returns the error for more checks. */
export async function sdkError(p: Promise<unknown>, status: number): Promise<InstanceType<typeof OpenAI.APIError>> {
  let err: unknown;
  try {
    await p;
  } catch (e) {
    err = e;
  }
  expect(err, "expected the SDK call to fail").toBeInstanceOf(OpenAI.APIError);
  const e = err as InstanceType<typeof OpenAI.APIError>;
  expect(e.status).toBe(status);
  // The SDK exposes the inner error object; all four keys must have been there.
  expectErrorShape({ error: e.error });
  return e;
}

/** The JSON lines of a File's content, read through the SDK; none without a file (a batch's missing output or error file). */
export async function fileLines(c: OpenAI, fileId: string | null | undefined): Promise<any[]> {
  return fileId ? parseJsonl(await (await c.files.content(fileId)).text()) : [];
}

export const sha256 = (b: Uint8Array) => createHash("sha256").update(b).digest("hex");
export const md5 = (b: Uint8Array) => createHash("md5").update(b).digest("hex");
export const random = (n: number) => randomBytes(n);

/** Every regular file under `dir` (recursive), as paths relative to it. */
export function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out: string[] = [];
  const walk = (d: string, rel: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) walk(p, join(rel, e.name));
      else out.push(join(rel, e.name));
    }
  };
  walk(dir, "");
  return out.sort();
}

/** Total bytes of every file under `dir`. */
export function bytesUnder(dir: string): number {
  return filesUnder(dir).reduce((n, f) => n + statSync(join(dir, f)).size, 0);
}

/** The whole content of blob `key`, whichever store holds it. */
export async function readBlob(blobs: BlobStore, key: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of blobs.get(key)) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

/** Names of blob files under <dataDir>/blobs (shard dirs stripped), i.e. the stored blob keys. */
export function blobKeys(dataDir: string): string[] {
  // In the scaled set-up blobs live in a bucket: an empty blobs/ would prove nothing.
  if (process.env.ATRIUM_TEST_ENGINES === "scaled") throw new Error("blobKeys reads the data dir's blobs/, which the scaled set-up does not use: skip this test when SCALED");
  return filesUnder(join(dataDir, "blobs")).map((p) => p.split("/").pop()!).sort();
}

/**
 * The keys of every blob a test server's store holds: the data dir's blobs/ on the embedded
 * set-up, the shared bucket in the scaled one (listed through the store both instances write).
 */
export async function storedBlobKeys(server: { dataDir: string; deps: { blobs: BlobStore } }): Promise<string[]> {
  if (process.env.ATRIUM_TEST_ENGINES !== "scaled") return blobKeys(server.dataDir);
  const keys: string[] = [];
  for await (const b of server.deps.blobs.list()) keys.push(b.key);
  return keys.sort();
}

/**
 * A multipart/form-data body generated on the fly: text fields, then one file part of `size`
 * bytes produced in chunks of `chunk` (a repeating pattern, so nothing big sits in memory).
 * `delayMs` between chunks slows the stream down; `onChunk` sees the running byte count.
 */
export function generatedMultipart(opts: {
  fields?: Array<[string, string]>;
  fileField: string;
  filename: string;
  size: number;
  chunk?: number;
  delayMs?: number;
  onChunk?: (sent: number) => void;
  /** Fields sent after the file part (as the official SDK does with purpose). */
  after?: Array<[string, string]>;
}): { contentType: string; stream: ReadableStream<Uint8Array>; length: number } {
  const boundary = "----atrium-test-" + randomBytes(8).toString("hex");
  const field = ([k, v]: [string, string]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`;
  const head = Buffer.from(
    (opts.fields ?? []).map(field).join("") +
      `--${boundary}\r\nContent-Disposition: form-data; name="${opts.fileField}"; filename="${opts.filename}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n` + (opts.after ?? []).map(field).join("") + `--${boundary}--\r\n`);
  const chunkSize = opts.chunk ?? 1 << 20;
  // A pattern that never contains the boundary (no '-' bytes, no CR/LF).
  const pattern = Buffer.alloc(chunkSize);
  for (let i = 0; i < chunkSize; i++) pattern[i] = 65 + (i % 26);
  let sent = 0;
  let stage: "head" | "body" | "tail" | "done" = "head";
  const stream = new ReadableStream<Uint8Array>({
    async pull(ctrl) {
      if (stage === "head") {
        stage = "body";
        ctrl.enqueue(new Uint8Array(head));
        return;
      }
      if (stage === "body") {
        if (sent < opts.size) {
          if (opts.delayMs) await new Promise((r) => setTimeout(r, opts.delayMs));
          const n = Math.min(chunkSize, opts.size - sent);
          // A fresh copy: the consumer may hold on to enqueued chunks.
          ctrl.enqueue(new Uint8Array(pattern.subarray(0, n)));
          sent += n;
          opts.onChunk?.(sent);
          return;
        }
        stage = "tail";
      }
      if (stage === "tail") {
        stage = "done";
        ctrl.enqueue(new Uint8Array(tail));
        ctrl.close();
      }
    },
  });
  return { contentType: `multipart/form-data; boundary=${boundary}`, stream, length: head.length + opts.size + tail.length };
}

/**
 * That the official SDK, refused with 429s, waits before each retry at least the retry-after-ms its
 * 429 gave, and then gets in (after one or two refusals). `exhaust` spends the allowance, ending on
 * a 429; `refusals` reads the server's count of those 429s; `call` makes the SDK call (retries on)
 * through the given fetch and checks its answer. On a busy machine the allowance can refill
 * between `exhaust` and the call, which is then admitted at once: the set-up runs again, up to 5 times.
 */
export async function expectRetriesAsTold(opts: {
  exhaust: () => Promise<unknown>;
  refusals: () => Promise<number>;
  call: (fetch: typeof globalThis.fetch) => Promise<unknown>;
}): Promise<void> {
  let seen: Array<{ at: number; status: number; retryAfterMs: number }> = [];
  const recording: typeof globalThis.fetch = async (input, init) => {
    const at = performance.now();
    const res = await fetch(input, init);
    seen.push({ at, status: res.status, retryAfterMs: Number(res.headers.get("retry-after-ms")) });
    return res;
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    // Read the counter first: a /metrics scrape on a loaded machine can take longer than a refill,
    // and must not sit between emptying the allowance and the SDK's call.
    const before = await opts.refusals();
    await opts.exhaust();
    seen = [];
    await opts.call(recording);
    const refused = (await opts.refusals()) - before - 1;
    expect(seen.map((x) => x.status)).toEqual([...Array(refused).fill(429), 200]);
    if (refused === 0) continue;
    expect(refused).toBeLessThanOrEqual(2);
    for (let i = 0; i < refused; i++) {
      expect(seen[i]!.retryAfterMs).toBeGreaterThan(0);
      expect(seen[i + 1]!.at - seen[i]!.at).toBeGreaterThanOrEqual(seen[i]!.retryAfterMs - 1);
    }
    return;
  }
  expect.fail("the SDK's call was never refused: the allowance refilled before it every time");
}

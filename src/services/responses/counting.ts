// Counting a request body's input tokens, the same way on this thread (small bodies) and on a
// counting worker (worker.ts, large ones): the engine does the counting; this module gives it the
// project's Files, the fetch policy for image and file URLs, and the shapes that cross threads.
import { countInputTokens, InputTokensError, type EncodingName, type InputTokensErrorStatus } from "../../engines/tokenizer/index.js";
import { fetchUrl, FetchUrlError, type FetchPolicy } from "../../common/fetch-url.js";
import type { Scope } from "../../storage/types.js";

/**
 * Texts of at least this many characters go to countBody's `countLongText` (the engine's
 * `longTextChars`), and are what the counting workers count in parts (workers.ts).
 */
export const LONG_TEXT_CHARS = 256 * 1024;

/** Largest file or image the counter reads into memory (the platform's per-file input limit). */
export const MAX_INPUT_FILE_BYTES = 50 * 1024 * 1024;

/** What counting reads from storage: the project's fine-tuned models and its Files. */
export interface CountingLookups {
  /** Whether the project has the fine-tuned model `model`. */
  hasFineTunedModel(scope: Scope, model: string): Promise<boolean>;
  /** A File's bytes and name; an InputTokensError (404, 413) when it is missing or too large. */
  readFile(scope: Scope, fileId: string): Promise<{ bytes: Uint8Array; filename: string }>;
}

/** A counting error as it crosses threads (an error class does not survive structured clone). */
export interface CountingErrorDescription {
  status: InputTokensErrorStatus;
  param: string;
  message: string;
  code?: string;
}

/** A host readFile's answer to a worker: the file, or the counting error to throw there. */
export type HostFileReply = { file: { bytes: Uint8Array; filename: string } } | { error: CountingErrorDescription };

/**
 * The host functions a worker that counts tokens calls back on this thread (the counting workers'
 * and the batch workers'): the lookups, with a counting error turned into a reply it can rethrow.
 */
export function countingHost(lookups: CountingLookups) {
  return {
    hasFineTunedModel: (scope: Scope, model: string) => lookups.hasFineTunedModel(scope, model),
    async readFile(scope: Scope, fileId: string): Promise<HostFileReply> {
      try {
        return { file: await lookups.readFile(scope, fileId) };
      } catch (e) {
        if (e instanceof InputTokensError) return { error: { status: e.status, param: e.param, message: e.message, code: e.code } };
        throw e;
      }
    },
  };
}

/**
 * One count sent to a worker: a whole body as the response API's JSON and whose Files it may read,
 * or one part of a long text (the worker counts its tokens alone).
 */
export type CountTask = { body: Record<string, unknown>; scope: Scope; policy: FetchPolicy } | { text: string; encoding: EncodingName };

export type CountReply = { inputTokens: number } | { error: CountingErrorDescription };

/** The body's input tokens; InputTokensError for what the engine or the lookups refuse. */
export async function countBody(
  body: Record<string, unknown>,
  scope: Scope,
  lookups: Pick<CountingLookups, "readFile">,
  policy: FetchPolicy,
  fetcher: typeof fetchUrl = fetchUrl,
  countLongText?: (encoding: EncodingName, text: string) => Promise<number>,
): Promise<number> {
  const result = await countInputTokens(
    body,
    {
      countLongText,
      fetchImage: (url) =>
        fetcher(url, policy).catch((e) => {
          throw e instanceof FetchUrlError ? new InputTokensError(e.status, "", e.message, e.code) : e;
        }),
      readFile: (id) => lookups.readFile(scope, id),
    },
    { maxImageBytes: MAX_INPUT_FILE_BYTES, maxFileBytes: MAX_INPUT_FILE_BYTES, longTextChars: LONG_TEXT_CHARS },
  );
  return result.input_tokens;
}

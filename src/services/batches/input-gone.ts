// A batch's input File can be deleted or expire while the batch waits or runs. That is permanent:
// the batch fails with an error naming the file, instead of its job retrying a read that cannot succeed.
import { ApiError } from "../../common/errors.js";
import { BlobNotFound } from "../../storage/types.js";
import type { LineError } from "./input.js";

/** `e` says the input File (or its bytes) is gone: the files API's 404, or the blob store's BlobNotFound. */
export function isInputGone(e: unknown): boolean {
  return (e instanceof ApiError && e.status === 404) || e instanceof BlobNotFound;
}

/** The batch error that ends a batch whose input File is gone. */
export function inputGoneError(inputFileId: string): LineError {
  return {
    code: "file_not_found",
    line: null,
    message: `The input file ${inputFileId} no longer exists: it was deleted or expired before the batch could read it.`,
    param: "input_file_id",
  };
}

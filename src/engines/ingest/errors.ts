// The one error the ingest engine raises. Its code is what a vector store file's `last_error.code`
// says (spec 2.4): the file's kind is not one we read (`unsupported_file`), or it claims a kind
// and is not a valid one (`invalid_file`). Anything else thrown out of the engine is a bug or an
// outage and surfaces as `server_error`.
export type IngestErrorCode = "unsupported_file" | "invalid_file";

export class IngestError extends Error {
  override readonly name = "IngestError";
  constructor(
    readonly code: IngestErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

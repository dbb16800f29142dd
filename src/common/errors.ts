// One error model (docs/architecture.md, principle 3). Handlers throw ApiError; REST renders it as
// {"error": {message, type, param, code}} with its HTTP status, Connect and gRPC as the matching
// code with an atrium.v1.ErrorInfo detail carrying the same fields.
import { tmpdir } from "node:os";
import { basename, resolve } from "node:path";
import { Code, ConnectError } from "@connectrpc/connect";
import { create } from "@bufbuild/protobuf";
import { ErrorInfoSchema } from "../../gen/atrium/v1/options_pb.js";
import { BlobTooLarge, DuplicateRecord, VersionConflict } from "../storage/types.js";
import { isNoSpace } from "../storage/space-reserve.js";
import { isEngineUnavailable } from "../storage/unavailable.js";

export type ErrorType =
  | "invalid_request_error"
  | "authentication_error"
  | "permission_error"
  | "not_found_error"
  | "conflict_error"
  | "rate_limit_error"
  // 429s as the platform types them: which rate was reached, or the spend cap.
  | "requests"
  | "tokens"
  | "insufficient_quota"
  | "server_error";

const codeForStatus: Record<number, Code> = {
  400: Code.InvalidArgument,
  401: Code.Unauthenticated,
  403: Code.PermissionDenied,
  404: Code.NotFound,
  405: Code.Unimplemented,
  408: Code.DeadlineExceeded,
  409: Code.FailedPrecondition,
  413: Code.ResourceExhausted,
  414: Code.InvalidArgument,
  415: Code.InvalidArgument,
  416: Code.OutOfRange,
  431: Code.InvalidArgument,
  429: Code.ResourceExhausted,
  500: Code.Internal,
  501: Code.Unimplemented,
  503: Code.Unavailable,
  // "perhaps the entire file system is out of space", as gRPC's status codes describe it.
  507: Code.ResourceExhausted,
};

const statusForCode: Record<Code, number> = {
  [Code.Canceled]: 499,
  [Code.Unknown]: 500,
  [Code.InvalidArgument]: 400,
  [Code.DeadlineExceeded]: 408,
  [Code.NotFound]: 404,
  [Code.AlreadyExists]: 409,
  [Code.PermissionDenied]: 403,
  [Code.ResourceExhausted]: 429,
  [Code.FailedPrecondition]: 400,
  [Code.Aborted]: 409,
  [Code.OutOfRange]: 400,
  [Code.Unimplemented]: 501,
  [Code.Internal]: 500,
  [Code.Unavailable]: 503,
  [Code.DataLoss]: 500,
  [Code.Unauthenticated]: 401,
};

function defaultType(status: number): ErrorType {
  if (status === 401) return "authentication_error";
  if (status === 403) return "permission_error";
  if (status === 404) return "invalid_request_error";
  if (status === 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

export interface ApiErrorOptions {
  param?: string | null;
  code?: string | null;
  type?: ErrorType;
  /** Extra REST response headers (Retry-After, Allow). */
  headers?: Record<string, string>;
  cause?: unknown;
}

/**
 * Folders whose paths never reach a caller: the system's temp folder and every data directory a
 * server in this process uses (keepPathsPrivate). A message naming a file there keeps only its base
 * name, whatever raised it (an ffprobe diagnostic, a file system error).
 */
const privateRoots = new Set<string>([resolve(tmpdir())]);

export function keepPathsPrivate(dir: string): void {
  const root = resolve(dir);
  if (root.length > 1) privateRoots.add(root);
}

export function withoutPrivatePaths(message: string): string {
  for (const root of privateRoots)
    if (message.includes(root)) message = message.split(root).map((piece, i) => (i === 0 ? piece : basename(piece.replace(/[\s'"`,;|)].*$/s, "")) + piece.replace(/^[^\s'"`,;|)]*/, ""))).join("");
  return message;
}

export class ApiError extends ConnectError {
  readonly status: number;
  readonly type: ErrorType;
  readonly param: string | null;
  readonly errorCode: string | null;
  readonly restHeaders: Record<string, string>;

  constructor(status: number, message: string, opts: ApiErrorOptions = {}) {
    const type = opts.type ?? defaultType(status);
    const info = create(ErrorInfoSchema, {
      type,
      param: opts.param ?? undefined,
      code: opts.code ?? undefined,
      httpStatus: status,
    });
    super(withoutPrivatePaths(message), codeForStatus[status] ?? Code.Unknown, undefined, [{ desc: ErrorInfoSchema, value: info }], opts.cause);
    this.status = status;
    this.type = type;
    this.param = opts.param ?? null;
    this.errorCode = opts.code ?? null;
    this.restHeaders = opts.headers ?? {};
  }
}

/** 400 for a request field: the message names it and `param` carries it. */
export function invalidParam(param: string, message: string, code: string | null = "invalid_value"): ApiError {
  return new ApiError(400, message, { param, code });
}

export function missingParam(param: string): ApiError {
  return new ApiError(400, `Missing required parameter: '${param}'.`, { param, code: "missing_required_parameter" });
}

/**
 * 503 for a shared engine whose queue is full: the platform's shape with `retry-after` (whole
 * seconds, rounded up) and `retry-after-ms`, which the official SDKs wait for before retrying.
 */
export function engineOverloaded(message: string, retryAfterMs: number, cause?: unknown): ApiError {
  const ms = Math.max(1, Math.ceil(retryAfterMs));
  return new ApiError(503, `${message} Retry after ${Math.ceil(ms / 1000)} s.`, {
    code: "engine_overloaded",
    headers: { "retry-after": String(Math.max(1, Math.ceil(ms / 1000))), "retry-after-ms": String(ms) },
    cause,
  });
}

export interface RestErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** Any thrown value as (status, REST body, extra headers). Unknown errors are 500s with no detail leaked. */
export function toRestError(err: unknown): { status: number; body: RestErrorBody; headers: Record<string, string> } {
  if (err instanceof ApiError) {
    return {
      status: err.status,
      body: { error: { message: err.rawMessage, type: err.type, param: err.param, code: err.errorCode } },
      headers: err.restHeaders,
    };
  }
  if (err instanceof ConnectError) {
    const status = statusForCode[err.code] ?? 500;
    return {
      status,
      body: { error: { message: err.rawMessage, type: defaultType(status), param: null, code: null } },
      headers: {},
    };
  }
  if (isEngineUnavailable(err)) return toRestError(storageUnavailable(err));
  return {
    status: 500,
    body: { error: { message: "The server had an error while processing your request.", type: "server_error", param: null, code: "internal_error" } },
    headers: {},
  };
}

/**
 * 507 when the server's disk (or database) is full: nothing of the request was kept. Deleting
 * works meanwhile (space-reserve.ts), and writes are taken again once space is freed.
 */
export function storageFull(cause?: unknown): ApiError {
  return new ApiError(507, "The server's storage is full, so this request could not be stored. Deleting files or other objects works; retry once space has been freed.", {
    code: "storage_full",
    type: "server_error",
    cause,
  });
}

/** 404 for a resource of this project that does not exist (or belongs to another project). */
export function notFound(kind: string, id: string, param: string | null = null): ApiError {
  return new ApiError(404, `No such ${kind}: ${id}`, { param, code: null });
}

/**
 * Storage errors that reach a handler's caller unhandled, mapped once here rather than at every
 * call site: a concurrent change is a 409 the caller may retry, a too-large blob a 413.
 * Anything else passes through (and becomes a 500 without detail).
 */
export function fromStorageError(err: unknown): unknown {
  if (err instanceof VersionConflict)
    return new ApiError(409, "The object was changed by another request at the same time; retry the request.", { code: "conflict", type: "conflict_error", cause: err });
  if (err instanceof DuplicateRecord) return new ApiError(409, "An object with this id already exists.", { code: "conflict", type: "conflict_error", cause: err });
  if (err instanceof BlobTooLarge) return new ApiError(413, `The content is too large: the limit is ${err.limit} bytes.`, { code: "request_too_large", cause: err });
  if (isNoSpace(err)) return storageFull(err);
  if (isEngineUnavailable(err)) return storageUnavailable(err);
  return err;
}

/**
 * 503 when the shared database or object store cannot be reached (docs/scale-out.md): nothing of
 * the request was kept, and the same request succeeds once the engine is back.
 */
export function storageUnavailable(cause?: unknown): ApiError {
  return new ApiError(503, "The server's storage is unavailable at the moment, so this request could not be completed; nothing of it was stored. Retry in a few seconds.", {
    code: "storage_unavailable",
    type: "server_error",
    headers: { "retry-after": "2" },
    cause,
  });
}

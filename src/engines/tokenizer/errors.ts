/**
 * The one error type of the token-counting engine. The transport renders it as
 * `{"error": {"message", "type": "invalid_request_error", "param", "code"}}` with `status`.
 * `param` is the JSON path of the offending field in the request body (e.g. `input[2].type`,
 * `tools[0].parameters.properties.unit.enum`, `input[0].content[1].image_url`).
 */
export type InputTokensErrorStatus = 400 | 404 | 413;

export class InputTokensError extends Error {
  override name = "InputTokensError";
  readonly status: InputTokensErrorStatus;
  readonly param: string;
  readonly code?: string;

  constructor(status: InputTokensErrorStatus, param: string, message: string, code?: string, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
    this.param = param;
    if (code !== undefined) this.code = code;
  }
}

/** The model is not in the model → encoding table: 404 `model_not_found` on `param` (default `model`). */
export class UnknownModelError extends InputTokensError {
  override name = "UnknownModelError";
  readonly model: string;

  constructor(model: string, param = "model") {
    super(404, param, `The model '${model}' does not exist or you do not have access to it.`, "model_not_found");
    this.model = model;
  }
}

// The 400s of request fields, each naming the field by its JSON path.
export function invalid(param: string, message: string, code = "invalid_value"): InputTokensError {
  return new InputTokensError(400, param, message, code);
}
export function wrongType(param: string, expected: string): InputTokensError {
  return new InputTokensError(400, param, `Invalid type for '${param}': expected ${expected}.`, "invalid_type");
}
export function missing(param: string): InputTokensError {
  return new InputTokensError(400, param, `Missing required parameter: '${param}'.`, "missing_required_parameter");
}

/** Rethrow errors that already carry an HTTP 4xx (ours or the caller's); wrap anything else. */
export function fromDependency(e: unknown, param: string, what: string): Error {
  if (e instanceof InputTokensError) {
    if (e.param === "") return new InputTokensError(e.status, param, e.message, e.code, { cause: e });
    return e;
  }
  const status = (e as { status?: unknown; statusCode?: unknown } | null)?.status ?? (e as { statusCode?: unknown } | null)?.statusCode;
  if (typeof status === "number" && status >= 400 && status < 500) return e as Error;
  return new InputTokensError(400, param, `Could not ${what}: ${(e as Error)?.message ?? String(e)}`, "invalid_value", { cause: e });
}

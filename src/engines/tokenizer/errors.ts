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

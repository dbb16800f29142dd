// The models area's rules shared with other areas.
import { ApiError } from "../../common/errors.js";

/**
 * The 404 for a model the caller cannot use: not in the catalog, or a fine-tuned model its
 * project does not have. `param` names the field that held the model id.
 */
export function modelNotFound(model: string, param: string | null = "model", cause?: unknown): ApiError {
  return new ApiError(404, `The model '${model}' does not exist or you do not have access to it.`, { param, code: "model_not_found", ...(cause !== undefined && { cause }) });
}

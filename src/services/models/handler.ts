// ModelsService (spec 4.7): the catalog plus the project's fine-tuned models; only fine-tuned
// models can be deleted, and only by an Owner or admin key (enforced by the access rule).
import type { ServiceImpl } from "@connectrpc/connect";
import { ModelsService } from "../../../gen/atrium/v1/models_pb.js";
import { scopeOf } from "../../auth/principal.js";
import { ApiError } from "../../common/errors.js";
import { allRecords } from "../../common/pages.js";
import type { ServiceDeps } from "../deps.js";
import { BUILTIN_MODELS, builtinModel } from "./catalog.js";

export const FINE_TUNED_MODEL_KIND = "fine_tuned_model";

export interface FineTunedModelRecord {
  id: string;
  created: number;
  ownedBy: string;
}

const modelNotFound = (id: string) =>
  new ApiError(404, `The model '${id}' does not exist or you do not have access to it.`, { param: "model", code: "model_not_found" });

export function createModelsService(deps: ServiceDeps): ServiceImpl<typeof ModelsService> {
  const tuned = () => deps.records.collection<FineTunedModelRecord>(FINE_TUNED_MODEL_KIND);
  const builtin = BUILTIN_MODELS.map((x) => ({ id: x.id, object: "model", created: BigInt(x.created), ownedBy: x.ownedBy, shutdownDate: x.shutdownDate ?? undefined }));
  return {
    async listModels(_req, ctx) {
      const scope = scopeOf(ctx);
      const own = (await allRecords(tuned(), scope, { order: "asc" })).map((r) => ({ id: r.id, object: "model", created: BigInt(r.data.created), ownedBy: r.data.ownedBy }));
      return { object: "list", data: own.length ? [...builtin, ...own] : builtin };
    },

    async getModel(req, ctx) {
      const b = builtinModel(req.model);
      if (b) return { id: b.id, object: "model", created: BigInt(b.created), ownedBy: b.ownedBy, shutdownDate: b.shutdownDate ?? undefined };
      const r = await tuned().get(scopeOf(ctx), req.model);
      if (!r) throw modelNotFound(req.model);
      return { id: r.id, object: "model", created: BigInt(r.data.created), ownedBy: r.data.ownedBy };
    },

    async deleteModel(req, ctx) {
      if (builtinModel(req.model))
        throw new ApiError(403, `The model '${req.model}' is a base model and cannot be deleted; only fine-tuned models can.`, {
          param: "model",
          code: "model_not_deletable",
          type: "invalid_request_error",
        });
      if (!(await tuned().delete(scopeOf(ctx), req.model))) throw modelNotFound(req.model);
      return { id: req.model, object: "model", deleted: true };
    },
  };
}

// ModelsService (spec 4.7): the catalog plus the project's fine-tuned models; only fine-tuned
// models can be deleted, and only by an Owner or admin key (enforced by the access rule).
import type { ServiceImpl } from "@connectrpc/connect";
import { ModelsService } from "../../../gen/atrium/v1/models_pb.js";
import { scopeOf } from "../../auth/principal.js";
import { ApiError } from "../../common/errors.js";
import type { ServiceDeps } from "../deps.js";
import { BUILTIN_MODELS, builtinModel } from "./catalog.js";
import { FineTunedModels } from "./fine-tuned.js";
import { modelNotFound } from "./models.js";

export function createModelsService(deps: ServiceDeps): ServiceImpl<typeof ModelsService> {
  const tuned = new FineTunedModels(deps);
  const builtin = BUILTIN_MODELS.map((x) => ({ id: x.id, object: "model", created: BigInt(x.created), ownedBy: x.ownedBy, shutdownDate: x.shutdownDate ?? undefined }));
  return {
    async listModels(_req, ctx) {
      const own = (await tuned.list(scopeOf(ctx))).map((m) => ({ id: m.id, object: "model", created: BigInt(m.created), ownedBy: m.ownedBy }));
      return { object: "list", data: own.length ? [...builtin, ...own] : builtin };
    },

    async getModel(req, ctx) {
      const b = builtinModel(req.model);
      if (b) return { id: b.id, object: "model", created: BigInt(b.created), ownedBy: b.ownedBy, shutdownDate: b.shutdownDate ?? undefined };
      const m = await tuned.get(scopeOf(ctx), req.model);
      if (!m) throw modelNotFound(req.model);
      return { id: m.id, object: "model", created: BigInt(m.created), ownedBy: m.ownedBy };
    },

    async deleteModel(req, ctx) {
      if (builtinModel(req.model))
        throw new ApiError(403, `The model '${req.model}' is a base model and cannot be deleted; only fine-tuned models can.`, {
          param: "model",
          code: "model_not_deletable",
          type: "invalid_request_error",
        });
      if (!(await tuned.delete(scopeOf(ctx), req.model))) throw modelNotFound(req.model);
      return { id: req.model, object: "model", deleted: true };
    },
  };
}

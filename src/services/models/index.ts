// The Models area (spec 4.7): the built-in catalog and the project's fine-tuned models. Other
// areas use it through what this file exports: the catalog lookups, FineTunedModels
// (fineTunedModels(deps)) and the modelNotFound error.
import { ModelsService } from "../../../gen/atrium/v1/models_pb.js";
import type { ApiArea } from "../area.js";
import type { ServiceDeps } from "../deps.js";
import { FineTunedModels } from "./fine-tuned.js";
import { createModelsService } from "./handler.js";

export { BUILTIN_MODELS, builtinModel, fineTunedBase, type CatalogModel } from "./catalog.js";
export { FineTunedModels, type FineTunedModel } from "./fine-tuned.js";
export { modelNotFound } from "./models.js";

/** The models area's fine-tuned-model API over `deps`' storage. */
export function fineTunedModels(deps: Pick<ServiceDeps, "records">): FineTunedModels {
  return new FineTunedModels(deps);
}

export const modelsArea: ApiArea = {
  name: "models",
  setup: ({ deps }) => ({ services: [{ desc: ModelsService, impl: createModelsService(deps) }] }),
};

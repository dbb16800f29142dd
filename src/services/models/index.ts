// The Models area (spec 4.7): the built-in catalog and the project's fine-tuned models.
import { ModelsService } from "../../../gen/atrium/v1/models_pb.js";
import type { ApiArea } from "../area.js";
import { createModelsService } from "./handler.js";

export const modelsArea: ApiArea = {
  name: "models",
  setup: ({ deps }) => ({ services: [{ desc: ModelsService, impl: createModelsService(deps) }] }),
};

// Every API area the server serves, in registration order. Adding an area: its own folder under
// services/ with an index.ts exporting an ApiArea, and one line here.
import type { ApiArea } from "./area.js";
import { batchesArea } from "./batches/index.js";
import { containersArea } from "./containers/index.js";
import { embeddingsArea } from "./embeddings/index.js";
import { filesArea } from "./files/index.js";
import { fineTuningArea } from "./fine_tuning/index.js";
import { modelsArea } from "./models/index.js";
import { moderationsArea } from "./moderations/index.js";
import { responsesArea } from "./responses/index.js";
import { uploadsArea } from "./uploads/index.js";
import { vectorStoresArea } from "./vector_stores/index.js";
import { videosArea } from "./videos/index.js";

export const areas: ApiArea[] = [filesArea, uploadsArea, modelsArea, responsesArea, embeddingsArea, moderationsArea, containersArea, vectorStoresArea, fineTuningArea, batchesArea, videosArea];

/** The ATRIUM_CONFIG sections the areas read, for configFromEnv's schema. */
export function areaConfigSections(list: ApiArea[] = areas): Record<string, object> {
  return Object.fromEntries(list.flatMap((a) => (a.configSection ? [[a.configSection.name, a.configSection.schema]] : [])));
}

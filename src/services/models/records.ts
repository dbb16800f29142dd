// The models area's record kinds. Private to src/services/models/: other areas go through the
// FineTunedModels API exported by index.ts.

/** A fine-tuned model of one project (written by fine-tuning, listed and deleted by Models). */
export const FINE_TUNED_MODEL_KIND = "fine_tuned_model";

export interface FineTunedModelRecord {
  id: string;
  created: number;
  ownedBy: string;
}

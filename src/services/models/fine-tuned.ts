// The project's fine-tuned models, as other areas use them: fine-tuning creates them inside its
// own atomic writes (a job's completion, a checkpoint permission) and removes them the same way.
import { allRecords } from "../../common/pages.js";
import type { Scope, WriteOp } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { FINE_TUNED_MODEL_KIND, type FineTunedModelRecord } from "./records.js";

/** A fine-tuned model: its id (`ft:<base>:<org>:<suffix>:<id>` or a checkpoint's), creation time and owner. */
export interface FineTunedModel {
  id: string;
  /** Unix seconds. */
  created: number;
  ownedBy: string;
}

export class FineTunedModels {
  constructor(private readonly deps: Pick<ServiceDeps, "records">) {}

  private get records() {
    return this.deps.records.collection<FineTunedModelRecord>(FINE_TUNED_MODEL_KIND);
  }

  /** The model, or undefined when the project does not have it. */
  async get(scope: Scope, id: string): Promise<FineTunedModel | undefined> {
    const r = await this.records.get(scope, id);
    return r && { id: r.id, created: r.data.created, ownedBy: r.data.ownedBy };
  }

  async has(scope: Scope, id: string): Promise<boolean> {
    return (await this.records.get(scope, id)) !== undefined;
  }

  /** The project's models, oldest first. */
  async list(scope: Scope): Promise<FineTunedModel[]> {
    return (await allRecords(this.records, scope, { order: "asc" })).map((r) => ({ id: r.id, created: r.data.created, ownedBy: r.data.ownedBy }));
  }

  /**
   * The op that adds `model` to the project of `scope`, for the caller's atomic write. A project
   * that already has it fails the write with a DuplicateRecord.
   */
  createOp(scope: Scope, model: FineTunedModel): WriteOp {
    const data: FineTunedModelRecord = { id: model.id, created: model.created, ownedBy: model.ownedBy };
    return { op: "insert", kind: FINE_TUNED_MODEL_KIND, scope, record: { id: model.id, createdAt: model.created, data } };
  }

  /** The op that removes model `id` from the project of `scope` (absent: nothing), for the caller's atomic write. */
  deleteOp(scope: Scope, id: string): WriteOp {
    return { op: "delete", kind: FINE_TUNED_MODEL_KIND, scope, id };
  }

  /** Removes model `id`; false when the project did not have it. */
  delete(scope: Scope, id: string): Promise<boolean> {
    return this.records.delete(scope, id);
  }
}

// Checkpoint permissions (spec 4.10; admin keys only, by the access rule). Checkpoints belong to
// one project's job, but permissions are the organization's: every checkpoint a job writes is
// also indexed in an organization-wide scope, so an admin key (whatever project it selects) finds
// it. Granting a project writes, in one transaction, the permission, a uniqueness marker
// (checkpoint, project) and a fine-tuned model record in that project — which is how the
// checkpoint shows up in the project's /v1/models. Revoking removes all three.
import { capIds } from "../../common/caps.js";
import { ApiError, invalidParam, missingParam, notFound } from "../../common/errors.js";
import { newId } from "../../common/ids.js";
import { DuplicateRecord, type ListQuery, type Scope, type WriteOp } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { fineTunedModels } from "../models/index.js";
import { CHECKPOINT_REF_KIND, GRANT_KIND, PERMISSION_KIND, type CheckpointRef, type PermissionRecord } from "./records.js";


/** The organization-wide scope the checkpoint index and permissions live in. */
/** Projects one grant request may name (the platform publishes no cap). */
export const MAX_GRANT_PROJECTS = 100;

export const orgScope = (organizationId: string): Scope => ({ projectId: `~org/${organizationId}` });

const grantId = (checkpoint: string, projectId: string) => `${checkpoint}|${projectId}`;

export class CheckpointPermissions {
  constructor(private readonly deps: ServiceDeps) {}

  private get permissions() {
    return this.deps.records.collection<PermissionRecord>(PERMISSION_KIND);
  }

  private async checkpoint(org: string, checkpoint: string): Promise<CheckpointRef> {
    if (!checkpoint) throw missingParam("fine_tuned_model_checkpoint");
    const ref = await this.deps.records.collection<CheckpointRef>(CHECKPOINT_REF_KIND).get(orgScope(org), checkpoint);
    if (!ref) throw notFound("fine-tuned model checkpoint", checkpoint, "fine_tuned_model_checkpoint");
    return ref.data;
  }

  async create(org: string, checkpoint: string, projectIds: string[]): Promise<PermissionRecord[]> {
    await this.checkpoint(org, checkpoint);
    if (projectIds.length === 0) throw missingParam("project_ids");
    capIds(projectIds, "project_ids", MAX_GRANT_PROJECTS);
    for (const [i, p] of projectIds.entries()) {
      const project = p ? await this.deps.keys.project(p) : undefined;
      if (!project || project.organizationId !== org)
        throw invalidParam(`project_ids[${i}]`, `Invalid 'project_ids[${i}]': '${p}' is not a project of organization ${org}.`, "project_not_found");
      if (projectIds.indexOf(p) !== i) throw invalidParam(`project_ids[${i}]`, `Invalid 'project_ids[${i}]': '${p}' is listed more than once.`);
    }
    const scope = orgScope(org);
    const out: PermissionRecord[] = [];
    for (const projectId of projectIds) {
      const existing = await this.deps.records.collection<{ permissionId: string }>(GRANT_KIND).get(scope, grantId(checkpoint, projectId));
      if (existing) {
        const p = await this.permissions.get(scope, existing.data.permissionId);
        if (p) {
          out.push(p.data);
          continue;
        }
      }
      const now = this.deps.clock.now();
      const rec: PermissionRecord = { id: newId("cp_"), createdAt: now, projectId, checkpoint };
      const ops: WriteOp[] = [
        { op: "insert", kind: GRANT_KIND, scope, record: { id: grantId(checkpoint, projectId), createdAt: now, data: { permissionId: rec.id } } },
        { op: "insert", kind: PERMISSION_KIND, scope, record: { id: rec.id, parentId: checkpoint, createdAt: now, tag: projectId, data: rec } },
        fineTunedModels(this.deps).createOp({ projectId }, { id: checkpoint, created: now, ownedBy: org }),
      ];
      try {
        await this.deps.records.atomically(ops);
      } catch (e) {
        if (!(e instanceof DuplicateRecord)) throw e;
        // A concurrent grant of the same project, or the project already has the model: grant without it.
        if (e.kind === GRANT_KIND) throw new ApiError(409, "The permission was granted by another request at the same time; list the permissions.", { code: "conflict", type: "conflict_error" });
        await this.deps.records.atomically(ops.slice(0, 2));
      }
      out.push(rec);
    }
    return out;
  }

  async list(org: string, checkpoint: string, q: ListQuery, projectId: string | undefined) {
    await this.checkpoint(org, checkpoint);
    return this.permissions.list(orgScope(org), { ...q, parentId: checkpoint, tag: projectId });
  }

  async delete(org: string, checkpoint: string, permissionId: string): Promise<void> {
    await this.checkpoint(org, checkpoint);
    const scope = orgScope(org);
    const p = await this.permissions.get(scope, permissionId);
    if (!p || p.data.checkpoint !== checkpoint) throw notFound("checkpoint permission", permissionId, "permission_id");
    await this.deps.records.atomically([
      { op: "delete", kind: PERMISSION_KIND, scope, id: permissionId, expectVersion: p.version },
      { op: "delete", kind: GRANT_KIND, scope, id: grantId(checkpoint, p.data.projectId) },
      fineTunedModels(this.deps).deleteOp({ projectId: p.data.projectId }, checkpoint),
    ]);
  }
}

// First-start set-up (README, "Quick start"): a default organization and project, the keys
// from ATRIUM_API_KEY / ATRIUM_ADMIN_KEY and ATRIUM_CONFIG, and — when no key exists at all —
// one generated admin key, returned so main() can print it once. Only hashes are stored.
import type { AtriumConfig } from "../config.js";
import { KeyStore, newSecret } from "./keys.js";

export const DEFAULT_ORG = "org-default";
export const DEFAULT_PROJECT = "proj_default";

export async function bootstrap(keys: KeyStore, cfg: AtriumConfig): Promise<{ generatedAdminKey?: string }> {
  await keys.putOrganization({ id: DEFAULT_ORG, name: "Default organization" });
  await keys.putProject({ id: DEFAULT_PROJECT, organizationId: DEFAULT_ORG, name: "Default project" });
  const defaults = new Map<string, string>([[DEFAULT_ORG, DEFAULT_PROJECT]]);
  for (const o of cfg.file.organizations ?? []) {
    await keys.putOrganization({ id: o.id, name: o.name ?? o.id });
    for (const p of o.projects ?? []) {
      await keys.putProject({ id: p.id, organizationId: o.id, name: p.name ?? p.id }, { archived: p.archived });
      if (!defaults.has(o.id)) defaults.set(o.id, p.id);
    }
  }
  if (cfg.apiKey)
    await keys.put(cfg.apiKey, {
      name: "ATRIUM_API_KEY",
      kind: "standard",
      memberships: [{ organizationId: DEFAULT_ORG, projectId: DEFAULT_PROJECT, role: "member" }],
    });
  if (cfg.adminKey)
    await keys.put(cfg.adminKey, {
      name: "ATRIUM_ADMIN_KEY",
      kind: "admin",
      memberships: [{ organizationId: DEFAULT_ORG, projectId: null, defaultProjectId: DEFAULT_PROJECT, role: "owner" }],
    });
  for (const k of cfg.file.keys ?? []) {
    const kind = k.kind ?? "standard";
    const role = k.role ?? (kind === "admin" ? "owner" : "member");
    const memberships =
      kind === "admin" && !k.projects?.length
        ? [{ organizationId: k.organization, projectId: null, defaultProjectId: defaults.get(k.organization), role }]
        : (k.projects ?? []).map((p) => ({ organizationId: k.organization, projectId: p, role }));
    for (const m of memberships)
      if (m.projectId && !(await keys.project(m.projectId)))
        await keys.putProject({ id: m.projectId, organizationId: k.organization, name: m.projectId });
    await keys.put(k.key!, { name: k.name ?? "config key", kind, memberships }, { revoked: k.revoked });
  }
  if ((await keys.count()) === 0) {
    const secret = newSecret("admin");
    // Instances starting together on one database may all see no key: one of them generates it.
    const generated = await keys.putFirstAdminKey(secret, {
      name: "generated admin key",
      kind: "admin",
      memberships: [{ organizationId: DEFAULT_ORG, projectId: null, defaultProjectId: DEFAULT_PROJECT, role: "owner" }],
    });
    if (generated) return { generatedAdminKey: secret };
  }
  return {};
}

// The containers area's record kinds and row types, private to src/services/containers/.
import type { NetworkPolicy } from "./network-policy.js";

export const CONTAINER_KIND = "container";
export const CONTAINER_FILE_KIND = "container_file";
export const CONTAINER_PATH_KIND = "container_path";
export const CONTAINER_SKILL_KIND = "container_skill";

export type ContainerStatus = "running" | "expired";

export interface SealedSecret {
  domain: string;
  name: string;
  /** SecretBox.seal(value, secretContext(...)). */
  sealed: string;
}

export interface ContainerRecord {
  id: string;
  name: string;
  createdAt: number;
  status: ContainerStatus;
  minutes: number;
  lastActiveAt: number;
  memoryLimit: string;
  networkPolicy: NetworkPolicy | null;
  domainSecrets: SealedSecret[];
}

export interface ContainerFileRecord {
  id: string;
  containerId: string;
  bytes: number;
  createdAt: number;
  /** /mnt/data/<name> */
  path: string;
  source: "user";
  mimeType: string;
  /** Where the bytes are: the file's own id (uploaded), or the id of the File it shares. */
  blobKey: string;
}

export type SkillRecord =
  | { id: string; type: "skill_reference"; skillId: string; version: string | null }
  | { id: string; type: "inline"; name: string; description: string; bytes: number };

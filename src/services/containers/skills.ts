// skills of POST /containers (spec 4.2): references to skills by id, or inline zip bundles sent as
// base64. An inline bundle must decode, stay under the size cap and be a well-formed zip whose
// entries would unpack inside the skill's folder; its central directory is read without
// inflating anything, so a zip bomb costs nothing here.
import { unzipSync } from "fflate";
import type { ContainerSkill } from "../../../gen/atrium/v1/containers_pb.js";
import { invalidParam, missingParam } from "../../common/errors.js";

export const MAX_SKILLS = 20;
/** Decoded size of one inline bundle. (The whole JSON body is capped at 32 MiB before this.) */
export const MAX_INLINE_SKILL_BYTES = 20 * 1024 * 1024;
export const MAX_SKILL_ENTRIES = 10_000;
const MAX_SKILL_NAME = 64;
const MAX_SKILL_DESCRIPTION = 1024;

export type SkillSpec =
  | { type: "skill_reference"; skillId: string; /** "latest", a positive integer as a string, or null (not given). */ version: string | null }
  | { type: "inline"; name: string; description: string; zip: Uint8Array };

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;
const SKILL_ID_RE = /^[A-Za-z0-9_.:-]{1,128}$/;

function checkVersion(v: ContainerSkill["version"], param: string): string | null {
  const k = v?.kind;
  if (!k || k.case === undefined || k.case === "nullValue") return null;
  if (k.case === "numberValue" && Number.isSafeInteger(k.value) && k.value > 0) return String(k.value);
  if (k.case === "stringValue" && (k.value === "latest" || /^[1-9][0-9]{0,15}$/.test(k.value))) return k.value;
  throw invalidParam(param, `Invalid '${param}': expected a positive integer or 'latest'.`);
}

function unexpected(param: string, type: string): never {
  throw invalidParam(param, `'${param}' is not accepted for a skill of type '${type}'.`, "unknown_parameter");
}

/** Decodes base64 strictly (Buffer.from skips bad characters silently). */
function decodeBase64(data: string, param: string): Uint8Array {
  const s = data.replace(/\s+/g, "");
  if (s.length % 4 === 1 || !BASE64_RE.test(s)) throw invalidParam(param, `Invalid '${param}': not valid base64.`, "invalid_base64");
  // Checked before decoding, from the encoded length.
  if (Math.floor((s.length * 3) / 4) - (s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0) > MAX_INLINE_SKILL_BYTES)
    throw invalidParam(param, `Invalid '${param}': an inline skill bundle can be at most ${MAX_INLINE_SKILL_BYTES} bytes (20 MB) once decoded.`, "skill_too_large");
  return new Uint8Array(Buffer.from(s, "base64"));
}

function checkZip(zip: Uint8Array, param: string) {
  const entries: Array<{ name: string; compression: number }> = [];
  try {
    unzipSync(zip, {
      filter: (f) => {
        entries.push({ name: f.name, compression: f.compression });
        return false;
      },
    });
  } catch {
    throw invalidParam(param, `Invalid '${param}': the data is not a valid zip archive.`, "invalid_zip");
  }
  const files = entries.filter((e) => !e.name.endsWith("/"));
  if (!files.length) throw invalidParam(param, `Invalid '${param}': the zip archive contains no files.`, "invalid_zip");
  if (entries.length > MAX_SKILL_ENTRIES) throw invalidParam(param, `Invalid '${param}': the zip archive has more than ${MAX_SKILL_ENTRIES} entries.`, "invalid_zip");
  for (const e of entries) {
    const parts = e.name.split(/[\\/]/);
    if (e.name.startsWith("/") || /^[A-Za-z]:/.test(e.name) || parts.includes("..") || e.name.includes("\0"))
      throw invalidParam(param, `Invalid '${param}': the zip entry '${e.name}' would unpack outside the skill's folder.`, "invalid_zip");
    if (e.compression !== 0 && e.compression !== 8)
      throw invalidParam(param, `Invalid '${param}': the zip entry '${e.name}' uses compression method ${e.compression}; only stored and deflate are supported.`, "invalid_zip");
  }
}

export function checkSkills(skills: ContainerSkill[]): SkillSpec[] {
  if (skills.length > MAX_SKILLS) throw invalidParam("skills", `'skills' can list at most ${MAX_SKILLS} skills.`, "array_above_max_length");
  return skills.map((s, i): SkillSpec => {
    const at = `skills[${i}]`;
    if (!s.type) throw missingParam(`${at}.type`);
    if (s.type === "skill_reference") {
      if (s.name !== undefined) unexpected(`${at}.name`, s.type);
      if (s.description !== undefined) unexpected(`${at}.description`, s.type);
      if (s.source) unexpected(`${at}.source`, s.type);
      if (!s.skillId) throw missingParam(`${at}.skill_id`);
      if (!SKILL_ID_RE.test(s.skillId)) throw invalidParam(`${at}.skill_id`, `Invalid '${at}.skill_id': '${s.skillId}' is not a skill id.`);
      return { type: "skill_reference", skillId: s.skillId, version: checkVersion(s.version, `${at}.version`) };
    }
    if (s.type === "inline") {
      if (s.skillId !== undefined) unexpected(`${at}.skill_id`, s.type);
      if (checkVersion(s.version, `${at}.version`) !== null) unexpected(`${at}.version`, s.type);
      const name = s.name?.trim();
      if (!name) throw missingParam(`${at}.name`);
      if (name.length > MAX_SKILL_NAME) throw invalidParam(`${at}.name`, `Invalid '${at}.name': at most ${MAX_SKILL_NAME} characters.`, "string_above_max_length");
      const description = s.description?.trim();
      if (!description) throw missingParam(`${at}.description`);
      if (description.length > MAX_SKILL_DESCRIPTION)
        throw invalidParam(`${at}.description`, `Invalid '${at}.description': at most ${MAX_SKILL_DESCRIPTION} characters.`, "string_above_max_length");
      const src = s.source;
      if (!src) throw missingParam(`${at}.source`);
      if (!src.type) throw missingParam(`${at}.source.type`);
      if (src.type !== "base64") throw invalidParam(`${at}.source.type`, `Invalid value for '${at}.source.type': '${src.type}'. Supported values are: 'base64'.`);
      if (!src.mediaType) throw missingParam(`${at}.source.media_type`);
      if (src.mediaType !== "application/zip")
        throw invalidParam(`${at}.source.media_type`, `Invalid value for '${at}.source.media_type': '${src.mediaType}'. Supported values are: 'application/zip'.`);
      if (!src.data) throw missingParam(`${at}.source.data`);
      const zip = decodeBase64(src.data, `${at}.source.data`);
      checkZip(zip, `${at}.source.data`);
      return { type: "inline", name, description, zip };
    }
    throw invalidParam(`${at}.type`, `Invalid value for '${at}.type': '${s.type}'. Supported values are: 'skill_reference', 'inline'.`);
  });
}

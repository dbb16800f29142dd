// Videos and characters (spec 4.9, 2.10, 3): the domain rules and storage behind VideosService.
//
// Records: the video (its status, progress, and how it is made: a prompt, an optional reference
// image, an optional source video for remix/edit/extension, the characters its prompt names); the
// character (name, and its reference clip in a blob). Bytes: the reference image `<id>.input`,
// the three assets `<id>.video|thumbnail|spritesheet` once rendered, a character's `<id>.clip`.
//
// Life cycle: queued ─(render job claims it)→ in_progress ─→ completed (assets stored, expires_at
// set, an assets timer due then) or failed (error set). Rendering is a durable job (jobs.ts); a
// video record and an "enqueue" timer are written together, so a crash before the job is enqueued
// is caught up by the sweeper. When the assets timer fires, the assets are removed and the video
// keeps its record with expires_at in the past (content is then a 404 `video_expired`). DELETE
// (completed or failed only) writes a purge timer with the delete, so a crash half-way through
// removing the bytes is finished by the sweeper.
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, rm } from "node:fs/promises";
import { join } from "node:path";
import { once } from "node:events";
import { Readable } from "node:stream";
import { inspectImage, MediaFormatError, type ImageFormat, type ImageInfo } from "../../engines/media/image.js";
import { FfmpegError, normaliseClip } from "../../engines/video/index.js";
import { capChars } from "../../common/caps.js";
import { ApiError, invalidParam, missingParam, notFound } from "../../common/errors.js";
import { FetchUrlError, fetchUrl, type FetchPolicy } from "../../common/fetch-url.js";
import { newId } from "../../common/ids.js";
import type { JobRunner } from "../../jobs/runner.js";
import { timerKind, type TimerData } from "../../jobs/expiry.js";
import type { ListQuery, Scope, WriteOp } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import { filesApi } from "../files/index.js";
import { renderJobId, VIDEOS_RENDER_JOB } from "./jobs.js";
import { CHARACTER_KIND, VIDEO_KIND, type CharacterRecord, type VideoRecord, type VideoVariant } from "./records.js";
import { DataUrlError, decodeDataUrl, splitDataUrl } from "../../common/data-url.js";

/** Fires at expires_at: the assets go. */
export const ASSETS_TIMER = "videos.expire_assets";
/** Fires a minute after creation: enqueues the render if a crash came between the record and the job. */
export const ENQUEUE_TIMER = "videos.enqueue";
/** Written with a delete: removes the bytes if the delete's clean-up did not finish. */
export const PURGE_TIMER = "videos.purge";

export const VIDEO_MODELS = ["vid-2", "vid-2-pro", "vid-2-2025-10-06", "vid-2-pro-2025-10-06", "vid-2-2025-12-08"] as const;
export const DEFAULT_MODEL = "vid-2";
/** The pro models also render the tall and wide sizes (as on the platform). */
const PRO_MODELS = new Set(["vid-2-pro", "vid-2-pro-2025-10-06"]);
export const SIZES = ["720x1280", "1280x720", "1024x1792", "1792x1024"] as const;
const STANDARD_SIZES = ["720x1280", "1280x720"];
export const DEFAULT_SIZE = "720x1280";
export const SECONDS = ["4", "8", "12"] as const;
export const DEFAULT_SECONDS = "4";
export const EXTENSION_SECONDS = ["4", "8", "12", "16", "20"] as const;
export const MAX_PROMPT_CHARS = 32_000;
export const MAX_CHARACTER_NAME_CHARS = 80;
/** An http(s) reference image URL (a data URL is bounded by MAX_IMAGE_BYTES instead): room for signed URLs. */
export const MAX_IMAGE_URL_CHARS = 8192;
/** A reference image, however it comes (upload, file_id, URL). */
export const MAX_IMAGE_BYTES = 20 * 1024 * 1024;
export const MAX_CHARACTER_VIDEO_BYTES = 512 * 1024 * 1024;
/** An extension of an extension of ... stops here. */
export const MAX_TOTAL_SECONDS = 120;
/** Characters one prompt may name (each takes a lane in the picture). */
export const MAX_CHARACTERS_PER_VIDEO = 3;
const IMAGE_FORMATS: ReadonlySet<ImageFormat> = new Set(["png", "jpeg", "webp"]);
const ENQUEUE_GRACE_SECONDS = 60;

export const VARIANTS: Record<VideoVariant, string> = { video: "video/mp4", thumbnail: "image/webp", spritesheet: "image/webp" };

export const assetKey = (videoId: string, variant: VideoVariant) => `${videoId}.${variant}`;
export const inputKey = (videoId: string) => `${videoId}.input`;
export const clipKey = (characterId: string) => `${characterId}.clip`;

export interface CreateVideoInput {
  prompt?: string;
  model?: string;
  seconds?: string;
  size?: string;
  reference?: { fileId?: string; imageUrl?: string };
  /** An uploaded reference image (multipart), already read. */
  upload?: Uint8Array;
}

export interface VideosSettings {
  /** Lifetime of a completed video's assets. */
  assetTtlSeconds: number;
  /** For image_url references. */
  fetchPolicy: FetchPolicy;
  /** Scratch space for uploads being checked (character videos). */
  workDir: string;
}

const invalidState = (v: VideoRecord, param: string, doing: string) =>
  new ApiError(400, `Invalid '${param}': video ${v.id} is ${v.status}${v.assetsExpired ? " and its assets expired" : ""}; only a completed video can ${doing}.`, {
    param,
    code: "invalid_video_state",
  });

function oneOf(param: string, value: string, allowed: readonly string[]): string {
  if (!allowed.includes(value))
    throw invalidParam(param, `Invalid value for '${param}': '${value}'. Supported values are: ${allowed.map((v) => `'${v}'`).join(", ")}.`);
  return value;
}

function checkPrompt(prompt: string | undefined): string {
  if (prompt === undefined) throw missingParam("prompt");
  if (!prompt.trim()) throw invalidParam("prompt", "Invalid 'prompt': it cannot be empty.", "empty_string");
  // Characters as the platform counts them: code points.
  const chars = [...prompt].length;
  if (chars > MAX_PROMPT_CHARS)
    throw invalidParam("prompt", `Invalid 'prompt': string too long. Expected a string with maximum length ${MAX_PROMPT_CHARS}, but got a string with length ${chars} instead.`, "string_above_max_length");
  return prompt;
}

/** The model's sizes: vid-2 renders portrait and landscape 720p; the pro models also the tall ones. */
export function sizesFor(model: string): readonly string[] {
  return PRO_MODELS.has(model) ? SIZES : STANDARD_SIZES;
}

/** A reference image given as a data URL; base64 over MAX_IMAGE_BYTES is refused before decoding. */
function imageDataUrlBytes(url: string, param: string): Uint8Array {
  const d = splitDataUrl(url);
  if (!d) throw invalidParam(param, `Invalid '${param}': not a valid data URL.`, "invalid_image_url");
  try {
    return decodeDataUrl(d, { maxBytes: d.base64 ? MAX_IMAGE_BYTES : undefined });
  } catch (e) {
    if (!(e instanceof DataUrlError)) throw e;
    if (e.problem === "too_large") throw tooLarge(param);
    if (e.problem === "invalid_base64") throw invalidParam(param, `Invalid '${param}': the data URL is not valid base64.`, "invalid_base64");
    throw invalidParam(param, `Invalid '${param}': the data URL is not valid percent-encoding.`, "invalid_image_url");
  }
}

const tooLarge = (param: string) => new ApiError(413, `The image in '${param}' is larger than ${MAX_IMAGE_BYTES} bytes.`, { param, code: "image_too_large" });

export class Videos {
  constructor(
    private readonly deps: ServiceDeps,
    private readonly jobs: JobRunner,
    private readonly settings: VideosSettings,
  ) {}

  private get videos() {
    return this.deps.records.collection<VideoRecord>(VIDEO_KIND);
  }
  private get characters() {
    return this.deps.records.collection<CharacterRecord>(CHARACTER_KIND);
  }

  /** The video `id`, or undefined when absent. */
  async find(scope: Scope, id: string): Promise<VideoRecord | undefined> {
    return (await this.videos.get(scope, id))?.data;
  }

  /** The character `id`, or undefined when absent. */
  async findCharacter(scope: Scope, id: string): Promise<CharacterRecord | undefined> {
    return (await this.characters.get(scope, id))?.data;
  }

  // ---- creating ----

  async create(scope: Scope, input: CreateVideoInput): Promise<VideoRecord> {
    const prompt = checkPrompt(input.prompt);
    const model = oneOf("model", input.model ?? DEFAULT_MODEL, VIDEO_MODELS);
    const seconds = oneOf("seconds", input.seconds ?? DEFAULT_SECONDS, SECONDS);
    const size = input.size ?? DEFAULT_SIZE;
    oneOf("size", size, SIZES);
    if (!sizesFor(model).includes(size))
      throw invalidParam("size", `Invalid value for 'size': '${size}' is not available with model '${model}'. Supported sizes for it are: ${sizesFor(model).map((s) => `'${s}'`).join(", ")}.`);
    const characterIds = await this.charactersNamed(scope, prompt);
    const image = await this.referenceImage(scope, input);
    if (image) this.checkImage(image.bytes, image.param, size);

    const id = newId("video_");
    if (image) await this.deps.blobs.put(inputKey(id), Readable.from([image.bytes]));
    try {
      return await this.insert(scope, this.newRecord(id, { prompt, model, seconds, size, characterIds, hasInputReference: !!image }));
    } catch (e) {
      if (image) await this.deps.blobs.delete(inputKey(id));
      throw e;
    }
  }

  /** Remix (POST /videos/{id}/remix), edit (POST /videos/edits) or extension (POST /videos/extensions) of a completed video. */
  async derive(scope: Scope, kind: "remix" | "edit" | "extension", input: { videoId?: string; prompt?: string; seconds?: string }): Promise<VideoRecord> {
    const param = kind === "remix" ? "video_id" : "video.id";
    if (!input.videoId) throw missingParam(param);
    const source = await this.get(scope, input.videoId, param);
    const prompt = checkPrompt(input.prompt);
    let seconds = source.seconds;
    let segmentSeconds: string | null = null;
    if (kind === "extension") {
      if (input.seconds === undefined) throw missingParam("seconds");
      segmentSeconds = oneOf("seconds", input.seconds, EXTENSION_SECONDS);
      const total = Number(source.seconds) + Number(segmentSeconds);
      if (total > MAX_TOTAL_SECONDS)
        throw invalidParam("seconds", `Invalid 'seconds': the extended video would be ${total} seconds long; at most ${MAX_TOTAL_SECONDS} are allowed.`, "video_too_long");
      seconds = String(total);
    }
    if (source.status !== "completed" || source.assetsExpired) throw invalidState(source, param, `be ${kind === "extension" ? "extended" : kind === "edit" ? "edited" : "remixed"}`);
    const characterIds = await this.charactersNamed(scope, prompt);
    const id = newId("video_");
    return this.insert(
      scope,
      this.newRecord(id, {
        prompt,
        model: source.model,
        seconds,
        size: source.size,
        characterIds,
        hasInputReference: false,
        // Edits are the remix's successor: both name the video they start from.
        remixedFromVideoId: kind === "extension" ? null : source.id,
        source: { kind, videoId: source.id, segmentSeconds },
      }),
    );
  }

  private newRecord(id: string, r: Pick<VideoRecord, "prompt" | "model" | "seconds" | "size" | "characterIds" | "hasInputReference"> & Partial<VideoRecord>): VideoRecord {
    return {
      id,
      createdAt: this.deps.clock.now(),
      status: "queued",
      progress: 0,
      completedAt: null,
      expiresAt: null,
      error: null,
      remixedFromVideoId: null,
      source: null,
      startedAtMs: null,
      assets: null,
      assetsExpired: false,
      rendered: null,
      ...r,
    };
  }

  /** The record and its safety-net timer in one transaction, then the render job. */
  private async insert(scope: Scope, rec: VideoRecord): Promise<VideoRecord> {
    await this.deps.records.atomically([
      { op: "insert", kind: VIDEO_KIND, scope, record: { id: rec.id, createdAt: rec.createdAt, data: rec } },
      {
        op: "insert",
        kind: timerKind(ENQUEUE_TIMER),
        scope,
        record: { id: rec.id, createdAt: rec.createdAt, expiresAt: rec.createdAt + ENQUEUE_GRACE_SECONDS, data: { targetId: rec.id } satisfies TimerData },
      },
    ]);
    await this.enqueueRender(scope, rec.id);
    return rec;
  }

  /** Idempotent: one render job per video, ever. */
  enqueueRender(scope: Scope, videoId: string) {
    return this.jobs.enqueue(scope, VIDEOS_RENDER_JOB, { videoId }, { id: renderJobId(videoId) });
  }

  /** `@char_...` mentions in the prompt: characters of this project, at most MAX_CHARACTERS_PER_VIDEO. */
  private async charactersNamed(scope: Scope, prompt: string): Promise<string[]> {
    const ids = [...new Set([...prompt.matchAll(/@(char_[A-Za-z0-9]+)/g)].map((m) => m[1]))];
    if (ids.length > MAX_CHARACTERS_PER_VIDEO)
      throw invalidParam("prompt", `Invalid 'prompt': it names ${ids.length} characters; at most ${MAX_CHARACTERS_PER_VIDEO} can appear in one video.`);
    for (const id of ids)
      if (!(await this.characters.get(scope, id))) throw invalidParam("prompt", `Invalid 'prompt': it names character '${id}', which does not exist in this project.`, "character_not_found");
    return ids;
  }

  /** The reference image's bytes, from exactly one of: the upload, file_id, image_url. */
  private async referenceImage(scope: Scope, input: CreateVideoInput): Promise<{ bytes: Uint8Array; param: string } | undefined> {
    const ref = input.reference;
    if (input.upload && ref) throw invalidParam("input_reference", "Give 'input_reference' once: as an uploaded file, or as {file_id} or {image_url}, not both.");
    if (input.upload) {
      if (!input.upload.length) throw invalidParam("input_reference", "The uploaded 'input_reference' is empty.", "empty_file");
      return { bytes: input.upload, param: "input_reference" };
    }
    if (!ref) return undefined;
    if (ref.fileId !== undefined && ref.imageUrl !== undefined)
      throw invalidParam("input_reference", "Invalid 'input_reference': give exactly one of 'file_id' and 'image_url'.");
    if (ref.fileId !== undefined) {
      const param = "input_reference.file_id";
      if (!ref.fileId) throw invalidParam(param, `Invalid '${param}': empty file id.`);
      const files = filesApi(this.deps);
      const f = await files.get(scope, ref.fileId, param);
      if (f.bytes > MAX_IMAGE_BYTES) throw tooLarge(param);
      return { bytes: await files.readAll(scope, f, { maxBytes: MAX_IMAGE_BYTES, param }), param };
    }
    if (ref.imageUrl !== undefined) {
      const param = "input_reference.image_url";
      const url = ref.imageUrl;
      if (/^data:/i.test(url)) return { bytes: imageDataUrlBytes(url, param), param };
      capChars(url, param, MAX_IMAGE_URL_CHARS);
      if (!/^https?:\/\//i.test(url)) throw invalidParam(param, `Invalid '${param}': expected an http(s) URL or a base64 data URL.`, "invalid_image_url");
      try {
        return { bytes: await fetchUrl(url, { ...this.settings.fetchPolicy, maxBytes: MAX_IMAGE_BYTES }), param };
      } catch (e) {
        if (e instanceof FetchUrlError) throw new ApiError(e.status, `Invalid '${param}': ${e.message}`, { param, code: e.code });
        throw e;
      }
    }
    throw invalidParam("input_reference", "Invalid 'input_reference': give 'file_id' or 'image_url'.", "missing_required_parameter");
  }

  /** PNG, JPEG or WebP, of exactly the video's size: it is the first frame. */
  private checkImage(bytes: Uint8Array, param: string, size: string): void {
    let info: ImageInfo;
    try {
      info = inspectImage(bytes);
    } catch (e) {
      if (!(e instanceof MediaFormatError)) throw e;
      throw invalidParam(param, `Invalid '${param}': not a readable image (expected PNG, JPEG or WebP).`, "invalid_image");
    }
    if (!IMAGE_FORMATS.has(info.format))
      throw invalidParam(param, `Invalid '${param}': ${info.format} images are not supported (expected PNG, JPEG or WebP).`, "invalid_image_format");
    const got = `${info.width}x${info.height}`;
    if (got !== size)
      throw invalidParam(param, `Invalid '${param}': the image is ${got}, but the video is ${size}; the reference image must match the requested size exactly.`, "image_size_mismatch");
  }

  // ---- reading ----

  async get(scope: Scope, id: string, param = "video_id"): Promise<VideoRecord> {
    const r = await this.videos.get(scope, id);
    if (!r) throw notFound("video", id, param);
    return r.data;
  }

  list(scope: Scope, q: ListQuery) {
    return this.videos.list(scope, q);
  }

  /** Where an asset's bytes are; a 4xx that says why when there are none. */
  async content(scope: Scope, id: string, variant = "video"): Promise<{ key: string; size: number; contentType: string }> {
    const v = await this.get(scope, id);
    if (!(variant in VARIANTS)) oneOf("variant", variant, Object.keys(VARIANTS));
    if (v.assetsExpired)
      throw new ApiError(404, `The assets of video ${id} expired at ${v.expiresAt} and are no longer stored.`, { param: "video_id", code: "video_expired" });
    if (v.status !== "completed" || !v.assets)
      throw new ApiError(400, `Invalid 'video_id': video ${id} is ${v.status}; its content can be downloaded once it is completed.`, {
        param: "video_id",
        code: v.status === "failed" ? "video_failed" : "video_not_ready",
      });
    const which = variant as VideoVariant;
    return { key: assetKey(id, which), size: v.assets[which], contentType: VARIANTS[which] };
  }

  // ---- removing ----

  async delete(scope: Scope, id: string): Promise<void> {
    const cur = await this.videos.get(scope, id);
    if (!cur) throw notFound("video", id, "video_id");
    if (cur.data.status !== "completed" && cur.data.status !== "failed")
      throw new ApiError(400, `Invalid 'video_id': video ${id} is ${cur.data.status}; only completed or failed videos can be deleted.`, { param: "video_id", code: "invalid_video_state" });
    const now = this.deps.clock.now();
    await this.deps.records.atomically([
      { op: "delete", kind: VIDEO_KIND, scope, id, expectVersion: cur.version },
      { op: "delete", kind: timerKind(ASSETS_TIMER), scope, id },
      { op: "delete", kind: timerKind(ENQUEUE_TIMER), scope, id },
      { op: "insert", kind: timerKind(PURGE_TIMER), scope, record: { id, createdAt: now, expiresAt: now, data: { targetId: id } satisfies TimerData } },
    ]);
    try {
      await this.purge(id);
    } catch (err) {
      // The video is deleted, so the call has succeeded; its purge timer retries the bytes (and the
      // orphan sweeper would reclaim them).
      this.deps.log.warn({ err, videoId: id }, "assets of a deleted video not removed yet; its purge timer retries");
      return;
    }
    await this.deps.records.collection(timerKind(PURGE_TIMER)).delete(scope, id);
  }

  /** Removes every blob of a video (absent ones are fine: this runs again after a crash). */
  async purge(videoId: string): Promise<void> {
    for (const variant of Object.keys(VARIANTS) as VideoVariant[]) await this.deps.blobs.delete(assetKey(videoId, variant));
    await this.deps.blobs.delete(inputKey(videoId));
  }

  /** The assets timer: the bytes go, the record says so. Idempotent. */
  async expireAssets(scope: Scope, videoId: string): Promise<void> {
    const cur = await this.videos.get(scope, videoId);
    if (cur && !cur.data.assetsExpired) await this.videos.update(scope, videoId, { ...cur.data, assetsExpired: true }, { expectVersion: cur.version });
    await this.purge(videoId);
  }

  // ---- written by the render job ----

  /** Record writes for the job, to commit with its checkpoint or completion. */
  updateOp(scope: Scope, rec: VideoRecord): WriteOp {
    return { op: "update", kind: VIDEO_KIND, scope, id: rec.id, data: rec };
  }

  completion(scope: Scope, rec: VideoRecord, assets: Record<VideoVariant, number>, rendered: VideoRecord["rendered"]): { rec: VideoRecord; ops: WriteOp[] } {
    const now = this.deps.clock.now();
    const done: VideoRecord = { ...rec, status: "completed", progress: 100, completedAt: now, expiresAt: now + this.settings.assetTtlSeconds, assets, rendered, error: null };
    return {
      rec: done,
      ops: [
        this.updateOp(scope, done),
        { op: "delete", kind: timerKind(ENQUEUE_TIMER), scope, id: rec.id },
        { op: "insert", kind: timerKind(ASSETS_TIMER), scope, record: { id: rec.id, createdAt: now, expiresAt: done.expiresAt!, data: { targetId: rec.id } satisfies TimerData } },
      ],
    };
  }

  failure(scope: Scope, rec: VideoRecord, error: { code: string; message: string }): WriteOp[] {
    const failed: VideoRecord = { ...rec, status: "failed", completedAt: this.deps.clock.now(), error };
    return [this.updateOp(scope, failed), { op: "delete", kind: timerKind(ENQUEUE_TIMER), scope, id: rec.id }];
  }

  /** Marks a video failed outside a job run (its job gave up); a finished video is left alone. */
  async fail(scope: Scope, videoId: string, error: { code: string; message: string }): Promise<void> {
    const cur = await this.videos.get(scope, videoId);
    if (!cur || cur.data.status === "completed" || cur.data.status === "failed") return;
    await this.deps.records.atomically(this.failure(scope, cur.data, error));
    await this.deps.blobs.delete(inputKey(videoId));
  }

  // ---- characters ----

  checkCharacterName(name: string | undefined): string {
    if (name === undefined) throw missingParam("name");
    if (!name.trim()) throw invalidParam("name", "Invalid 'name': it cannot be empty.", "empty_string");
    const chars = [...name].length;
    if (chars > MAX_CHARACTER_NAME_CHARS)
      throw invalidParam("name", `Invalid 'name': string too long. Expected a string with maximum length ${MAX_CHARACTER_NAME_CHARS}, but got a string with length ${chars} instead.`, "string_above_max_length");
    return name;
  }

  /**
   * POST /videos/characters: the upload goes to a scratch file (never whole in memory), must be a
   * readable video, and is stored as a normalised clip (at most 4 s, within 480×480, H.264) that
   * renders overlay when a prompt names the character (`@<character id>`).
   */
  async createCharacter(scope: Scope, name: () => string | undefined, chunks: AsyncIterable<Uint8Array>): Promise<CharacterRecord> {
    const id = newId("char_");
    const dir = join(this.settings.workDir, `upload-${id}`);
    await mkdir(dir, { recursive: true });
    try {
      const out = createWriteStream(join(dir, "upload.bin"));
      let bytes = 0;
      try {
        for await (const chunk of chunks) {
          bytes += chunk.length;
          if (bytes > MAX_CHARACTER_VIDEO_BYTES)
            throw new ApiError(413, `The video is too large: the limit is ${MAX_CHARACTER_VIDEO_BYTES} bytes.`, { param: "video", code: "file_too_large" });
          if (!out.write(chunk)) await once(out, "drain");
        }
      } finally {
        out.end();
        await once(out, "close");
      }
      const checkedName = this.checkCharacterName(name());
      if (bytes === 0) throw invalidParam("video", "Missing required parameter: 'video' (the character's reference video, as a file part).", "missing_required_parameter");
      try {
        await normaliseClip("upload.bin", "clip.mp4", dir);
      } catch (e) {
        if (e instanceof FfmpegError) throw invalidParam("video", `Invalid 'video': ${e.message.replace(/^ffmpeg failed: /, "")}.`, "invalid_video");
        throw e;
      }
      const now = this.deps.clock.now();
      const clipBytes = (await this.deps.blobs.put(clipKey(id), createReadStream(join(dir, "clip.mp4")))).bytes;
      const rec: CharacterRecord = { id, name: checkedName, createdAt: now, clipBytes };
      try {
        await this.characters.insert(scope, { id, createdAt: now, data: rec });
      } catch (e) {
        await this.deps.blobs.delete(clipKey(id));
        throw e;
      }
      return rec;
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  async getCharacter(scope: Scope, id: string): Promise<CharacterRecord> {
    const r = await this.characters.get(scope, id);
    if (!r) throw notFound("character", id, "character_id");
    return r.data;
  }
}

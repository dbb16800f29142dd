// VideosService (spec 4.9): videos and characters. The rules live in videos.ts, rendering in
// jobs.ts; this maps messages, reads the request streams, and sets the poll hint.
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { HandlerContext, ServiceImpl } from "@connectrpc/connect";
import {
  VideosService,
  type CreateCharacterRequest,
  type CreateVideoRequest,
  type EditVideoRequest,
  type ExtendVideoRequest,
  type VideoCharacterSchema,
  type VideoSchema,
} from "../../../gen/atrium/v1/videos_pb.js";
import { scopeOf } from "../../auth/principal.js";
import { ApiError, invalidParam } from "../../common/errors.js";
import { withClientStream } from "../../common/client-stream.js";
import { downloadBlob } from "../../common/download.js";
import { envelope, listQuery, runList } from "../../common/list.js";
import type { StoredRecord } from "../../storage/types.js";
import type { ServiceDeps } from "../deps.js";
import type { CharacterRecord, VideoRecord } from "./records.js";
import { MAX_IMAGE_BYTES, type Videos } from "./videos.js";

/** The header the official SDKs' pollers read for their interval (when the caller sets none). */
export const POLL_AFTER_HEADER = "openai-poll-after-ms";

export function videoMessage(v: VideoRecord): MessageInitShape<typeof VideoSchema> & { id: string } {
  return {
    id: v.id,
    object: "video",
    model: v.model,
    createdAt: BigInt(v.createdAt),
    completedAt: v.completedAt === null ? undefined : BigInt(v.completedAt),
    expiresAt: v.expiresAt === null ? undefined : BigInt(v.expiresAt),
    progress: v.progress,
    prompt: v.prompt,
    remixedFromVideoId: v.remixedFromVideoId ?? undefined,
    seconds: v.seconds,
    size: v.size,
    status: v.status,
    error: v.error ?? undefined,
  };
}

export function characterMessage(c: CharacterRecord): MessageInitShape<typeof VideoCharacterSchema> {
  return { id: c.id, createdAt: BigInt(c.createdAt), name: c.name };
}

/**
 * How long a poller should wait before asking again: half the estimated time left (from progress
 * so far), between 250 ms and 5 s; 1 s while queued. None once the video is finished.
 */
export function pollAfterMs(v: VideoRecord, nowMs = Date.now()): number | undefined {
  if (v.status === "completed" || v.status === "failed") return undefined;
  if (v.status === "queued" || !v.startedAtMs || v.progress <= 0) return 1000;
  const left = ((nowMs - v.startedAtMs) * (100 - v.progress)) / v.progress;
  return Math.round(Math.min(5000, Math.max(250, left / 2)));
}

function withPollHint(ctx: HandlerContext, v: VideoRecord) {
  const ms = pollAfterMs(v);
  if (ms !== undefined) ctx.responseHeader.set(POLL_AFTER_HEADER, String(ms));
  return videoMessage(v);
}

/** The messages' fields merged (later ones win), and the chunks joined, at most `maxBytes`. */
async function gather<T extends object>(it: AsyncIterator<T>, chunkField: keyof T, maxBytes: number, param: string): Promise<{ fields: Partial<T>; bytes?: Uint8Array }> {
  const fields: Partial<T> = {};
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (let n = await it.next(); !n.done; n = await it.next()) {
    for (const [k, v] of Object.entries(n.value) as Array<[keyof T, unknown]>) {
      if (k === chunkField || v === undefined || k === "$typeName") continue;
      (fields as Record<keyof T, unknown>)[k] = v;
    }
    const chunk = n.value[chunkField] as Uint8Array;
    if (chunk.length) {
      size += chunk.length;
      if (size > maxBytes) throw new ApiError(413, `The file in '${param}' is larger than ${maxBytes} bytes.`, { param, code: "file_too_large" });
      chunks.push(chunk);
    }
  }
  return { fields, bytes: chunks.length ? Buffer.concat(chunks) : undefined };
}

// Edits and extensions start from a completed video of this server, named by id: the SDKs' reference
// form (Python `video={"id": "video_..."}`, Node `video: { id: "video_..." }`), which they send as the
// form field `video[id]`. An uploaded MP4 as the source is not taken (videos/README.md says why).
const noVideoUpload = () =>
  invalidParam(
    "video",
    "Uploading a video to edit or extend is not supported by this server: name a completed video by id instead — {\"video\": {\"id\": \"video_...\"}} in JSON or the form field video[id] (Node SDK: video: { id }; Python SDK: client.post(\"/videos/extensions\", body={..., \"video\": {\"id\": ...}}, cast_to=openai.types.Video)).",
    "unsupported_video_upload",
  );

export function createVideosService(deps: ServiceDeps, videos: Videos): ServiceImpl<typeof VideosService> {
  return {
    async createVideo(requests: AsyncIterable<CreateVideoRequest>, ctx) {
      const { fields, bytes } = await withClientStream(requests, (it) => gather(it, "inputReferenceChunk", MAX_IMAGE_BYTES, "input_reference"));
      const ref = fields.inputReference;
      const v = await videos.create(scopeOf(ctx), {
        prompt: fields.prompt,
        model: fields.model,
        seconds: fields.seconds,
        size: fields.size,
        reference: ref ? { fileId: ref.fileId, imageUrl: ref.imageUrl } : undefined,
        upload: bytes,
      });
      return withPollHint(ctx, v);
    },

    async listVideos(req, ctx) {
      const scope = scopeOf(ctx);
      const q = listQuery(req);
      const page = await runList(q, (q) => videos.list(scope, q));
      return envelope(page, (r: StoredRecord<VideoRecord>) => videoMessage(r.data));
    },

    async getVideo(req, ctx) {
      return withPollHint(ctx, await videos.get(scopeOf(ctx), req.videoId));
    },

    async deleteVideo(req, ctx) {
      await videos.delete(scopeOf(ctx), req.videoId);
      return { id: req.videoId, object: "video.deleted", deleted: true };
    },

    async remixVideo(req, ctx) {
      return withPollHint(ctx, await videos.derive(scopeOf(ctx), "remix", { videoId: req.videoId, prompt: req.prompt }));
    },

    async editVideo(requests: AsyncIterable<EditVideoRequest>, ctx) {
      const { fields, bytes } = await withClientStream(requests, (it) => gather(it, "videoChunk", 0, "video").catch(rethrowUpload));
      if (bytes) throw noVideoUpload();
      return withPollHint(ctx, await videos.derive(scopeOf(ctx), "edit", { videoId: fields.video?.id, prompt: fields.prompt }));
    },

    async extendVideo(requests: AsyncIterable<ExtendVideoRequest>, ctx) {
      const { fields, bytes } = await withClientStream(requests, (it) => gather(it, "videoChunk", 0, "video").catch(rethrowUpload));
      if (bytes) throw noVideoUpload();
      return withPollHint(ctx, await videos.derive(scopeOf(ctx), "extension", { videoId: fields.video?.id, prompt: fields.prompt, seconds: fields.seconds }));
    },

    async *getVideoContent(req, ctx) {
      const asset = await videos.content(scopeOf(ctx), req.videoId, req.variant);
      yield* downloadBlob(deps.blobs, { ...asset, range: req.range });
    },

    async createCharacter(requests: AsyncIterable<CreateCharacterRequest>, ctx) {
      const scope = scopeOf(ctx);
      return withClientStream(requests, async (it) => {
        let name: string | undefined;
        async function* chunks() {
          for (let n = await it.next(); !n.done; n = await it.next()) {
            if (n.value.name !== undefined) name = n.value.name;
            if (n.value.videoChunk.length) yield n.value.videoChunk;
          }
        }
        return characterMessage(await videos.createCharacter(scope, () => name, chunks()));
      });
    },

    async getCharacter(req, ctx) {
      return characterMessage(await videos.getCharacter(scopeOf(ctx), req.characterId));
    },
  };
}

/** Any video bytes in an edit or extension: refused at the first chunk (gather's limit is 0). */
function rethrowUpload(e: unknown): never {
  if (e instanceof ApiError && e.errorCode === "file_too_large") throw noVideoUpload();
  throw e;
}

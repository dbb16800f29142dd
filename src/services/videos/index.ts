// The Videos area (spec 4.9, 2.10, 3): video jobs rendered by the video provider (the local
// procedural renderer on ffmpeg, or an upstream /v1/videos), downloads of their three assets, asset
// expiry, and characters.
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { VideosService } from "../../../gen/atrium/v1/videos_pb.js";
import { findFont, LocalVideoProvider } from "../../engines/video/index.js";
import { timerKind } from "../../jobs/expiry.js";
import type { ApiArea } from "../area.js";
import { createVideosService } from "./handler.js";
import { renderFailed, renderJob, VIDEOS_RENDER_JOB } from "./jobs.js";
import { ASSETS_TIMER, ENQUEUE_TIMER, MAX_IMAGE_BYTES, PURGE_TIMER, Videos } from "./videos.js";
import { CHARACTER_KIND, VIDEO_KIND } from "./records.js";
import { keysOfPresentRecords } from "../../common/blobs.js";

/** ATRIUM_CONFIG's `videos` section. */
interface VideosSection {
  /** Renders at once in this process (default 1). */
  concurrency?: number;
  /** How long a completed video's assets are kept (default one day). */
  asset_ttl_seconds?: number;
  /** How long a render job is held without a heartbeat before another runner takes it over (default 30). */
  job_lease_seconds?: number;
  /** A TrueType font for the prompt's text in local renders (default: found with fontconfig). */
  font_file?: string;
  /** Model names as an upstream knows them, by Atrium's name (e.g. {"vid-2": "<the platform's name>"}). */
  upstream_models?: Record<string, string>;
}

const sectionSchema = {
  type: "object",
  additionalProperties: false,
  properties: {
    concurrency: { type: "integer", minimum: 1, maximum: 64 },
    asset_ttl_seconds: { type: "integer", minimum: 60 },
    job_lease_seconds: { type: "integer", minimum: 3, maximum: 3600 },
    font_file: { type: "string", minLength: 1 },
    upstream_models: { type: "object", additionalProperties: { type: "string", minLength: 1 } },
  },
};

export const videosArea: ApiArea = {
  name: "videos",
  configSection: { name: "videos", schema: sectionSchema },
  multipart: {
    // The official SDK sends every create as multipart (with or without an uploaded image, whose
    // `input_reference[image_url]` may be a multi-megabyte data URL); JSON works on the same path.
    "atrium.v1.VideosService.CreateVideo": { file: "input_reference", chunk: "input_reference_chunk", json: true, fileOptional: true, maxFieldBytes: Math.ceil((MAX_IMAGE_BYTES * 4) / 3) + 1024 },
    // ... and edits and extensions too, with `video[id]` as a form field.
    "atrium.v1.VideosService.EditVideo": { file: "video", chunk: "video_chunk", json: true, fileOptional: true },
    "atrium.v1.VideosService.ExtendVideo": { file: "video", chunk: "video_chunk", json: true, fileOptional: true },
    "atrium.v1.VideosService.CreateCharacter": { file: "video", chunk: "video_chunk" },
  },
  setup: ({ deps, config, providers, jobs }) => {
    const section = (config.sections.videos ?? {}) as VideosSection;
    // Scratch space for renders and uploads. Renders live only as long as their job run, so what a
    // crash left here is garbage at start-up.
    const workDir = join(config.dataDir, "video-work");
    rmSync(workDir, { recursive: true, force: true });
    mkdirSync(workDir, { recursive: true });

    let local: LocalVideoProvider | undefined;
    providers.registerLocal("video", () => {
      const fontFile = findFont(section.font_file);
      if (!fontFile) deps.log.warn("no font file found (set videos.font_file): local video renders will not show the prompt's text");
      return (local = new LocalVideoProvider({ workDir: join(workDir, "renders"), fontFile }));
    });

    const videos = new Videos(deps, jobs, {
      assetTtlSeconds: section.asset_ttl_seconds ?? 24 * 3600,
      fetchPolicy: { timeoutMs: config.fetchTimeoutMs, maxBytes: MAX_IMAGE_BYTES, allowPrivate: config.fetchAllowPrivate },
      workDir,
    });
    const leaseMs = (section.job_lease_seconds ?? 30) * 1000;
    return {
      services: [{ desc: VideosService, impl: createVideosService(deps, videos) }],
      jobs: {
        [VIDEOS_RENDER_JOB]: {
          settle: renderFailed(videos),
          ...renderJob({
          blobs: deps.blobs,
          videos,
          providers,
          log: deps.log,
          upstreamModels: section.upstream_models ?? {},
          options: { concurrency: section.concurrency ?? 1, maxAttempts: 3, backoff: { baseMs: 2000, maxMs: 30_000 }, leaseMs },
          }),
        },
      },
      expiry: {
        [timerKind(ASSETS_TIMER)]: (scope, rec) => videos.expireAssets(scope, rec.id),
        [timerKind(PURGE_TIMER)]: (_scope, rec) => videos.purge(rec.id),
        // The safety net for a crash between writing a video and enqueueing its render.
        [timerKind(ENQUEUE_TIMER)]: async (scope, rec) => void (await videos.enqueueRender(scope, rec.id)),
      },
      // `<video id>.<variant|input>` and `<character id>.clip`. A video's blobs stay held while its
      // record exists: expired assets go with the assets timer, which retries until they are gone.
      blobOwners: [
        { prefix: "video_", held: (keys) => keysOfPresentRecords(deps.records, VIDEO_KIND, keys) },
        { prefix: "char_", held: (keys) => keysOfPresentRecords(deps.records, CHARACTER_KIND, keys) },
      ],
      stop: async () => {
        await local?.close();
      },
    };
  },
};

// The render job: one per video (id "videos.render:<video id>"), on the durable runner, so a render
// accepted survives crashes and restarts. Steps, each committed with the record writes it implies:
//   1. in_progress (started)                       checkpoint
//   2. the provider's render created               checkpoint {provider, renderId}
//   3. progress, as the provider reports it        checkpoint (at most every PROGRESS_WRITE_MS)
//   4. the three assets copied into the blob store, then completed + the assets timer   complete
// A resumed run asks the provider about the checkpointed render: an upstream one is picked up
// where it was; a local one is gone after a restart (404), so it is rendered again from the start.
// Assets become visible only with step 4: a half-written asset is never served.
import { buffer } from "node:stream/consumers";
import { setTimeout as sleep } from "node:timers/promises";
import type { Logger } from "pino";
import { inspectImage } from "../../engines/media/image.js";
import type { JobContext, JobHandler, KindOptions } from "../../jobs/handler.js";
import type { Job } from "../../jobs/types.js";
import { ProviderUnavailable, type Providers } from "../../providers/registry.js";
import type { VideoProvider, VideoRender, VideoRenderRequest } from "../../providers/types.js";
import type { BlobStore, Scope } from "../../storage/types.js";
import type { VideoRecord, VideoVariant } from "./records.js";
import { assetKey, clipKey, inputKey, VARIANTS, type Videos } from "./videos.js";

/** The render of one video; its runner job id is renderJobId(video id). */
export const VIDEOS_RENDER_JOB = "videos.render";

export const renderJobId = (videoId: string) => `${VIDEOS_RENDER_JOB}:${videoId}`;

export interface RenderPayload {
  videoId: string;
}

interface RenderCheckpoint {
  provider: string;
  renderId: string;
}

/** How often an upstream render is asked about (local renders report changes themselves). */
const UPSTREAM_POLL_MS = 1000;
const PROGRESS_WRITE_MS = 500;
/** The same prompt renders the same frames: one seed for every video. */
const SEED = 0;

/** Caller errors of a provider (bad request, refused): retrying cannot fix them. */
function permanentError(e: unknown): { code: string; message: string } | undefined {
  const status = (e as { status?: unknown }).status;
  if (typeof status !== "number" || status < 400 || status >= 500 || [404, 408, 409, 429].includes(status)) return undefined;
  return { code: (e as { code?: string }).code ?? "render_failed", message: (e as Error).message };
}

const isNotFound = (e: unknown) => (e as { status?: unknown }).status === 404;

class SourceUnavailable extends Error {
  readonly status = 400;
  readonly code = "source_unavailable";
}

/** What the render job works with. */
export interface RenderJobDeps {
  blobs: BlobStore;
  videos: Videos;
  providers: Providers;
  log: Logger;
  /** Atrium's model names as the upstream knows them (videos.upstream_models). */
  upstreamModels: Record<string, string>;
  /** The job kind's runner options (concurrency, lease) from the `videos` config section. */
  options: Partial<KindOptions>;
}

/** The runner gave up on a render (attempts exhausted): the video fails with the last error. */
export function renderFailed(videos: Videos): (job: Job) => Promise<void> {
  return async (job) => {
    if (job.state !== "failed") return;
    const { videoId } = job.payload as RenderPayload;
    await videos.fail(job.scope, videoId, { code: "render_failed", message: `The render failed: ${job.lastError ?? "unknown error"}` });
  };
}

/** Frees the provider's copy of a render; a failure to free it is logged, not thrown. */
async function release(log: Logger, provider: VideoProvider, renderId: string): Promise<void> {
  await provider.deleteRender?.(renderId).catch((err) => log.warn({ err, renderId }, "freeing a finished render failed"));
}

/** What the provider needs: the prompt, the reference image, the source video, the characters' clips. */
async function request(deps: RenderJobDeps, scope: Scope, rec: VideoRecord, provider: VideoProvider): Promise<VideoRenderRequest> {
  const blobs = deps.blobs;
  const req: VideoRenderRequest = {
    prompt: rec.prompt,
    model: provider.local ? rec.model : (deps.upstreamModels[rec.model] ?? rec.model),
    seconds: rec.source?.kind === "extension" ? rec.source.segmentSeconds! : rec.seconds,
    size: rec.size,
    seed: SEED,
  };
  if (rec.hasInputReference) {
    const bytes = await buffer(blobs.get(inputKey(rec.id)));
    req.input_reference = { image_url: `data:image/${inspectImage(bytes).format};base64,${bytes.toString("base64")}` };
  }
  if (rec.source) {
    const src = await deps.videos.find(scope, rec.source.videoId);
    const key = assetKey(rec.source.videoId, "video");
    if (!src || src.assetsExpired || (await blobs.size(key)) === undefined)
      throw new SourceUnavailable(`The source video ${rec.source.videoId} was deleted or its assets expired before this ${rec.source.kind} was rendered.`);
    req.source = {
      kind: rec.source.kind,
      renderId: src.rendered?.provider === provider.id ? src.rendered.renderId : undefined,
      video: () => blobs.get(key),
    };
  }
  if (rec.characterIds.length) {
    req.characters = [];
    for (const id of rec.characterIds) {
      const c = await deps.videos.findCharacter(scope, id);
      if (c) req.characters.push({ id, name: c.name, video: () => blobs.get(clipKey(id)) });
    }
  }
  return req;
}

export function renderJob(deps: RenderJobDeps): { handler: JobHandler<RenderPayload, null, RenderCheckpoint>; options: Partial<KindOptions> } {
  const { videos, log } = deps;

  async function render(ctx: JobContext<RenderPayload, RenderCheckpoint, null>): Promise<null> {
    const scope = ctx.job.scope;
    const cur = await videos.find(scope, ctx.job.payload.videoId);
    // Deleted, or finished by an earlier run: nothing to do.
    if (!cur || cur.status === "completed" || cur.status === "failed") return null;
    let rec = cur;

    let provider: VideoProvider;
    try {
      provider = deps.providers.video();
    } catch (e) {
      if (!(e instanceof ProviderUnavailable)) throw e;
      await ctx.complete(null, videos.failure(scope, rec, { code: "provider_unavailable", message: e.message }));
      return null;
    }
    const signal = ctx.signal;

    let renderId = ctx.job.checkpoint?.provider === provider.id ? ctx.job.checkpoint.renderId : undefined;
    let render: VideoRender | undefined;
    try {
      if (renderId) {
        try {
          render = await provider.getRender(renderId, { signal });
        } catch (e) {
          if (!isNotFound(e)) throw e;
          renderId = undefined; // interrupted by a restart: render again
        }
      }
      if (!renderId || !render) {
        const req = await request(deps, scope, rec, provider);
        render = await provider.createRender(req, { signal });
        renderId = render.id;
        rec = { ...rec, status: "in_progress", progress: 0, startedAtMs: Date.now() };
        await ctx.checkpoint({ provider: provider.id, renderId }, [videos.updateOp(scope, rec)]);
      }

      let lastWrite = 0;
      while (render.status !== "completed" && render.status !== "failed") {
        if (provider.waitRender) render = await provider.waitRender(renderId, { signal });
        else {
          await sleep(UPSTREAM_POLL_MS, undefined, { signal });
          render = await provider.getRender(renderId, { signal });
        }
        // 100 only once the assets are stored.
        const progress = Math.max(0, Math.min(99, Math.floor(render.progress)));
        if (progress !== rec.progress && Date.now() - lastWrite >= PROGRESS_WRITE_MS) {
          rec = { ...rec, progress };
          await ctx.checkpoint(ctx.job.checkpoint!, [videos.updateOp(scope, rec)]);
          lastWrite = Date.now();
        }
      }

      if (render.status === "failed") {
        await ctx.complete(null, videos.failure(scope, rec, render.error ?? { code: "render_failed", message: "The render failed." }));
      } else {
        const assets = {} as Record<VideoVariant, number>;
        for (const variant of Object.keys(VARIANTS) as VideoVariant[]) {
          const stream = await provider.downloadRender(renderId, variant, { signal });
          assets[variant] = (await deps.blobs.put(assetKey(rec.id, variant), stream as unknown as AsyncIterable<Uint8Array>)).bytes;
        }
        const done = videos.completion(scope, rec, assets, { provider: provider.id, renderId });
        await ctx.complete(null, done.ops);
      }
      await deps.blobs.delete(inputKey(rec.id));
      await release(log, provider, renderId);
      return null;
    } catch (e) {
      const permanent = signal.aborted ? undefined : permanentError(e);
      if (permanent) {
        await ctx.complete(null, videos.failure(scope, rec, permanent));
        await deps.blobs.delete(inputKey(rec.id));
      }
      // A local render does not outlive its run (a rerun starts over); an upstream one does.
      if (renderId && (permanent || provider.local)) await release(log, provider, renderId);
      if (permanent) return null;
      throw e;
    }
  }

  return { handler: render, options: deps.options };
}

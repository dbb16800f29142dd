// The local video provider: VideoProvider (src/providers/types.ts) on this machine's ffmpeg. A
// render is a directory under `workDir` and one ffmpeg process; its state lives in memory, because
// durability belongs to the caller's job (the videos area): after a restart the render is unknown
// here (getRender answers 404), and the job starts it again from scratch. Nothing is ever served
// from a half-written file: the caller copies the finished files into its blob store.
import { createReadStream, createWriteStream } from "node:fs";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { inspectImage } from "../media/image.js";
import { newId } from "../../common/ids.js";
import type { CallOptions, VideoProvider, VideoRender, VideoRenderRequest, VideoVariant } from "../../providers/types.js";
import { renderVideo, type RenderedFiles, type RenderSpec } from "./render.js";
import { splitDataUrl } from "../../common/data-url.js";

export const LOCAL_VIDEO_PROVIDER_ID = "atrium-procedural-video";

/** A provider error with an HTTP-like status, as UpstreamError has (404: no such render). */
export class LocalRenderError extends Error {
  override readonly name = "LocalRenderError";
  constructor(
    readonly status: number,
    message: string,
    readonly code: string,
  ) {
    super(message);
  }
}

interface LocalRender {
  state: VideoRender;
  dir: string;
  controller: AbortController;
  files?: RenderedFiles;
  /** Resolvers of waitRender calls, woken at the next change. */
  waiters: Set<() => void>;
}

export interface LocalVideoOptions {
  /** Renders happen in subdirectories of this one. */
  workDir: string;
  /** For the prompt's text; without one, renders have no text. */
  fontFile?: string;
}

const VARIANT_FILE: Record<VideoVariant, keyof RenderedFiles> = { video: "video", thumbnail: "thumbnail", spritesheet: "spritesheet" };

function parseSize(size: string): { width: number; height: number } {
  const m = /^(\d+)x(\d+)$/.exec(size);
  if (!m) throw new LocalRenderError(400, `size '${size}' is not WIDTHxHEIGHT`, "invalid_size");
  return { width: Number(m[1]), height: Number(m[2]) };
}

function dataUrlBytes(url: string): Buffer {
  const d = splitDataUrl(url);
  if (!d?.base64) throw new LocalRenderError(400, "input_reference.image_url must be a base64 data URL for the local renderer", "invalid_image_url");
  return Buffer.from(d.payload, "base64");
}

async function writeStream(path: string, source: () => AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<void> {
  await pipeline(Readable.from(source()), createWriteStream(path), { signal });
}

export class LocalVideoProvider implements VideoProvider {
  readonly id = LOCAL_VIDEO_PROVIDER_ID;
  readonly local = true;
  private readonly renders = new Map<string, LocalRender>();

  constructor(private readonly opts: LocalVideoOptions) {}

  async createRender(req: VideoRenderRequest, opts: CallOptions = {}): Promise<VideoRender> {
    const { width, height } = parseSize(req.size);
    const id = newId("render_");
    const dir = join(this.opts.workDir, id);
    await mkdir(dir, { recursive: true });
    const inputs: RenderSpec["inputs"] = {};
    try {
      if (req.input_reference) {
        const bytes = dataUrlBytes(req.input_reference.image_url);
        // ffmpeg picks the image decoder by extension (png, jpg, webp).
        const { format } = inspectImage(bytes);
        inputs.image = `reference.${format === "jpeg" ? "jpg" : format}`;
        await writeFile(join(dir, inputs.image), bytes);
      }
      if (req.source) {
        if (!req.source.video) throw new LocalRenderError(400, `the source video's bytes are needed to ${req.source.kind} it`, "source_unavailable");
        await writeStream(join(dir, "source.mp4"), req.source.video, opts.signal);
        if (req.source.kind === "extension") inputs.extend = "source.mp4";
        else inputs.restyle = "source.mp4";
      }
      inputs.characters = [];
      for (const [i, c] of (req.characters ?? []).entries()) {
        const name = `character-${i}.mp4`;
        await writeStream(join(dir, name), c.video, opts.signal);
        inputs.characters.push(name);
      }
    } catch (e) {
      await rm(dir, { recursive: true, force: true });
      throw e;
    }

    const render: LocalRender = {
      state: { id, status: "in_progress", progress: 0, error: null },
      dir,
      controller: new AbortController(),
      waiters: new Set(),
    };
    this.renders.set(id, render);
    const spec: RenderSpec = { prompt: req.prompt, seed: req.seed ?? 0, width, height, seconds: Number(req.seconds), inputs, fontFile: this.opts.fontFile };
    renderVideo(spec, dir, {
      signal: render.controller.signal,
      // The last percent is for writing the outputs' ends (faststart moves the index).
      onProgress: (f) => this.change(render, { progress: Math.min(99, Math.floor(f * 100)) }),
    }).then(
      (files) => {
        render.files = files;
        this.change(render, { status: "completed", progress: 100 });
      },
      (e: Error) => {
        if (!render.controller.signal.aborted) this.change(render, { status: "failed", error: { code: "render_failed", message: e.message } });
      },
    );
    return { ...render.state };
  }

  async getRender(id: string): Promise<VideoRender> {
    return { ...this.get(id).state };
  }

  waitRender(id: string, opts: CallOptions = {}): Promise<VideoRender> {
    const render = this.get(id);
    if (render.state.status === "completed" || render.state.status === "failed") return Promise.resolve({ ...render.state });
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        render.waiters.delete(wake);
        reject(opts.signal!.reason);
      };
      const wake = () => {
        opts.signal?.removeEventListener("abort", onAbort);
        resolve({ ...render.state });
      };
      if (opts.signal?.aborted) return reject(opts.signal.reason);
      opts.signal?.addEventListener("abort", onAbort, { once: true });
      render.waiters.add(wake);
    });
  }

  async downloadRender(id: string, variant: VideoVariant): Promise<ReadableStream<Uint8Array>> {
    const render = this.get(id);
    if (!render.files) throw new LocalRenderError(400, `render ${id} is ${render.state.status}, not completed`, "render_not_ready");
    return Readable.toWeb(createReadStream(render.files[VARIANT_FILE[variant]], { highWaterMark: 1 << 20 })) as ReadableStream<Uint8Array>;
  }

  /** Stops the render if it still runs and removes its files. */
  async deleteRender(id: string): Promise<void> {
    const render = this.renders.get(id);
    if (!render) return;
    this.renders.delete(id);
    render.controller.abort(new LocalRenderError(410, `render ${id} was deleted`, "render_deleted"));
    await rm(render.dir, { recursive: true, force: true });
  }

  /** Stops every render (server shutdown). */
  async close(): Promise<void> {
    await Promise.all([...this.renders.keys()].map((id) => this.deleteRender(id)));
  }

  private get(id: string): LocalRender {
    const render = this.renders.get(id);
    // Renders live in memory: after a restart the caller starts a new one.
    if (!render) throw new LocalRenderError(404, `no render ${id} on this server (it may have been interrupted by a restart)`, "render_not_found");
    return render;
  }

  private change(render: LocalRender, patch: Partial<VideoRender>): void {
    if (patch.progress !== undefined && patch.progress === render.state.progress && !patch.status) return;
    Object.assign(render.state, patch);
    const waiters = [...render.waiters];
    render.waiters.clear();
    for (const wake of waiters) wake();
  }
}

// The local video engine: a deterministic procedural renderer on the npm-shipped ffmpeg (not a
// generative model). See render.ts for what a frame is made of and scene.ts for how the prompt
// chooses it; provider.ts puts it behind the VideoProvider interface.
export { FfmpegError, ffmpegBinaries, probeVideo, runFfmpeg, type ProbedVideo } from "./ffmpeg.js";
export { findFont } from "./font.js";
export { LOCAL_VIDEO_PROVIDER_ID, LocalRenderError, LocalVideoProvider, type LocalVideoOptions } from "./provider.js";
export { FPS, normaliseClip, renderCommand, renderVideo, type RenderCommand, type RenderedFiles, type RenderSpec } from "./render.js";
export { sceneFor, wrapText, type Scene } from "./scene.js";

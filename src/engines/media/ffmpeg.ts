// Where the npm-shipped ffmpeg and ffprobe binaries are (@ffmpeg-installer, @ffprobe-installer),
// for every engine that runs them (video rendering, moderation's image decoding). Looked up on
// first use, so a server without them starts and only the work that needs them fails, saying why.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

let binaries: { ffmpeg: string; ffprobe: string } | undefined;

export class FfmpegError extends Error {
  override readonly name = "FfmpegError";
}

/** Paths of the ffmpeg and ffprobe binaries; FfmpegError when they are not installed for this platform. */
export function ffmpegBinaries(): { ffmpeg: string; ffprobe: string } {
  if (binaries) return binaries;
  try {
    binaries = {
      ffmpeg: (require("@ffmpeg-installer/ffmpeg") as { path: string }).path,
      ffprobe: (require("@ffprobe-installer/ffprobe") as { path: string }).path,
    };
  } catch (e) {
    // The installers throw strings.
    throw new FfmpegError(`ffmpeg is not installed for this platform (@ffmpeg-installer/ffmpeg, @ffprobe-installer/ffprobe): ${e instanceof Error ? e.message : String(e)}`);
  }
  return binaries;
}

// The ffmpeg and ffprobe binaries the npm installers ship: tests make images and check videos with them.
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

export const FFMPEG: string = (require("@ffmpeg-installer/ffmpeg") as { path: string }).path;
export const FFPROBE: string = (require("@ffprobe-installer/ffprobe") as { path: string }).path;

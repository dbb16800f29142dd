// JPEG and WebP: no JavaScript decoder for them is installed, so they go through the ffmpeg
// binary that @ffmpeg-installer/ffmpeg ships, as a child process (the worker waits for it without
// blocking anything). ffmpeg is told the exact input format and decoder (no probing of other
// demuxers), may read only its stdin or the one temporary file (protocol whitelist: nothing in a
// file can make it fetch anything), decodes one frame, scales it to at most MODEL_SIZE on each
// side itself (area filter), and is killed after a time limit. WebP is read from a temporary
// file: the ffmpeg shipped (4.1) has no WebP parser, which reading WebP from a pipe needs.
import { spawn } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ffmpegBinaries } from "../../media/ffmpeg.js";
import { ImageDecodeError, MODEL_SIZE, type RgbImage } from "./pixels.js";

const STDERR_CHARS = 400;

const ffmpegPath = () => ffmpegBinaries().ffmpeg;

export async function decodeWithFfmpeg(bytes: Uint8Array, format: "jpeg" | "webp", width: number, height: number, timeoutMs: number, signal?: AbortSignal): Promise<RgbImage> {
  if (format === "jpeg") return runFfmpeg(["-protocol_whitelist", "pipe", "-f", "jpeg_pipe", "-c:v", "mjpeg", "-i", "pipe:0"], bytes, format, width, height, timeoutMs, signal);
  const dir = await mkdtemp(join(tmpdir(), "atrium-webp-"));
  try {
    const file = join(dir, "image.webp");
    await writeFile(file, bytes);
    const input = ["-protocol_whitelist", "file", "-f", "image2", "-pattern_type", "none", "-c:v", "webp", "-i", file];
    return await runFfmpeg(input, undefined, format, width, height, timeoutMs, signal);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function runFfmpeg(input: string[], stdin: Uint8Array | undefined, format: string, width: number, height: number, timeoutMs: number, signal?: AbortSignal): Promise<RgbImage> {
  const outWidth = Math.min(width, MODEL_SIZE);
  const outHeight = Math.min(height, MODEL_SIZE);
  const expected = outWidth * outHeight * 3;
  // -nostdin only when the image does not come on stdin.
  const args = ["-hide_banner", "-loglevel", "error", ...(stdin ? [] : ["-nostdin"]), ...input, "-frames:v", "1", "-vf", `scale=${outWidth}:${outHeight}:flags=area`, "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"];
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpegPath(), args, { stdio: ["pipe", "pipe", "pipe"] });
    const out = new Uint8Array(expected);
    let got = 0;
    let stderr = "";
    let failure: Error | undefined;
    const stop = (e: Error) => {
      failure ??= e;
      child.kill("SIGKILL");
    };
    const timer = setTimeout(() => stop(new ImageDecodeError(`decoding the ${format.toUpperCase()} image took longer than ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => stop(signal!.reason instanceof Error ? signal!.reason : new Error("cancelled"));
    signal?.addEventListener("abort", onAbort, { once: true });
    child.stdout.on("data", (chunk: Buffer) => {
      if (got + chunk.length > expected) return stop(new ImageDecodeError(`ffmpeg wrote more pixels than a ${outWidth}×${outHeight} image`));
      out.set(chunk, got);
      got += chunk.length;
    });
    child.stderr.on("data", (chunk: Buffer) => {
      if (stderr.length < STDERR_CHARS) stderr += chunk.toString("utf8");
    });
    child.on("error", (e) => stop(new Error(`cannot run ffmpeg: ${e.message}`)));
    // ffmpeg may stop reading early (one frame is enough): a broken pipe here is not an error.
    child.stdin.on("error", () => {});
    child.stdin.end(stdin);
    child.on("close", (code) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      if (failure) return reject(failure);
      if (code !== 0 || got !== expected) {
        const why = stderr.trim().split("\n").pop() || `exit code ${code}`;
        return reject(new ImageDecodeError(`the ${format.toUpperCase()} image could not be decoded (${why.slice(0, STDERR_CHARS)})`));
      }
      resolve({ width: outWidth, height: outHeight, rgb: out });
    });
  });
}

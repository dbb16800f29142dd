// The npm-shipped ffmpeg and ffprobe, run as child processes (docs/architecture.md, principle 7: a
// render never blocks the event loop). Binaries are located by engines/media/ffmpeg.ts on first
// use, so a server without them starts and only its renders fail, with a message that says why.
import { spawn } from "node:child_process";
import { FfmpegError, ffmpegBinaries } from "../media/ffmpeg.js";

export { FfmpegError, ffmpegBinaries } from "../media/ffmpeg.js";

export interface RunOptions {
  /** Working directory: inputs are passed by relative name, so paths need no filter escaping. */
  cwd: string;
  signal?: AbortSignal;
  /** Called with each `frame=N` of `-progress pipe:1` (about twice a second). */
  onFrame?: (frame: number) => void;
}

/** How much of stderr is kept for the error message (the end says what went wrong). */
const STDERR_TAIL = 4000;

/**
 * Runs ffmpeg with `args` (progress on stdout when onFrame is given). Resolves when it exits 0;
 * rejects with the end of its stderr otherwise. An aborted signal kills it (SIGKILL) and rejects
 * with the signal's reason.
 */
export function runFfmpeg(args: string[], opts: RunOptions): Promise<void> {
  const { ffmpeg } = ffmpegBinaries();
  const full = ["-hide_banner", "-nostdin", "-loglevel", "error", ...(opts.onFrame ? ["-progress", "pipe:1", "-nostats"] : []), "-y", ...args];
  return new Promise((resolve, reject) => {
    if (opts.signal?.aborted) return reject(opts.signal.reason);
    const child = spawn(ffmpeg, full, { cwd: opts.cwd, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    let pending = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d: string) => {
      pending += d;
      const lines = pending.split("\n");
      pending = lines.pop()!;
      for (const line of lines) if (line.startsWith("frame=")) opts.onFrame?.(Number(line.slice(6)) || 0);
    });
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d: string) => (stderr = (stderr + d).slice(-STDERR_TAIL)));
    const onAbort = () => child.kill("SIGKILL");
    opts.signal?.addEventListener("abort", onAbort, { once: true });
    child.once("error", (e) => {
      opts.signal?.removeEventListener("abort", onAbort);
      reject(new FfmpegError(`could not run ffmpeg: ${e.message}`));
    });
    child.once("close", (code, sig) => {
      opts.signal?.removeEventListener("abort", onAbort);
      if (opts.signal?.aborted) return reject(opts.signal.reason);
      if (code === 0) return resolve();
      const why = stderr.trim().split("\n").slice(-3).join(" | ") || `exit ${code ?? sig}`;
      reject(new FfmpegError(`ffmpeg failed: ${why}`));
    });
  });
}

export interface ProbedVideo {
  codec: string;
  width: number;
  height: number;
  /** Seconds, from the container (0 when unknown). */
  duration: number;
  /** Frames of the first video stream (0 when the container does not say). */
  frames: number;
}

/** The first video stream of a file; FfmpegError when there is none or the file is not media. */
export async function probeVideo(path: string, signal?: AbortSignal): Promise<ProbedVideo> {
  const { ffprobe } = ffmpegBinaries();
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(ffprobe, ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height,nb_frames,duration:format=duration", "-of", "json", path], {
      stdio: ["ignore", "pipe", "pipe"],
      signal,
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr = (stderr + d).slice(-STDERR_TAIL)));
    child.once("error", (e) => reject(signal?.aborted ? signal.reason : new FfmpegError(`could not run ffprobe: ${e.message}`)));
    child.once("close", (code) => (code === 0 ? resolve(stdout) : reject(new FfmpegError(`not a readable video: ${stderr.trim().split("\n").pop() || `ffprobe exit ${code}`}`))));
  });
  const json = JSON.parse(out) as { streams?: Array<Record<string, string | number>>; format?: { duration?: string } };
  const s = json.streams?.[0];
  if (!s || !s.width || !s.height) throw new FfmpegError("not a readable video: it has no video stream");
  return {
    codec: String(s.codec_name ?? ""),
    width: Number(s.width),
    height: Number(s.height),
    duration: Number(s.duration ?? json.format?.duration ?? 0) || 0,
    frames: Number(s.nb_frames ?? 0) || 0,
  };
}

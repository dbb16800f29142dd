// The local renderer: one ffmpeg process turns a Scene into an H.264 MP4 of exactly the requested
// size and frame count, and, from the same frames in the same pass, a WebP thumbnail (the first
// frame) and a WebP spritesheet (10 frames, evenly spaced, 5×2). Everything is drawn by ffmpeg's
// own sources and filters (lavfi): a geq gradient scaled up, shapes from `color` sources moved by
// overlay expressions, a `cellauto` band, the prompt via drawtext. The filter graph is written to
// graph.txt beside the outputs, so any render can be replayed from the command line.
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { probeVideo, runFfmpeg } from "./ffmpeg.js";
import { hex, sceneFor, type Path, type Scene, type Wave } from "./scene.js";

export const FPS = 24;
/**
 * x264 options. Frame-threaded x264 (its default) is not deterministic here: under CPU contention
 * about one encode in twenty differed. Sliced threads split each frame instead and are; with a
 * fixed thread count the same prompt gives the same bytes on any machine.
 */
const X264 = ["-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-pix_fmt", "yuv420p", "-threads", "2", "-x264-params", "sliced-threads=1"];
/** Timestamps pass through as the graph makes them (its video frames are 24 fps already). */
const VSYNC = ["-vsync", "vfr"];
const SPRITE_COLUMNS = 5;
const SPRITE_ROWS = 2;

export interface RenderSpec {
  prompt: string;
  seed: number;
  width: number;
  height: number;
  /** Seconds this render draws: the clip, or an extension's new segment (a remix/edit: the source's length). */
  seconds: number;
  /** Names of files in the work directory. */
  inputs: {
    /** The input reference: the first frame, and the background after it. */
    image?: string;
    /** Remix or edit: the source video, re-rendered toward the new prompt. */
    restyle?: string;
    /** Extension: the source video comes first, then `seconds` rendered from its last frame. */
    extend?: string;
    /** Character reference clips (normalised by normaliseClip), overlaid. */
    characters?: string[];
  };
  /** A TrueType font for the prompt's text; without one the text is left out. */
  fontFile?: string;
}

export interface RenderedFiles {
  video: string;
  thumbnail: string;
  spritesheet: string;
}

export interface RenderOptions {
  signal?: AbortSignal;
  /** 0..1 as frames are encoded. */
  onProgress?: (fraction: number) => void;
}

/**
 * Escapes a value for an option inside a filter graph: the option level (\ ' :) and the graph
 * level (\ ' [ ] , ;).
 */
export function escapeFilterValue(v: string): string {
  return v.replace(/[\\':]/g, "\\$&").replace(/[\\'[\],;]/g, "\\$&");
}

const num = (n: number) => (Math.round(n * 1000) / 1000).toString();
/** geq's expression for one channel: from at m = -1, to at m = 1. */
const channelExpr = (from: number, to: number, w: Wave) =>
  `${num((from + to) / 2)}+${num((to - from) / 2)}*sin(${num(w.speed)}*T+${num(w.kx)}*X/W+${num(w.ky)}*Y/H+${num(w.phase)})`;
// Overlay expressions: w/h are the overlaid picture's size, the path is its centre.
const pathX = (p: Path) => `${p.cx}+${p.ax}*sin(${num(p.wx)}*t+${num(p.px)})-w/2`;
const pathY = (p: Path) => `${p.cy}+${p.ay}*cos(${num(p.wy)}*t+${num(p.py)})-h/2`;

export interface RenderCommand {
  /** ffmpeg arguments (after the global ones), run in the work directory. */
  args: string[];
  /** The filter graph (also written to graph.txt). */
  graph: string;
  /** Frames of the output video. */
  frames: number;
}

/**
 * The ffmpeg command for a render. `sourceFrames` is the length of the restyled or extended source.
 * `mp4Only` leaves out the thumbnail and spritesheet (the benchmark's command-line baseline).
 */
export function renderCommand(spec: RenderSpec, scene: Scene, sourceFrames = 0, opts: { mp4Only?: boolean } = {}): RenderCommand {
  const { width: W, height: H } = spec;
  const { image, restyle, extend, characters = [] } = spec.inputs;
  const segmentFrames = restyle ? sourceFrames : Math.round(spec.seconds * FPS);
  const frames = segmentFrames + (extend ? sourceFrames : 0);
  const inputs: string[] = [];
  const input = (file: string, loop = false) => {
    inputs.push(...(loop ? ["-stream_loop", "-1"] : []), "-i", file);
    return inputs.filter((a) => a === "-i").length - 1;
  };
  const g: string[] = [];
  // A still base (input reference, or an extension's last frame) shows pure on the first frame.
  const still = image ?? (extend ? "last-frame.png" : undefined);
  const after0 = still ? ":enable=gte(n\\,1)" : "";

  if (still) {
    const i = input(still);
    g.push(`[${i}:v]format=yuv420p,loop=loop=-1:size=1:start=0,setpts=N/${FPS}/TB,trim=end_frame=${segmentFrames},setsar=1[base]`);
  } else if (restyle) {
    const i = input(restyle);
    g.push(`[${i}:v]fps=${FPS},scale=${W}:${H},format=yuv420p,setsar=1,hue=h=${scene.tint.hue}:s=${num(scene.tint.saturation)},trim=end_frame=${segmentFrames}[base]`);
  } else {
    const bg = scene.background;
    // The gradient is computed at 1/8 size and scaled up: smooth, and cheap per frame.
    g.push(
      `color=c=black:s=${Math.max(2, Math.round(W / 8))}x${Math.max(2, Math.round(H / 8))}:r=${FPS},format=gbrp,` +
        `geq=r=${channelExpr(bg.from.r, bg.to.r, bg.wave)}:g=${channelExpr(bg.from.g, bg.to.g, bg.wave)}:b=${channelExpr(bg.from.b, bg.to.b, bg.wave)},scale=${W}:${H}:flags=bilinear,format=yuv420p,setsar=1,trim=end_frame=${segmentFrames}[base]`,
    );
  }
  let last = "base";
  const layer = (src: string, overlay: string) => {
    const out = `l${g.length}`;
    g.push(`[${last}][${src}]overlay=${overlay}:eval=frame${after0}[${out}]`);
    last = out;
  };

  const t = scene.texture;
  g.push(
    `cellauto=rule=${t.rule}:s=${Math.max(2, Math.round(W / 4))}x${Math.max(2, Math.round(t.height / 4))}:r=${FPS}:seed=${t.seed}:random_fill_ratio=0.5:scroll=1,` +
      `scale=${W}:${t.height}:flags=neighbor,format=gray[texmask]`,
    `color=c=${hex(t.color)}:s=${W}x${t.height}:r=${FPS},format=yuva420p[texcolor]`,
    `[texcolor][texmask]alphamerge,colorchannelmixer=aa=${num(t.alpha)}[tex]`,
  );
  layer("tex", `x=0:y=${t.y}+${num(t.drift)}*sin(t*0.5)`);

  scene.shapes.forEach((s, i) => {
    const label = `shape${i}`;
    if (s.kind === "box") g.push(`color=c=${hex(s.color)}@${num(s.alpha)}:s=${s.width}x${s.height}:r=${FPS},format=yuva420p[${label}]`);
    else {
      // A disc drawn once (geq on one frame), then repeated.
      const r = s.width / 2;
      g.push(
        `color=c=${hex(s.color)}:s=${s.width}x${s.height}:r=${FPS},format=yuva420p,` +
          `geq=lum=lum(X\\,Y):cb=cb(X\\,Y):cr=cr(X\\,Y):a=${Math.round(255 * s.alpha)}*lte(hypot(X-${num(r - 0.5)}\\,Y-${num(r - 0.5)})\\,${num(r)}),` +
          `trim=end_frame=1,loop=loop=-1:size=1:start=0,setpts=N/${FPS}/TB[${label}]`,
      );
    }
    layer(label, `x=${pathX(s.path)}:y=${pathY(s.path)}`);
  });

  characters.forEach((file, i) => {
    const k = input(file, true);
    const cw = Math.round(Math.min(W, H) / 3 / 2) * 2;
    g.push(`[${k}:v]fps=${FPS},scale=${cw}:-2,format=yuva420p,setsar=1[char${i}]`);
    // Characters walk slowly along the lower half, one lane each.
    const lane = Math.round(H * (0.55 + 0.12 * (i % 3)));
    layer(`char${i}`, `x=(W-w)*(0.5+0.45*sin(0.35*t+${num(i * 2.1)})):y=${lane}-h/2`);
  });

  if (spec.fontFile && scene.text.lines.length) {
    const fs = scene.text.fontSize;
    const out = `l${g.length}`;
    g.push(
      `[${last}]drawtext=fontfile=${escapeFilterValue(spec.fontFile)}:textfile=prompt.txt:expansion=none:fontsize=${fs}:fontcolor=white:` +
        `line_spacing=${Math.round(fs / 4)}:box=1:boxcolor=black@0.45:boxborderw=${Math.round(fs / 3)}:x=(w-text_w)/2:y=${scene.text.y}${after0}[${out}]`,
    );
    last = out;
  }

  if (extend) {
    const p = input(extend);
    g.push(`[${p}:v]fps=${FPS},scale=${W}:${H},format=yuv420p,setsar=1[prefix]`, `[prefix][${last}]concat=n=2:v=1:a=0[all]`);
    last = "all";
  }

  return outputCommand(g, last, inputs, frames, W, opts.mp4Only);
}

/**
 * The command's outputs, fed from the graph's `last` label: the MP4 and, unless `mp4Only`, the
 * thumbnail and the spritesheet.
 */
function outputCommand(g: string[], last: string, inputs: string[], frames: number, width: number, mp4Only: boolean | undefined): RenderCommand {
  const mp4 = ["-r", String(FPS), "-frames:v", String(frames), ...X264];
  mp4.push("-movflags", "+faststart", "-an", "video.mp4");
  if (mp4Only) {
    g.push(`[${last}]null[video]`);
    return { args: [...VSYNC, ...inputs, "-filter_complex_script", "graph.txt", "-map", "[video]", ...mp4], graph: g.join(";\n"), frames };
  }
  const cells = SPRITE_COLUMNS * SPRITE_ROWS;
  const step = Math.max(1, Math.floor(frames / cells));
  const cell = Math.round(width / SPRITE_COLUMNS / 2) * 2;
  // ffmpeg (4.1) pulls a filter graph from the sink that has received the oldest frame, and runs
  // the graph until that sink has one, encoding nothing meanwhile. A plain `tile` sink has nothing
  // until its 10th cell (frame ~9 × step), so the video frames before it would pile up unencoded in
  // fresh buffers (3 MB each at 1792x1024): an eighth of the render's CPU. So the sheet's branch
  // answers at once: `tile` starts with 9 blank cells and moves on one cell at a time (overlap), so
  // its 10th picture is the sheet of the first 10 sampled frames, the same as an unpadded tile's
  // first. Only its 1st (a placeholder) and 10th pictures pass, stamped an hour ahead so this sink
  // never counts as the one behind; image2 -update keeps the last, and -vsync vfr stops ffmpeg from
  // filling the hour between them with copies.
  g.push(
    `[${last}]split=3[video][first][sprites]`,
    `[first]trim=end_frame=1[thumb]`,
    `[sprites]select=not(mod(n\\,${step})),scale=${cell}:-2,tile=${SPRITE_COLUMNS}x${SPRITE_ROWS}:overlap=${cells - 1}:init_padding=${cells - 1},` +
      `select=eq(n\\,0)+eq(n\\,${cells - 1}),setpts=(3600+N/${FPS})/TB[sheet]`,
  );
  const webp = ["-c:v", "libwebp", "-quality", "80"];
  return {
    args: [
      ...VSYNC, ...inputs, "-filter_complex_script", "graph.txt",
      "-map", "[video]", ...mp4,
      "-map", "[thumb]", "-frames:v", "1", ...webp, "thumbnail.webp",
      "-map", "[sheet]", "-frames:v", "2", ...webp, "-f", "image2", "-update", "1", "spritesheet.webp",
    ],
    graph: g.join(";\n"),
    frames,
  };
}

/** Renders `spec` in `dir` (where its input files are); returns the paths of the three assets. */
export async function renderVideo(spec: RenderSpec, dir: string, opts: RenderOptions = {}): Promise<RenderedFiles> {
  const scene = sceneFor(spec.prompt, spec.seed, spec);
  const source = spec.inputs.restyle ?? spec.inputs.extend;
  let sourceFrames = 0;
  if (source) {
    const probed = await probeVideo(join(dir, source), opts.signal);
    sourceFrames = probed.frames || Math.round(probed.duration * FPS);
    if (!sourceFrames) throw new Error("the source video has no frames");
  }
  if (spec.inputs.extend) {
    // The new segment starts from the source's last frame (-update keeps overwriting one image).
    await runFfmpeg(["-sseof", "-1", "-i", spec.inputs.extend, "-update", "1", "last-frame.png"], { cwd: dir, signal: opts.signal });
  }
  const cmd = renderCommand(spec, scene, sourceFrames);
  await writeFile(join(dir, "graph.txt"), cmd.graph);
  await writeFile(join(dir, "prompt.txt"), scene.text.lines.join("\n"));
  await runFfmpeg(cmd.args, { cwd: dir, signal: opts.signal, onFrame: (n) => opts.onProgress?.(Math.min(1, n / cmd.frames)) });
  return { video: join(dir, "video.mp4"), thumbnail: join(dir, "thumbnail.webp"), spritesheet: join(dir, "spritesheet.webp") };
}

/**
 * A character's reference clip as renders use it: at most 4 seconds, 24 fps, scaled to fit
 * 480×480, H.264. Throws FfmpegError when `input` is not a readable video.
 */
export async function normaliseClip(input: string, output: string, dir: string, signal?: AbortSignal): Promise<void> {
  await probeVideo(join(dir, input), signal);
  await runFfmpeg(
    [
      "-i", input, "-t", "4", "-an",
      "-vf", `fps=${FPS},scale=w=480:h=480:force_original_aspect_ratio=decrease,scale=trunc(iw/2)*2:trunc(ih/2)*2,setsar=1,format=yuv420p`,
      ...X264, "-movflags", "+faststart", output,
    ],
    { cwd: dir, signal },
  );
}

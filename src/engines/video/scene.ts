// A scene derived from the prompt, deterministically: the same prompt and seed always give the same
// numbers, hence the same frames. Colour words in the prompt ("red", "ocean", "sunset") pick the
// palette; a hash of the prompt and seed picks everything else (background waves, shapes and their
// paths, a cellular-automaton texture, where the text sits). Nothing here is a model: it is a
// procedural picture of the prompt, so different prompts look visibly different.
import { createHash } from "node:crypto";

export interface FrameSize {
  width: number;
  height: number;
}

export interface Rgb {
  r: number;
  g: number;
  b: number;
}

/** A travelling wave m = sin(speed·t + kx·x/W + ky·y/H + phase), in -1..1. */
export interface Wave {
  speed: number;
  kx: number;
  ky: number;
  phase: number;
}

/** A point moving on a Lissajous path: centre (cx, cy) + (ax·sin(wx·t + px), ay·cos(wy·t + py)). */
export interface Path {
  cx: number;
  cy: number;
  ax: number;
  ay: number;
  wx: number;
  wy: number;
  px: number;
  py: number;
}

export interface Shape {
  kind: "circle" | "box";
  /** Pixels, even. */
  width: number;
  height: number;
  color: Rgb;
  /** 0..1 */
  alpha: number;
  path: Path;
}

export interface Scene {
  palette: Rgb[];
  /** Each pixel is a mix of two palette colours, `from` at m = -1 and `to` at m = 1. */
  background: { from: Rgb; to: Rgb; wave: Wave };
  shapes: Shape[];
  /** A band of an elementary cellular automaton (ffmpeg's cellauto), scrolling. */
  texture: { rule: number; seed: number; color: Rgb; alpha: number; height: number; y: number; drift: number };
  /** The prompt, wrapped; drawn only when a font is available. */
  text: { lines: string[]; fontSize: number; y: number };
  /** For a remix or edit: the source's frames, recoloured toward this prompt. */
  tint: { hue: number; saturation: number };
}

/** Hues (degrees) and lightness of colour words; the first ones found make the palette. */
const COLOR_WORDS: Record<string, [hue: number, sat: number, light: number]> = {
  red: [0, 0.75, 0.5],
  crimson: [348, 0.8, 0.45],
  fire: [15, 0.9, 0.5],
  orange: [30, 0.9, 0.55],
  sunset: [20, 0.85, 0.55],
  gold: [45, 0.85, 0.5],
  golden: [45, 0.85, 0.5],
  yellow: [55, 0.9, 0.55],
  sun: [50, 0.9, 0.6],
  lime: [90, 0.75, 0.5],
  green: [120, 0.6, 0.4],
  forest: [130, 0.55, 0.3],
  grass: [100, 0.6, 0.45],
  teal: [175, 0.6, 0.4],
  cyan: [185, 0.75, 0.5],
  sky: [200, 0.7, 0.65],
  ocean: [205, 0.75, 0.4],
  sea: [200, 0.7, 0.42],
  water: [195, 0.65, 0.45],
  blue: [220, 0.75, 0.5],
  navy: [225, 0.65, 0.25],
  night: [235, 0.5, 0.15],
  purple: [275, 0.6, 0.45],
  violet: [270, 0.65, 0.55],
  magenta: [305, 0.75, 0.5],
  pink: [330, 0.75, 0.7],
  rose: [340, 0.6, 0.6],
  brown: [25, 0.5, 0.3],
  desert: [35, 0.55, 0.6],
  sand: [40, 0.5, 0.7],
  white: [0, 0, 0.92],
  snow: [210, 0.2, 0.92],
  snowy: [210, 0.2, 0.9],
  ice: [195, 0.45, 0.85],
  silver: [210, 0.08, 0.72],
  gray: [0, 0, 0.5],
  grey: [0, 0, 0.5],
  black: [0, 0, 0.08],
  dark: [240, 0.25, 0.12],
};

/** sfc32, seeded from a SHA-256 of the inputs: fast, and the same everywhere. */
function prng(...parts: string[]): () => number {
  const h = createHash("sha256").update(parts.join("\u0000")).digest();
  let a = h.readUInt32LE(0);
  let b = h.readUInt32LE(4);
  let c = h.readUInt32LE(8);
  let d = h.readUInt32LE(12);
  const next = () => {
    a >>>= 0;
    b >>>= 0;
    c >>>= 0;
    d >>>= 0;
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  };
  for (let i = 0; i < 12; i++) next();
  return next;
}

function hsl(hue: number, s: number, l: number): Rgb {
  const h = (((hue % 360) + 360) % 360) / 60;
  const c = (1 - Math.abs(2 * l - 1)) * s;
  const x = c * (1 - Math.abs((h % 2) - 1));
  const [r, g, b] = h < 1 ? [c, x, 0] : h < 2 ? [x, c, 0] : h < 3 ? [0, c, x] : h < 4 ? [0, x, c] : h < 5 ? [x, 0, c] : [c, 0, x];
  const m = l - c / 2;
  const to = (v: number) => Math.round(Math.min(1, Math.max(0, v + m)) * 255);
  return { r: to(r), g: to(g), b: to(b) };
}

export const hex = (c: Rgb) => "0x" + [c.r, c.g, c.b].map((v) => v.toString(16).padStart(2, "0")).join("");

const even = (n: number) => Math.max(2, Math.round(n / 2) * 2);
const round3 = (n: number) => Math.round(n * 1000) / 1000;

/** The prompt as at most `maxLines` lines of at most `width` characters (an ellipsis when cut). */
export function wrapText(prompt: string, width: number, maxLines: number): string[] {
  const words = prompt.replace(/\s+/g, " ").trim().split(" ").filter(Boolean);
  const lines: string[] = [];
  let line = "";
  for (let word of words) {
    while (word.length > width) {
      // A word longer than a line is split.
      if (line) lines.push(line), (line = "");
      lines.push(word.slice(0, width));
      word = word.slice(width);
    }
    if (!line) line = word;
    else if (line.length + 1 + word.length <= width) line += " " + word;
    else lines.push(line), (line = word);
  }
  if (line) lines.push(line);
  if (lines.length <= maxLines) return lines;
  const kept = lines.slice(0, maxLines);
  kept[maxLines - 1] = kept[maxLines - 1].slice(0, width - 1).trimEnd() + "…";
  return kept;
}

export function sceneFor(prompt: string, seed: number, size: FrameSize): Scene {
  const rand = prng("atrium-video-scene-v1", String(seed), prompt);
  const between = (lo: number, hi: number) => lo + (hi - lo) * rand();
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const { width: W, height: H } = size;
  const short = Math.min(W, H);

  // Palette: colour words in order of appearance, then hash-chosen hues around the first one.
  const named = (prompt.toLowerCase().match(/[a-z]+/g) ?? []).filter((w) => w in COLOR_WORDS);
  const palette: Rgb[] = [...new Set(named)].slice(0, 3).map((w) => hsl(...COLOR_WORDS[w]));
  const baseHue = named.length ? COLOR_WORDS[named[0]][0] : between(0, 360);
  while (palette.length < 3) palette.push(hsl(baseHue + between(60, 300), between(0.45, 0.85), between(0.3, 0.65)));

  const [c0, c1, c2] = palette;
  const wave: Wave = { speed: round3(between(0.3, 0.9)), kx: round3(between(-4, 4)), ky: round3(between(-4, 4)), phase: round3(between(0, 6.283)) };
  const background = { from: c0, to: c1, wave };

  const shapes: Shape[] = [];
  const count = 3 + Math.floor(rand() * 3);
  for (let i = 0; i < count; i++) {
    const kind = rand() < 0.55 ? "circle" : "box";
    const w = even(short * between(0.1, 0.28));
    const h = kind === "circle" ? w : even(w * between(0.3, 1.2));
    shapes.push({
      kind,
      width: w,
      height: h,
      color: pick([c1, c2, hsl(baseHue + 180, 0.8, 0.55), { r: 255 - c0.r, g: 255 - c0.g, b: 255 - c0.b }]),
      alpha: round3(between(0.65, 0.95)),
      path: {
        cx: Math.round(between(0.25, 0.75) * W),
        cy: Math.round(between(0.25, 0.75) * H),
        ax: Math.round(between(0.1, 0.35) * W),
        ay: Math.round(between(0.1, 0.35) * H),
        wx: round3(between(0.4, 1.6)),
        wy: round3(between(0.4, 1.6)),
        px: round3(between(0, 6.283)),
        py: round3(between(0, 6.283)),
      },
    });
  }

  const bandHeight = even(H * between(0.18, 0.32));
  const texture = {
    rule: pick([18, 30, 45, 57, 73, 90, 105, 110, 126, 150]),
    seed: Math.floor(rand() * 4294967295),
    color: hsl(baseHue + between(120, 240), 0.7, 0.55),
    alpha: round3(between(0.35, 0.55)),
    height: bandHeight,
    y: rand() < 0.5 ? H - bandHeight : 0,
    drift: round3(between(10, 40)),
  };

  const fontSize = Math.round(short / 20);
  const lineChars = Math.max(8, Math.floor((W * 0.86) / (fontSize * 0.6)));
  const text = { lines: wrapText(prompt, lineChars, 5), fontSize, y: Math.round(H * (rand() < 0.5 ? between(0.06, 0.16) : between(0.62, 0.7))) };

  return { palette, background, shapes, texture, text, tint: { hue: Math.round(between(40, 320)), saturation: round3(between(0.9, 1.4)) } };
}

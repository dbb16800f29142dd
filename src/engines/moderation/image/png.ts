// A PNG decoder (the formats of the PNG 1.2 specification: grey, RGB, palette, grey+alpha, RGBA;
// 1 to 16 bits; Adam7 interlacing; tRNS transparency) on fflate's zlib inflate. APNG files
// decode as their default image. Rows go straight into an AreaDownscaler.
import { unzlibSync } from "fflate";
import { AreaDownscaler, ImageDecodeError, type RgbImage } from "./pixels.js";

const SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];
const CHANNELS: Record<number, number> = { 0: 1, 2: 3, 3: 1, 4: 2, 6: 4 };
/** Adam7 passes: x start, y start, x step, y step. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

export function decodePng(bytes: Uint8Array): RgbImage {
  if (bytes.length < 8 || SIGNATURE.some((b, i) => bytes[i] !== b)) throw new ImageDecodeError("not a PNG file");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let width = 0;
  let height = 0;
  let depth = 0;
  let colorType = -1;
  let interlaced = false;
  let palette: Uint8Array | undefined;
  let transparency: Uint8Array | undefined;
  const idat: Uint8Array[] = [];
  for (let at = 8; at + 8 <= bytes.length; ) {
    const length = view.getUint32(at);
    const type = String.fromCharCode(...bytes.subarray(at + 4, at + 8));
    const data = bytes.subarray(at + 8, at + 8 + length);
    if (data.length !== length) throw new ImageDecodeError(`PNG ${type} chunk is cut short`);
    if (type === "IHDR") {
      width = view.getUint32(at + 8);
      height = view.getUint32(at + 12);
      depth = data[8]!;
      colorType = data[9]!;
      interlaced = data[12] === 1;
    } else if (type === "PLTE") palette = data;
    else if (type === "tRNS") transparency = data;
    else if (type === "IDAT") idat.push(data);
    else if (type === "IEND") break;
    at += 12 + length;
  }
  const channels = CHANNELS[colorType];
  if (!width || !height || channels === undefined || ![1, 2, 4, 8, 16].includes(depth)) throw new ImageDecodeError("PNG with an invalid or missing IHDR");
  if (colorType === 3 && !palette) throw new ImageDecodeError("palette PNG without a PLTE chunk");
  if (!idat.length) throw new ImageDecodeError("PNG without image data (IDAT)");

  const bitsPerPixel = channels * depth;
  const bytesPerPixel = Math.max(1, bitsPerPixel >> 3);
  const passes = interlaced ? ADAM7.map(([x0, y0, dx, dy]) => ({ x0, y0, dx, dy, w: Math.ceil((width - x0) / dx), h: Math.ceil((height - y0) / dy) })) : [{ x0: 0, y0: 0, dx: 1, dy: 1, w: width, h: height }];
  let expected = 0;
  for (const p of passes) if (p.w > 0 && p.h > 0) expected += p.h * (1 + Math.ceil((p.w * bitsPerPixel) / 8));

  let raw: Uint8Array;
  try {
    raw = unzlibSync(concat(idat), { out: new Uint8Array(expected) });
  } catch (e) {
    throw new ImageDecodeError(`PNG image data does not inflate: ${(e as Error).message}`);
  }

  const toRgba = pixelReader(colorType, depth, palette, transparency);
  const out = new AreaDownscaler(width, height);
  // Interlaced images are assembled whole first (the passes each cover every part of the image).
  const full = interlaced ? new Uint8Array(width * height * 4) : undefined;
  const rgba = new Uint8Array(width * 4);
  let at = 0;
  for (const p of passes) {
    if (p.w <= 0 || p.h <= 0) continue;
    const stride = Math.ceil((p.w * bitsPerPixel) / 8);
    let previous: Uint8Array = new Uint8Array(stride);
    for (let y = 0; y < p.h; y++) {
      if (at + 1 + stride > raw.length) throw new ImageDecodeError("PNG image data is cut short");
      const filter = raw[at]!;
      const line = raw.subarray(at + 1, at + 1 + stride);
      unfilter(filter, line, previous, bytesPerPixel);
      previous = line;
      at += 1 + stride;
      if (!full) {
        for (let x = 0; x < width; x++) toRgba(line, x, rgba, x * 4);
        out.row(y, rgba);
      } else {
        const ty = p.y0 + y * p.dy;
        for (let x = 0; x < p.w; x++) toRgba(line, x, full, (ty * width + p.x0 + x * p.dx) * 4);
      }
    }
  }
  if (full) for (let y = 0; y < height; y++) out.row(y, full.subarray(y * width * 4, (y + 1) * width * 4));
  return out.result();
}

function concat(parts: Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

function unfilter(filter: number, line: Uint8Array, prev: Uint8Array, bpp: number): void {
  const n = line.length;
  switch (filter) {
    case 0:
      return;
    case 1:
      for (let i = bpp; i < n; i++) line[i] = (line[i]! + line[i - bpp]!) & 255;
      return;
    case 2:
      for (let i = 0; i < n; i++) line[i] = (line[i]! + prev[i]!) & 255;
      return;
    case 3:
      for (let i = 0; i < n; i++) line[i] = (line[i]! + (((i >= bpp ? line[i - bpp]! : 0) + prev[i]!) >> 1)) & 255;
      return;
    case 4:
      for (let i = 0; i < n; i++) {
        const a = i >= bpp ? line[i - bpp]! : 0;
        const b = prev[i]!;
        const c = i >= bpp ? prev[i - bpp]! : 0;
        const p = a + b - c;
        const pa = Math.abs(p - a);
        const pb = Math.abs(p - b);
        const pc = Math.abs(p - c);
        line[i] = (line[i]! + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c)) & 255;
      }
      return;
    default:
      throw new ImageDecodeError(`PNG row with an unknown filter type ${filter}`);
  }
}

type PixelReader = (line: Uint8Array, x: number, out: Uint8Array, at: number) => void;

/** Reads pixel x of an unfiltered row as 8-bit RGBA. */
function pixelReader(colorType: number, depth: number, palette?: Uint8Array, trns?: Uint8Array): PixelReader {
  const channels = CHANNELS[colorType]!;
  const max = (1 << Math.min(depth, 16)) - 1;
  // Sample k of pixel x, scaled to 0..255.
  const sample = (line: Uint8Array, x: number, k: number): number => {
    if (depth === 8) return line[x * channels + k]!;
    if (depth === 16) return line[(x * channels + k) * 2]!; // high byte
    const bit = (x * channels + k) * depth;
    const v = (line[bit >> 3]! >> (8 - depth - (bit & 7))) & max;
    return colorType === 3 ? v : Math.round((v * 255) / max);
  };
  // The raw (unscaled) value, for tRNS comparisons and palette indices.
  const rawSample = (line: Uint8Array, x: number, k: number): number => {
    if (depth === 16) return (line[(x * channels + k) * 2]! << 8) | line[(x * channels + k) * 2 + 1]!;
    if (depth === 8) return line[x * channels + k]!;
    const bit = (x * channels + k) * depth;
    return (line[bit >> 3]! >> (8 - depth - (bit & 7))) & max;
  };
  const trnsValue = (k: number) => (trns ? (trns[k * 2]! << 8) | trns[k * 2 + 1]! : -1);
  switch (colorType) {
    case 0:
      return (line, x, out, at) => {
        const g = sample(line, x, 0);
        out[at] = out[at + 1] = out[at + 2] = g;
        out[at + 3] = trns && rawSample(line, x, 0) === trnsValue(0) ? 0 : 255;
      };
    case 2:
      return (line, x, out, at) => {
        out[at] = sample(line, x, 0);
        out[at + 1] = sample(line, x, 1);
        out[at + 2] = sample(line, x, 2);
        const transparent = trns && rawSample(line, x, 0) === trnsValue(0) && rawSample(line, x, 1) === trnsValue(1) && rawSample(line, x, 2) === trnsValue(2);
        out[at + 3] = transparent ? 0 : 255;
      };
    case 3:
      return (line, x, out, at) => {
        const i = rawSample(line, x, 0);
        out[at] = palette![i * 3] ?? 0;
        out[at + 1] = palette![i * 3 + 1] ?? 0;
        out[at + 2] = palette![i * 3 + 2] ?? 0;
        out[at + 3] = trns && i < trns.length ? trns[i]! : 255;
      };
    case 4:
      return (line, x, out, at) => {
        out[at] = out[at + 1] = out[at + 2] = sample(line, x, 0);
        out[at + 3] = sample(line, x, 1);
      };
    default:
      return (line, x, out, at) => {
        out[at] = sample(line, x, 0);
        out[at + 1] = sample(line, x, 1);
        out[at + 2] = sample(line, x, 2);
        out[at + 3] = sample(line, x, 3);
      };
  }
}

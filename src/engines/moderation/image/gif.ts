// A GIF decoder for the first frame (GIF87a/89a: global and local colour tables, LZW, interlaced
// frames, the transparent index of a graphic control extension). The frame is placed on the
// logical screen; what it does not cover, and its transparent pixels, are white.
import { AreaDownscaler, ImageDecodeError, type RgbImage } from "./pixels.js";

export function decodeGif(b: Uint8Array): RgbImage {
  const ascii = String.fromCharCode(...b.subarray(0, 6));
  if (ascii !== "GIF87a" && ascii !== "GIF89a") throw new ImageDecodeError("not a GIF file");
  const u16 = (i: number) => b[i]! | (b[i + 1]! << 8);
  const need = (n: number) => {
    if (n > b.length) throw new ImageDecodeError("GIF is cut short");
  };
  need(13);
  const width = u16(6);
  const height = u16(8);
  const flags = b[10]!;
  let at = 13;
  let globalTable: Uint8Array | undefined;
  if (flags & 0x80) {
    const size = 3 * (1 << ((flags & 7) + 1));
    need(at + size);
    globalTable = b.subarray(at, at + size);
    at += size;
  }
  let transparentIndex = -1;
  for (;;) {
    need(at + 1);
    const block = b[at++]!;
    if (block === 0x3b) throw new ImageDecodeError("GIF has no image");
    if (block === 0x21) {
      need(at + 1);
      const label = b[at++]!;
      if (label === 0xf9) {
        need(at + 5);
        if (b[at + 1]! & 1) transparentIndex = b[at + 4]!;
      }
      at = skipSubBlocks(b, at);
      continue;
    }
    if (block !== 0x2c) throw new ImageDecodeError(`GIF block of unknown type 0x${block.toString(16)}`);
    need(at + 9);
    const left = u16(at);
    const top = u16(at + 2);
    const fw = u16(at + 4);
    const fh = u16(at + 6);
    const fflags = b[at + 8]!;
    at += 9;
    let table = globalTable;
    if (fflags & 0x80) {
      const size = 3 * (1 << ((fflags & 7) + 1));
      need(at + size);
      table = b.subarray(at, at + size);
      at += size;
    }
    if (!table) throw new ImageDecodeError("GIF frame without a colour table");
    need(at + 1);
    const minCodeSize = b[at++]!;
    const data: number[] = [];
    at = skipSubBlocks(b, at, data);
    const indices = lzw(Uint8Array.from(data), minCodeSize, fw * fh);
    const rows = fflags & 0x40 ? interlacedOrder(fh) : null;
    return compose(width, height, { left, top, fw, fh, indices, table, transparentIndex, rows });
  }
}

/** Skips (or collects into `into`) a chain of data sub-blocks; returns the offset after it. */
function skipSubBlocks(b: Uint8Array, at: number, into?: number[]): number {
  for (;;) {
    if (at >= b.length) throw new ImageDecodeError("GIF is cut short");
    const n = b[at++]!;
    if (n === 0) return at;
    if (at + n > b.length) throw new ImageDecodeError("GIF is cut short");
    if (into) for (let i = 0; i < n; i++) into.push(b[at + i]!);
    at += n;
  }
}

function lzw(data: Uint8Array, minCodeSize: number, pixels: number): Uint8Array {
  if (minCodeSize < 2 || minCodeSize > 8) throw new ImageDecodeError("GIF with an invalid LZW code size");
  const out = new Uint8Array(pixels);
  const clear = 1 << minCodeSize;
  const end = clear + 1;
  const prefix = new Int16Array(4096);
  const suffix = new Uint8Array(4096);
  const stack = new Uint8Array(4097);
  let size = minCodeSize + 1;
  let next = end + 1;
  let previous = -1;
  let first = 0;
  let n = 0;
  let bits = 0;
  let buffer = 0;
  for (let i = 0; i < data.length && n < pixels; ) {
    while (bits < size && i < data.length) {
      buffer |= data[i++]! << bits;
      bits += 8;
    }
    if (bits < size) break;
    const code = buffer & ((1 << size) - 1);
    buffer >>>= size;
    bits -= size;
    if (code === clear) {
      size = minCodeSize + 1;
      next = end + 1;
      previous = -1;
      continue;
    }
    if (code === end) break;
    let top = 0;
    let c = code;
    if (previous === -1) {
      if (code >= clear) throw new ImageDecodeError("GIF image data is corrupt");
      out[n++] = code;
      previous = code;
      first = code;
      continue;
    }
    if (code > next || code >= 4096) throw new ImageDecodeError("GIF image data is corrupt");
    if (code === next) {
      stack[top++] = first;
      c = previous;
    }
    while (c >= clear) {
      stack[top++] = suffix[c]!;
      c = prefix[c]!;
    }
    stack[top++] = c;
    first = c;
    while (top > 0 && n < pixels) out[n++] = stack[--top]!;
    if (next < 4096) {
      prefix[next] = previous;
      suffix[next] = first;
      next++;
      if (next === 1 << size && size < 12) size++;
    }
    previous = code;
  }
  return out; // a short stream leaves the rest at index 0, as browsers do
}

/** Frame row k holds image row order[k] in an interlaced GIF. */
function interlacedOrder(h: number): Int32Array {
  const order = new Int32Array(h);
  let k = 0;
  for (const [start, step] of [
    [0, 8],
    [4, 8],
    [2, 4],
    [1, 2],
  ] as const)
    for (let y = start; y < h; y += step) order[k++] = y;
  return order;
}

interface Frame {
  left: number;
  top: number;
  fw: number;
  fh: number;
  indices: Uint8Array;
  table: Uint8Array;
  transparentIndex: number;
  rows: Int32Array | null;
}

function compose(width: number, height: number, f: Frame): RgbImage {
  if (!width || !height) throw new ImageDecodeError("GIF with a zero width or height");
  // Image row y → the frame row that holds it.
  const frameRowOf = new Int32Array(f.fh).fill(-1);
  for (let k = 0; k < f.fh; k++) frameRowOf[f.rows ? f.rows[k]! : k] = k;
  const out = new AreaDownscaler(width, height);
  const rgba = new Uint8Array(width * 4);
  for (let y = 0; y < height; y++) {
    rgba.fill(255);
    const fy = y - f.top;
    if (fy >= 0 && fy < f.fh) {
      const k = frameRowOf[fy]!;
      for (let fx = 0; fx < f.fw; fx++) {
        const x = f.left + fx;
        if (x >= width) break;
        const index = f.indices[k * f.fw + fx]!;
        if (index === f.transparentIndex) continue;
        rgba[x * 4] = f.table[index * 3] ?? 0;
        rgba[x * 4 + 1] = f.table[index * 3 + 1] ?? 0;
        rgba[x * 4 + 2] = f.table[index * 3 + 2] ?? 0;
      }
    }
    out.row(y, rgba);
  }
  return out.result();
}

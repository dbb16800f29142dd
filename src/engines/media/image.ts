/**
 * Image header inspection: format and pixel size of PNG, JPEG, GIF and WebP from their headers,
 * without decoding pixels. Anything else, or a header that is cut short or inconsistent, is a
 * `MediaFormatError`.
 */
export class MediaFormatError extends Error {
  override name = "MediaFormatError";
}

export type ImageFormat = "png" | "jpeg" | "gif" | "webp";

export interface ImageInfo {
  format: ImageFormat;
  width: number;
  height: number;
}

const u16be = (b: Uint8Array, i: number) => (b[i]! << 8) | b[i + 1]!;
const u16le = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8);
const u24le = (b: Uint8Array, i: number) => b[i]! | (b[i + 1]! << 8) | (b[i + 2]! << 16);
const u32be = (b: Uint8Array, i: number) => ((b[i]! << 24) | (b[i + 1]! << 16) | (b[i + 2]! << 8) | b[i + 3]!) >>> 0;
const ascii = (b: Uint8Array, i: number, n: number) => String.fromCharCode(...b.subarray(i, i + n));

function need(b: Uint8Array, n: number, what: string): void {
  if (b.length < n) throw new MediaFormatError(`truncated ${what} header`);
}

function checked(format: ImageFormat, width: number, height: number): ImageInfo {
  if (!(width > 0 && height > 0)) throw new MediaFormatError(`${format} header has a zero width or height`);
  return { format, width, height };
}

function png(b: Uint8Array): ImageInfo {
  need(b, 24, "PNG");
  if (ascii(b, 12, 4) !== "IHDR" || u32be(b, 8) !== 13) throw new MediaFormatError("PNG without an IHDR chunk first");
  return checked("png", u32be(b, 16), u32be(b, 20));
}

function gif(b: Uint8Array): ImageInfo {
  need(b, 10, "GIF");
  return checked("gif", u16le(b, 6), u16le(b, 8));
}

function jpeg(b: Uint8Array): ImageInfo {
  let i = 2;
  for (;;) {
    need(b, i + 2, "JPEG");
    if (b[i] !== 0xff) throw new MediaFormatError("JPEG segment without a marker");
    let m = b[i + 1]!;
    while (m === 0xff) {
      i++; // fill bytes
      need(b, i + 2, "JPEG");
      m = b[i + 1]!;
    }
    i += 2;
    if (m === 0x01 || (m >= 0xd0 && m <= 0xd7)) continue; // standalone markers
    if (m === 0xd9 || m === 0xda) throw new MediaFormatError("JPEG without a frame header (SOF)");
    need(b, i + 2, "JPEG");
    const len = u16be(b, i);
    if (len < 2) throw new MediaFormatError("JPEG segment with a bad length");
    const isSof = m >= 0xc0 && m <= 0xcf && m !== 0xc4 && m !== 0xc8 && m !== 0xcc;
    if (isSof) {
      need(b, i + 7, "JPEG");
      return checked("jpeg", u16be(b, i + 5), u16be(b, i + 3));
    }
    i += len;
  }
}

function webp(b: Uint8Array): ImageInfo {
  need(b, 30, "WebP");
  const chunk = ascii(b, 12, 4);
  if (chunk === "VP8 ") {
    if (b[23] !== 0x9d || b[24] !== 0x01 || b[25] !== 0x2a) throw new MediaFormatError("WebP VP8 without a start code");
    return checked("webp", u16le(b, 26) & 0x3fff, u16le(b, 28) & 0x3fff);
  }
  if (chunk === "VP8L") {
    if (b[20] !== 0x2f) throw new MediaFormatError("WebP VP8L without a signature");
    const w = 1 + (b[21]! | ((b[22]! & 0x3f) << 8));
    const h = 1 + ((b[22]! >> 6) | (b[23]! << 2) | ((b[24]! & 0x0f) << 10));
    return checked("webp", w, h);
  }
  if (chunk === "VP8X") return checked("webp", 1 + u24le(b, 24), 1 + u24le(b, 27));
  throw new MediaFormatError(`WebP with an unknown first chunk '${chunk}'`);
}

/** Format and size of an image from its header; throws MediaFormatError. */
export function inspectImage(bytes: Uint8Array): ImageInfo {
  const b = bytes;
  if (b.length >= 8 && b[0] === 0x89 && ascii(b, 1, 3) === "PNG" && b[4] === 0x0d && b[5] === 0x0a && b[6] === 0x1a && b[7] === 0x0a) return png(b);
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return jpeg(b);
  if (b.length >= 6 && (ascii(b, 0, 6) === "GIF87a" || ascii(b, 0, 6) === "GIF89a")) return gif(b);
  if (b.length >= 12 && ascii(b, 0, 4) === "RIFF" && ascii(b, 8, 4) === "WEBP") return webp(b);
  if (b.length === 0) throw new MediaFormatError("empty image");
  throw new MediaFormatError("unsupported image format (expected PNG, JPEG, GIF or WebP)");
}

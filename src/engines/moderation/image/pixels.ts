// Decoded pixels on their way to the image model: every decoder writes RGBA rows into an
// AreaDownscaler, which keeps at most MODEL_SIZE × MODEL_SIZE averaged RGB pixels (a 25-megapixel
// photo never exists as a full RGBA buffer here). Transparent pixels are composited on white.

/** The image model's input side (nsfwjs' MobileNetV2 takes 224 × 224). */
export const MODEL_SIZE = 224;

/** What the image model gets: RGB bytes, width × height × 3. */
export interface RgbImage {
  width: number;
  height: number;
  rgb: Uint8Array;
}

/** Averages each block of source pixels into one pixel of at most MODEL_SIZE × MODEL_SIZE (never enlarges). */
export class AreaDownscaler {
  readonly outWidth: number;
  readonly outHeight: number;
  private readonly sums: Float64Array;
  private readonly counts: Uint32Array;
  private readonly column: Uint16Array;

  constructor(
    readonly width: number,
    readonly height: number,
  ) {
    this.outWidth = Math.min(width, MODEL_SIZE);
    this.outHeight = Math.min(height, MODEL_SIZE);
    this.sums = new Float64Array(this.outWidth * this.outHeight * 3);
    this.counts = new Uint32Array(this.outWidth * this.outHeight);
    this.column = new Uint16Array(width);
    for (let x = 0; x < width; x++) this.column[x] = Math.floor((x * this.outWidth) / width);
  }

  /** One source row, RGBA, `width` pixels. */
  row(y: number, rgba: Uint8Array): void {
    const ty = Math.floor((y * this.outHeight) / this.height);
    const base = ty * this.outWidth;
    for (let x = 0; x < this.width; x++) {
      const a = rgba[x * 4 + 3]! / 255;
      const t = base + this.column[x]!;
      // Over white: c·a + 255·(1 − a).
      this.sums[t * 3] += rgba[x * 4]! * a + 255 * (1 - a);
      this.sums[t * 3 + 1] += rgba[x * 4 + 1]! * a + 255 * (1 - a);
      this.sums[t * 3 + 2] += rgba[x * 4 + 2]! * a + 255 * (1 - a);
      this.counts[t]!++;
    }
  }

  result(): RgbImage {
    const rgb = new Uint8Array(this.outWidth * this.outHeight * 3);
    for (let t = 0; t < this.counts.length; t++) {
      const n = this.counts[t]! || 1;
      for (let k = 0; k < 3; k++) rgb[t * 3 + k] = Math.round(this.sums[t * 3 + k]! / n);
    }
    return { width: this.outWidth, height: this.outHeight, rgb };
  }
}

/** An image that is not what its header says, or uses a feature the decoder does not have. */
export class ImageDecodeError extends Error {
  override readonly name = "ImageDecodeError";
}

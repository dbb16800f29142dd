/**
 * Image token formulas of the vision guide ("Calculating costs"), per model family.
 *
 * Tile models (gpt-4o, gpt-4.1, gpt-4.5, gpt-4o-mini, gpt-5, o1, o3, gpt-4-turbo):
 *   detail "low": `base`.
 *   detail "high" (and "auto", which behaves like high here): scale to fit in 2048×2048 keeping the
 *   aspect ratio, then scale so that the shortest side is 768 px (only down: smaller images keep
 *   their size), count the 512-px tiles covering the result: base + tile × tiles.
 *   Scaled sides are rounded down to whole pixels (assumption; the guide's examples are exact).
 *   1024×1024 → 768×768 → 4 tiles → 85 + 4·170 = 765 on gpt-4o; 2048×4096 → 1024×2048 →
 *   768×1536 → 6 tiles → 1105; any size at low → 85.
 * Patch models (gpt-4.1-mini/nano, gpt-5-mini/nano, o4-mini): detail is ignored.
 *   patches = ceil(w/32)·ceil(h/32); above 1536 the image is scaled down so that it fits in 1536
 *   patches, with the scale adjusted so one side is a whole number of patches:
 *     r = √(32²·1536 / (w·h)); r ·= min(⌊w·r/32⌋ / (w·r/32), ⌊h·r/32⌋ / (h·r/32))
 *   then patches = ceil(w·r/32)·ceil(h·r/32) (≤ 1536), tokens = ceil(patches × multiplier).
 *   1024×1024 → 1024 patches; 1800×2400 → 1056×1408 → 33·44 = 1452 patches.
 */
import type { ImageCost } from "./models.js";

export type ImageDetail = "low" | "high" | "auto";

export function tileCount(width: number, height: number): number {
  let w = width;
  let h = height;
  const longest = Math.max(w, h);
  if (longest > 2048) {
    const s = 2048 / longest;
    w = Math.floor(w * s);
    h = Math.floor(h * s);
  }
  const shortest = Math.min(w, h);
  if (shortest > 768) {
    const s = 768 / shortest;
    w = Math.floor(w * s);
    h = Math.floor(h * s);
  }
  return Math.ceil(Math.max(w, 1) / 512) * Math.ceil(Math.max(h, 1) / 512);
}

export function patchCount(width: number, height: number): number {
  const raw = Math.ceil(width / 32) * Math.ceil(height / 32);
  if (raw <= 1536) return raw;
  let r = Math.sqrt((32 * 32 * 1536) / (width * height));
  const pw = (width * r) / 32;
  const ph = (height * r) / 32;
  r *= Math.min(Math.floor(pw) / pw, Math.floor(ph) / ph);
  // tiny epsilon: w·r is meant to land on a multiple of 32 for the limiting side
  const cw = Math.ceil((width * r) / 32 - 1e-9);
  const ch = Math.ceil((height * r) / 32 - 1e-9);
  return Math.min(Math.max(cw, 1) * Math.max(ch, 1), 1536);
}

/** Tokens of one image of width×height at `detail` for a model family. */
export function imageTokens(cost: ImageCost, width: number, height: number, detail: ImageDetail = "auto"): number {
  switch (cost.kind) {
    case "tile":
      return detail === "low" ? cost.base : cost.base + cost.tile * tileCount(width, height);
    case "patch":
      return Math.ceil(patchCount(width, height) * cost.multiplier - 1e-9);
    case "none":
      throw new RangeError("model takes no image input");
  }
}

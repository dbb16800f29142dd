// Units of encoder work: a request's inputs cut into windows (windows.ts) and packed, shortest
// first, into small worker tasks, so that the scheduler (src/engines/pool/lanes.ts) can put other
// requests' units between them. A long input's windows may land in different units; its vector
// is pooled here from theirs, as the worker pools the windows of one task (README: the
// length-weighted mean of the window vectors, cut to `dimensions`, unit length).
import { integerFromEnv } from "../../common/env.js";
import { LOCAL_EMBEDDING_DIMENSIONS, WINDOW_CHARS, WINDOWS_PER_PASS } from "./constants.js";
import { splitIntoWindows } from "./windows.js";

/** One worker task: windows of one or more inputs. */
export interface EncodeUnit {
  texts: string[];
  /** The input each window belongs to. */
  owners: number[];
}

/** Most windows in one unit: with UNIT_CHARS, a unit is one to a few forward passes. */
export const UNIT_MAX_WINDOWS = Math.min(16, WINDOWS_PER_PASS);

/**
 * Most characters in one unit by default: one full window (~85-100 ms of one worker's time on a
 * quiet machine), which is how long an interactive request may wait behind a bulk unit already
 * running. Short inputs still share a unit (up to UNIT_MAX_WINDOWS of them).
 */
export const DEFAULT_UNIT_CHARS = WINDOW_CHARS;

/** Characters cut into windows between two turns of the event loop. */
const SPLIT_SLICE_CHARS = 64_000;

/** ATRIUM_ENCODER_UNIT_CHARS: most characters per unit of work (WINDOW_CHARS to 64,000). */
export function unitCharsFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  return integerFromEnv(env, "ATRIUM_ENCODER_UNIT_CHARS", DEFAULT_UNIT_CHARS, WINDOW_CHARS, 64_000);
}

/**
 * The units of `inputs`: windows sorted by length, at most `maxChars` and UNIT_MAX_WINDOWS each (one
 * window at least). With `spread` > 1, a request smaller than that is still cut into up to `spread`
 * units of about equal size, so that idle workers share it: a request's time is its largest unit's.
 */
export async function cutIntoUnits(inputs: readonly string[], maxChars: number, spread = 1): Promise<EncodeUnit[]> {
  const windows: string[] = [];
  const owners: number[] = [];
  let sinceYield = 0;
  for (let i = 0; i < inputs.length; i++) {
    // The empty string has no tokens; a row with none would drop out of the model's sparse batch.
    const text = inputs[i] || " ";
    for (const w of splitIntoWindows(text)) {
      windows.push(w);
      owners.push(i);
    }
    sinceYield += text.length;
    if (sinceYield >= SPLIT_SLICE_CHARS) {
      sinceYield = 0;
      await new Promise((r) => setImmediate(r));
    }
  }
  // The model pads a pass to its longest window: similar lengths together.
  const order = windows.map((_, k) => k).sort((a, b) => windows[a]!.length - windows[b]!.length);
  if (spread > 1) {
    let total = 0;
    for (const w of windows) total += w.length;
    maxChars = Math.min(maxChars, Math.ceil(total / spread));
  }
  const units: EncodeUnit[] = [];
  let unit: EncodeUnit = { texts: [], owners: [] };
  let chars = 0;
  for (const k of order) {
    const w = windows[k]!;
    if (unit.texts.length > 0 && (unit.texts.length >= UNIT_MAX_WINDOWS || chars + w.length > maxChars)) {
      units.push(unit);
      unit = { texts: [], owners: [] };
      chars = 0;
    }
    unit.texts.push(w);
    unit.owners.push(owners[k]!);
    chars += w.length;
  }
  if (unit.texts.length > 0) units.push(unit);
  return units;
}

/**
 * One vector per input from its windows' vectors (`results[u]`: unit u's windows, full
 * LOCAL_EMBEDDING_DIMENSIONS each, back to back): weighted by window length, the first `dims`
 * components, unit length.
 */
export function poolWindows(inputs: number, units: readonly EncodeUnit[], results: readonly Float32Array[], dims: number): Float32Array[] {
  const D = LOCAL_EMBEDDING_DIMENSIONS;
  const sums = new Float32Array(inputs * D);
  units.forEach((unit, u) => {
    const vectors = results[u]!;
    if (vectors.length !== unit.texts.length * D) throw new Error(`the encoder answered ${vectors.length} floats for ${unit.texts.length} windows`);
    unit.texts.forEach((text, j) => {
      const at = unit.owners[j]! * D;
      for (let d = 0; d < D; d++) sums[at + d] += text.length * vectors[j * D + d]!;
    });
  });
  const out = new Array<Float32Array>(inputs);
  for (let i = 0; i < inputs; i++) {
    const v = new Float32Array(dims);
    let norm = 0;
    for (let d = 0; d < dims; d++) norm += sums[i * D + d]! ** 2;
    const scale = norm > 0 ? 1 / Math.sqrt(norm) : 0;
    for (let d = 0; d < dims; d++) v[d] = sums[i * D + d]! * scale;
    out[i] = v;
  }
  return out;
}

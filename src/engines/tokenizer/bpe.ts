/**
 * Byte-pair merging, exactly as tiktoken's `_byte_pair_merge` (tiktoken/src/lib.rs): repeatedly
 * merge the adjacent pair whose concatenation has the lowest rank, the leftmost pair on ties, until
 * no adjacent pair is a token. Every part is a token all along (single bytes are tokens and a merge
 * only makes a token), so the result is the count/ids of the final parts.
 *
 * Two implementations with the same result: a scan over small typed arrays for short pieces (what
 * tiktoken does, O(n²) but n is tiny), and a linked list plus a binary heap keyed by
 * (rank, position) for long pieces, so that a 1 MB run of one letter or of spaces costs
 * O(n log n) instead of O(n²) and cannot stall the server.
 */
import type { RankTable } from "./ranks.js";

const NONE = 0x7fffffff;
/** Pieces longer than this (in bytes) use the heap-based merge. */
export const SMALL_PIECE_MAX = 128;

const scratchTok = new Int32Array(SMALL_PIECE_MAX + 1);
const scratchRanks = new Int32Array(SMALL_PIECE_MAX + 1);

/**
 * Merge bytes[0, n) (n ≥ 2) and return the number of tokens; when `out` is given, append the ids.
 * Parts are tracked by token id: a part's pair rank is `table.pair(tok[i], tok[i + 1])`, and the
 * merged part's id is that rank, so no bytes are looked at after the first pass.
 */
export function bytePairMerge(table: RankTable, bytes: Uint8Array, n: number, out?: number[]): number {
  if (n > SMALL_PIECE_MAX) return mergeLarge(table, bytes, n, out);
  const tok = scratchTok;
  const rk = scratchRanks;
  const byteRank = table.byteRank;
  const bytePair = table.bytePair;
  let prev = bytes[0]!;
  tok[0] = byteRank[prev]!;
  for (let i = 1; i < n; i++) {
    const b = bytes[i]!;
    tok[i] = byteRank[b]!;
    const r = bytePair[(prev << 8) | b]!;
    rk[i - 1] = r < 0 ? NONE : r;
    prev = b;
  }
  let pairs = n - 1; // parts = pairs + 1
  while (pairs > 0) {
    let min = rk[0]!;
    let mi = 0;
    for (let i = 1; i < pairs; i++) {
      const r = rk[i]!;
      if (r < min) {
        min = r;
        mi = i;
      }
    }
    if (min === NONE) break;
    // part mi absorbs part mi + 1 and becomes token `min`
    tok[mi] = min;
    pairs--;
    for (let j = mi + 1; j <= pairs; j++) {
      tok[j] = tok[j + 1]!;
      rk[j] = rk[j + 1]!;
    }
    if (mi > 0) {
      const r = table.pair(tok[mi - 1]!, min);
      rk[mi - 1] = r < 0 ? NONE : r;
    }
    if (mi < pairs) {
      const r = table.pair(min, tok[mi + 1]!);
      rk[mi] = r < 0 ? NONE : r;
    }
  }
  const len = pairs + 1;
  if (out) for (let k = 0; k < len; k++) out.push(tok[k]!);
  return len;
}

/** Binary min-heap of numbers (rank · 2^32 + position: exact in a double). */
class NumberHeap {
  private a: number[] = [];
  get size(): number {
    return this.a.length;
  }
  push(v: number): void {
    const a = this.a;
    let i = a.length;
    a.push(v);
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (a[p]! <= v) break;
      a[i] = a[p]!;
      i = p;
    }
    a[i] = v;
  }
  pop(): number {
    const a = this.a;
    const top = a[0]!;
    const last = a.pop()!;
    const n = a.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && a[c + 1]! < a[c]!) c++;
        if (a[c]! >= last) break;
        a[i] = a[c]!;
        i = c;
      }
      a[i] = last;
    }
    return top;
  }
}

const POS = 2 ** 32;

function mergeLarge(table: RankTable, bytes: Uint8Array, n: number, out?: number[]): number {
  // Parts are identified by their first byte's index; next[i] = the following part (n = none).
  const next = new Int32Array(n);
  const prev = new Int32Array(n);
  const tok = new Int32Array(n);
  const pairRank = new Int32Array(n); // rank of (part i + its next part), NONE if not a token
  const alive = new Uint8Array(n);
  const heap = new NumberHeap();
  for (let i = 0; i < n; i++) {
    next[i] = i + 1;
    prev[i] = i - 1;
    alive[i] = 1;
    tok[i] = table.byteRank[bytes[i]!]!;
  }
  for (let i = 0; i < n - 1; i++) {
    const r = table.bytePair[(bytes[i]! << 8) | bytes[i + 1]!]!;
    pairRank[i] = r < 0 ? NONE : r;
    if (r >= 0) heap.push(r * POS + i);
  }
  pairRank[n - 1] = NONE;
  let parts = n;
  const update = (i: number): void => {
    const j = next[i]!;
    const r = j < n ? table.pair(tok[i]!, tok[j]!) : -1;
    pairRank[i] = r < 0 ? NONE : r;
    if (r >= 0) heap.push(r * POS + i);
  };
  while (heap.size > 0) {
    const top = heap.pop();
    const r = Math.floor(top / POS);
    const i = top - r * POS;
    // Stale entry: the part is gone or its pair changed since (a pair's bytes only grow, and
    // distinct byte strings have distinct ranks, so an equal rank means the same pair).
    if (!alive[i] || pairRank[i] !== r) continue;
    const j = next[i]!;
    alive[j] = 0;
    next[i] = next[j]!;
    if (next[i]! < n) prev[next[i]!] = i;
    tok[i] = r;
    parts--;
    update(i);
    if (prev[i]! >= 0) update(prev[i]!);
  }
  if (out) for (let i = 0; i < n; i = next[i]!) out.push(tok[i]!);
  return parts;
}

/**
 * Byte-pair rank tables, read from the `tiktoken` npm package's `encoders/<name>.json` (the same
 * data its WASM build and js-tiktoken use: lines of `<b64> <offset> <b64> <b64> ...`, token i of a
 * line having rank offset + i).
 *
 * The table is a compact open-addressing hash keyed by the token's bytes, all in typed arrays:
 *   tokenBytes  every token's bytes, concatenated (1.4 MB for o200k_base)
 *   tokenStart  rank → offset in tokenBytes (tokenStart[rank + 1] - tokenStart[rank] = length)
 *   slots       two int32 per hash slot: rank + 1 (0 = empty) and the full 32-bit hash (compared
 *               before the bytes), side by side so that a probe touches one cache line; load ≤ 0.4
 * ≈ 6 MB for o200k_base. A `Map<string, number>` of the same tokens is slower by about 4× here:
 * each lookup of a freshly sliced key chases pointers into a 200k-entry hash and its key strings,
 * which is what the BPE merge loop does all the time on text the piece cache has not seen.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";

export type EncodingName = "o200k_base" | "cl100k_base";

const require = createRequire(import.meta.url);

/** FNV-1a over bytes[start, end). */
export function hashBytes(bytes: Uint8Array, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h | 0;
}

function pairHash(a: number, b: number): number {
  let h = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0x9e3779b1);
  h ^= h >>> 15;
  return h;
}

const HOT_BITS = 10;
const HOT_IDS = 1 << HOT_BITS;

function hotHash(key: number): number {
  return Math.imul(key, 0x9e3779b1) >>> 12;
}

export class RankTable {
  readonly name: EncodingName;
  readonly specialTokens: Readonly<Record<string, number>>;
  /** tiktoken's published pattern (documentation; the engine uses its JS translation). */
  readonly patStr: string;
  readonly size: number;
  private readonly tokenBytes: Uint8Array;
  private readonly tokenStart: Int32Array;
  private readonly slots: Int32Array;
  private readonly mask: number;

  constructor(name: EncodingName, json: { pat_str: string; special_tokens: Record<string, number>; bpe_ranks: string }) {
    this.name = name;
    this.specialTokens = json.special_tokens;
    this.patStr = json.pat_str;
    const tokens: Buffer[] = [];
    let total = 0;
    for (const line of json.bpe_ranks.split("\n")) {
      if (!line) continue;
      const parts = line.split(" ");
      const offset = Number.parseInt(parts[1]!, 10);
      for (let i = 2; i < parts.length; i++) {
        const b = Buffer.from(parts[i]!, "base64");
        tokens[offset + i - 2] = b;
        total += b.length;
      }
    }
    const n = tokens.length;
    this.size = n;
    this.tokenBytes = new Uint8Array(total);
    this.tokenStart = new Int32Array(n + 1);
    let pos = 0;
    for (let r = 0; r < n; r++) {
      this.tokenStart[r] = pos;
      const b = tokens[r];
      if (b) {
        this.tokenBytes.set(b, pos);
        pos += b.length;
      }
    }
    this.tokenStart[n] = pos;
    let cap = 1;
    while (cap < n * 2.5) cap <<= 1;
    this.mask = cap - 1;
    this.slots = new Int32Array(cap * 2);
    for (let r = 0; r < n; r++) {
      const s = this.tokenStart[r]!;
      const e = this.tokenStart[r + 1]!;
      if (e === s) continue; // gap in the rank space
      const h = hashBytes(this.tokenBytes, s, e);
      let i = h & this.mask;
      while (this.slots[i * 2] !== 0) i = (i + 1) & this.mask;
      this.slots[i * 2] = r + 1;
      this.slots[i * 2 + 1] = h;
    }
    this.buildPairs();
  }

  /** Rank of the byte string bytes[start, end), or -1 when it is not a token. */
  rank(bytes: Uint8Array, start: number, end: number): number {
    const h = hashBytes(bytes, start, end);
    return this.rankWithHash(bytes, start, end, h);
  }

  rankWithHash(bytes: Uint8Array, start: number, end: number, h: number): number {
    const len = end - start;
    const tb = this.tokenBytes;
    const ts = this.tokenStart;
    const slots = this.slots;
    const mask = this.mask;
    let i = h & mask;
    for (;;) {
      const v = slots[i * 2]!;
      if (v === 0) return -1;
      if (slots[i * 2 + 1] === h) {
        const r = v - 1;
        const s = ts[r]!;
        if (ts[r + 1]! - s === len) {
          let k = 0;
          while (k < len && tb[s + k] === bytes[start + k]) k++;
          if (k === len) return r;
        }
      }
      i = (i + 1) & mask;
    }
  }

  /** Rank of a single byte (every byte is a token in these encodings). */
  readonly byteRank = new Int32Array(256);
  /**
   * Merge table: (left token, right token) → rank of their concatenation, for every token that
   * splits into two tokens (446k pairs for o200k_base, 233k for cl100k_base). Open addressing,
   * three int32 per slot [left + 1, right, rank], load ≤ 0.5. With it the merge loop works on
   * token ids only: one probe per candidate pair, no bytes hashed or compared.
   */
  private pairSlots!: Int32Array;
  private pairMask = 0;

  private buildPairs(): void {
    for (let b = 0; b < 256; b++) {
      const one = new Uint8Array([b]);
      const r = this.rank(one, 0, 1);
      if (r < 0) throw new Error(`${this.name}: byte ${b} is not a token`);
      this.byteRank[b] = r;
    }
    const tb = this.tokenBytes;
    const ts = this.tokenStart;
    let found = new Int32Array(3 << 19);
    let nf = 0;
    for (let r = 0; r < this.size; r++) {
      const s = ts[r]!;
      const e = ts[r + 1]!;
      // prefix hash grows one byte at a time (FNV-1a is incremental)
      let hp = 0x811c9dc5;
      for (let k = s + 1; k < e; k++) {
        hp = Math.imul(hp ^ tb[k - 1]!, 0x01000193);
        const a = this.rankWithHash(tb, s, k, hp | 0);
        if (a < 0) continue;
        const b = this.rank(tb, k, e);
        if (b < 0) continue;
        if (nf + 3 > found.length) {
          const bigger = new Int32Array(found.length * 2);
          bigger.set(found);
          found = bigger;
        }
        found[nf++] = a;
        found[nf++] = b;
        found[nf++] = r;
      }
    }
    let cap = 1;
    while (cap < (nf / 3) * 2) cap <<= 1;
    this.pairMask = cap - 1;
    const slots = new Int32Array(cap * 3);
    for (let f = 0; f < nf; f += 3) {
      const a = found[f]!;
      const b = found[f + 1]!;
      let i = pairHash(a, b) & this.pairMask;
      while (slots[i * 3] !== 0) i = (i + 1) & this.pairMask;
      slots[i * 3] = a + 1;
      slots[i * 3 + 1] = b;
      slots[i * 3 + 2] = found[f + 2]!;
    }
    this.pairSlots = slots;
    this.buildHot(found, nf);
  }

  /**
   * Two-byte tokens by their bytes: bytePair[b0 << 8 | b1] = rank, or -1. 256 KiB, dense; the
   * first pass of every merge looks up adjacent bytes here instead of in the pair table.
   */
  readonly bytePair = new Int32Array(1 << 16).fill(-1);
  /**
   * The pairs whose both ids are below HOT_IDS (36k of them in o200k_base, 27k in cl100k_base):
   * open addressing, two int32 per slot [key + 1, rank] with key = a << HOT_BITS | b, 512 KiB.
   * Most merge steps on text the piece cache has not seen join such low-rank parts (84 % of the
   * probes on the bench's pseudo-words); this table stays in the CPU's L2 cache, while a probe of
   * the full table (12 MiB) usually misses it.
   */
  private hotSlots!: Int32Array;
  private hotMask = 0;

  private buildHot(pairs: Int32Array, count: number): void {
    let hot = 0;
    for (let f = 0; f < count; f += 3) if ((pairs[f]! | pairs[f + 1]!) < HOT_IDS) hot++;
    let cap = 1;
    while (cap < hot * 1.5) cap <<= 1;
    this.hotMask = cap - 1;
    const slots = new Int32Array(cap * 2);
    for (let f = 0; f < count; f += 3) {
      const a = pairs[f]!;
      const b = pairs[f + 1]!;
      if ((a | b) >= HOT_IDS) continue;
      const key = (a << HOT_BITS) | b;
      let i = hotHash(key) & this.hotMask;
      while (slots[i * 2] !== 0) i = (i + 1) & this.hotMask;
      slots[i * 2] = key + 1;
      slots[i * 2 + 1] = pairs[f + 2]!;
    }
    this.hotSlots = slots;
    for (let x = 0; x < 256; x++) {
      for (let y = 0; y < 256; y++) {
        const two = new Uint8Array([x, y]);
        this.bytePair[(x << 8) | y] = this.rank(two, 0, 2);
      }
    }
  }

  /**
   * Rank of the token whose bytes are those of token a followed by token b, or -1. Small enough
   * to be inlined into the merge loop: the first probe of the hot table is here, the rest in
   * methods of their own.
   */
  pair(a: number, b: number): number {
    if ((a | b) >= HOT_IDS) return this.coldPair(a, b);
    const key1 = ((a << HOT_BITS) | b) + 1;
    const i = hotHash(key1 - 1) & this.hotMask;
    const k = this.hotSlots[i * 2]!;
    if (k === key1) return this.hotSlots[i * 2 + 1]!;
    return k === 0 ? -1 : this.hotProbe(key1, (i + 1) & this.hotMask);
  }

  private hotProbe(key1: number, i: number): number {
    const slots = this.hotSlots;
    const mask = this.hotMask;
    for (;;) {
      const k = slots[i * 2]!;
      if (k === key1) return slots[i * 2 + 1]!;
      if (k === 0) return -1;
      i = (i + 1) & mask;
    }
  }

  private coldPair(a: number, b: number): number {
    const slots = this.pairSlots;
    const mask = this.pairMask;
    const a1 = a + 1;
    let i = pairHash(a, b) & mask;
    for (;;) {
      const k = slots[i * 3]!;
      if (k === 0) return -1;
      if (k === a1 && slots[i * 3 + 1] === b) return slots[i * 3 + 2]!;
      i = (i + 1) & mask;
    }
  }

  /** The bytes of a token (a view, do not modify). */
  bytesOf(rank: number): Uint8Array {
    if (!(rank >= 0 && rank < this.size)) throw new RangeError(`unknown token id ${rank} for ${this.name}`);
    return this.tokenBytes.subarray(this.tokenStart[rank]!, this.tokenStart[rank + 1]!);
  }
}

export function loadRankTable(name: EncodingName): RankTable {
  const file = require.resolve(`tiktoken/encoders/${name}.json`);
  return new RankTable(name, JSON.parse(readFileSync(file, "utf8")));
}

/**
 * One byte-pair encoding (o200k_base or cl100k_base): pre-tokenizer + BPE + a bounded cache of
 * piece → token count.
 *
 * Counting is Σ count(piece) over the pre-tokenizer's pieces, because tiktoken encodes every piece
 * on its own (`CoreBPE::encode_ordinary`: a piece that is itself a token is that token, otherwise
 * it is byte-pair merged). Counting needs no ids, so pieces are never materialized as strings:
 * a sticky regex walks the text, the piece text[start, end) is hashed in place and looked up in
 * the count cache; only a miss UTF-8-encodes the piece into a scratch buffer and merges it.
 *
 * Special-token text ("<|endoftext|>") is never special here: there is no special-token path at
 * all, exactly like tiktoken's `encode_ordinary`.
 */
import { asciiPieceEnd } from "./ascii-pieces.js";
import { bytePairMerge } from "./bpe.js";
import { hashUnits, PieceCountCache, SHORT_PIECE_MAX } from "./cache.js";
import { loadRankTable, type EncodingName, type RankTable } from "./ranks.js";

/**
 * The pre-tokenizer patterns, translated from tiktoken's Rust (fancy-regex) patterns to JS:
 * - `\s` / `\S` become `\p{White_Space}` / `\P{White_Space}`: Rust's `\s` is Unicode White_Space,
 *   JS's `\s` is not (it adds U+FEFF and lacks U+0085), which makes the plain JS ports disagree
 *   with tiktoken on text containing those characters.
 * - `(?i:'s|'t|'re|'ve|'m|'ll|'d)` (JS has no inline flags) is spelled out with Unicode simple
 *   case folding, which includes U+017F LATIN SMALL LETTER LONG S for `s`, as the Rust regex does.
 * Every character is matched by some alternative, so the matches tile the text.
 */
const WS = String.raw`\p{White_Space}`;
const NWS = String.raw`\P{White_Space}`;
const CONTRACTION = String.raw`'(?:[sS\u017F]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])`;

export const PATTERNS: Readonly<Record<EncodingName, string>> = {
  o200k_base: [
    String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?:${CONTRACTION})?`,
    String.raw`[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?:${CONTRACTION})?`,
    String.raw`\p{N}{1,3}`,
    String.raw` ?[^${WS}\p{L}\p{N}]+[\r\n/]*`,
    String.raw`${WS}*[\r\n]+`,
    String.raw`${WS}+(?!${NWS})`,
    String.raw`${WS}+`,
  ].join("|"),
  cl100k_base: [
    CONTRACTION,
    String.raw`[^\r\n\p{L}\p{N}]?\p{L}+`,
    String.raw`\p{N}{1,3}`,
    String.raw` ?[^${WS}\p{L}\p{N}]+[\r\n]*`,
    String.raw`${WS}*[\r\n]+`,
    String.raw`${WS}+(?!${NWS})`,
    String.raw`${WS}+`,
  ].join("|"),
};

export interface EncodingOptions {
  /** Max cached pieces (default 65 536; 0 disables the cache). */
  cacheEntries?: number;
  /** Longest piece, in UTF-16 units, that is cached (default 32). */
  cacheMaxPieceUnits?: number;
}

let scratch = new Uint8Array(4096);
let utf8Length = 0;

/**
 * UTF-8 bytes of text[start, end) in a reusable buffer (length left in `utf8Length`). Lone
 * surrogates become U+FFFD, as TextEncoder, Buffer and wasm-bindgen (the WASM tiktoken) do.
 */
function utf8(text: string, start: number, end: number): Uint8Array {
  const need = (end - start) * 3;
  let buf = scratch;
  if (need > buf.length) {
    buf = new Uint8Array(need);
    if (need <= 1 << 16) scratch = buf; // keep the shared buffer small
  }
  let j = 0;
  for (let i = start; i < end; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      buf[j++] = c;
    } else if (c < 0x800) {
      buf[j++] = 0xc0 | (c >> 6);
      buf[j++] = 0x80 | (c & 0x3f);
    } else if (c >= 0xd800 && c <= 0xdfff) {
      const d = i + 1 < end ? text.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
        i++;
        buf[j++] = 0xf0 | (c >> 18);
        buf[j++] = 0x80 | ((c >> 12) & 0x3f);
        buf[j++] = 0x80 | ((c >> 6) & 0x3f);
        buf[j++] = 0x80 | (c & 0x3f);
      } else {
        buf[j++] = 0xef;
        buf[j++] = 0xbf;
        buf[j++] = 0xbd;
      }
    } else {
      buf[j++] = 0xe0 | (c >> 12);
      buf[j++] = 0x80 | ((c >> 6) & 0x3f);
      buf[j++] = 0x80 | (c & 0x3f);
    }
  }
  utf8Length = j;
  return buf;
}

export class BpeEncoding {
  readonly name: EncodingName;
  readonly table: RankTable;
  /** Sticky: each `test` matches exactly at lastIndex and advances it to the piece's end. */
  private readonly pattern: RegExp;
  /** The same pieces without the regex while the characters that decide them are ASCII. */
  private readonly asciiPieceEnd: (text: string, start: number) => number;
  readonly cache: PieceCountCache | null;
  private readonly maxCached: number;

  constructor(table: RankTable, options: EncodingOptions = {}) {
    this.name = table.name;
    this.table = table;
    this.pattern = new RegExp(PATTERNS[table.name], "yu");
    this.asciiPieceEnd = asciiPieceEnd[table.name];
    const entries = options.cacheEntries ?? 65_536;
    this.cache = entries > 0 ? new PieceCountCache(entries, options.cacheMaxPieceUnits ?? 32) : null;
    this.maxCached = this.cache ? this.cache.maxPieceUnits : -1;
  }

  /** End of the piece that starts at `start`. */
  private pieceEnd(text: string, start: number): number {
    const end = this.asciiPieceEnd(text, start);
    if (end >= 0) return end;
    const re = this.pattern;
    re.lastIndex = start;
    if (re.test(text) && re.lastIndex > start) return re.lastIndex;
    // Unreachable with these patterns (every character matches some alternative); kept so that
    // a Unicode-table surprise can never loop: take one code point as its own piece.
    const c = text.charCodeAt(start);
    return c >= 0xd800 && c <= 0xdbff && start + 1 < text.length ? start + 2 : start + 1;
  }

  /** Token count of text[start, end) — one piece — without the cache. */
  private countPiece(text: string, start: number, end: number): number {
    const bytes = utf8(text, start, end);
    const n = utf8Length;
    if (n === 1) return 1;
    if (this.table.rank(bytes, 0, n) >= 0) return 1;
    return bytePairMerge(this.table, bytes, n);
  }

  /** Number of tokens of `text`, special-token look-alikes counted as ordinary text. */
  countTokens(text: string): number {
    const len = text.length;
    const cache = this.cache;
    const maxCached = this.maxCached;
    let total = 0;
    let start = 0;
    while (start < len) {
      const end = this.pieceEnd(text, start);
      const n = end - start;
      if (n === 1 && text.charCodeAt(start) < 0x80) {
        total += 1; // one ASCII byte is one token
        start = end;
        continue;
      }
      if (n <= SHORT_PIECE_MAX && cache) {
        // the short-piece key (cache.ts): the characters themselves, if they are ASCII
        let k0 = n << 28;
        let k1 = 0;
        let all = 0;
        const mid = n > 4 ? start + 4 : end;
        let i = start;
        for (let shift = 0; i < mid; i++, shift += 7) {
          const c = text.charCodeAt(i);
          all |= c;
          k0 |= c << shift;
        }
        for (let shift = 0; i < end; i++, shift += 7) {
          const c = text.charCodeAt(i);
          all |= c;
          k1 |= c << shift;
        }
        if (all < 0x80) {
          let c = cache.getShort(k0, k1);
          if (c < 0) {
            c = this.countPiece(text, start, end);
            cache.setShort(k0, k1, c);
          }
          total += c;
          start = end;
          continue;
        }
      }
      if (n <= maxCached) {
        const h = hashUnits(text, start, end);
        let c = cache!.get(text, start, end, h);
        if (c < 0) {
          c = this.countPiece(text, start, end);
          cache!.set(text, start, end, h, c);
        }
        total += c;
      } else {
        total += this.countPiece(text, start, end);
      }
      start = end;
    }
    return total;
  }

  /** Token ids of `text` (tiktoken `encode_ordinary`). Not cached: used by tests and tools. */
  encode(text: string): number[] {
    const out: number[] = [];
    let start = 0;
    while (start < text.length) {
      const end = this.pieceEnd(text, start);
      const bytes = utf8(text, start, end);
      const n = utf8Length;
      const r = this.table.rank(bytes, 0, n);
      if (r >= 0) out.push(r);
      else bytePairMerge(this.table, bytes, n, out);
      start = end;
    }
    return out;
  }

  /** Text of token ids (invalid UTF-8 sequences become U+FFFD). */
  decode(ids: readonly number[]): string {
    return Buffer.concat(ids.map((id) => this.table.bytesOf(id))).toString("utf8");
  }
}

const loaded = new Map<EncodingName, BpeEncoding>();

/** The shared instance of an encoding (tables built on first use: ~0.5 s for o200k_base). */
export function getEncoding(name: EncodingName): BpeEncoding {
  let e = loaded.get(name);
  if (!e) {
    e = new BpeEncoding(loadRankTable(name));
    loaded.set(name, e);
  }
  return e;
}

export type { EncodingName };

/**
 * Splitting a long text so that its parts can be counted apart (on several threads) and their
 * counts add up to the whole text's. Parts end where every encoding's pre-tokenizer starts a new
 * piece: before a space that follows an ASCII letter and precedes a lowercase ASCII one ("… word
 * word …"). The letters before the space end their piece, since no piece pattern takes a space
 * after letters; the space opens the next word's piece (" word") in o200k_base and cl100k_base
 * alike; and no piece runs across it, since the only pieces that hold a space hold it first or are
 * all whitespace. BPE then never merges across pieces, so each part counts as it would in place.
 */

/** How far past its even share a part may run looking for a boundary before the split gives up on it. */
const SEARCH_CHARS = 64 * 1024;

const isAsciiLetter = (c: number) => (c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a;
const isAsciiLower = (c: number) => c >= 0x61 && c <= 0x7a;

/**
 * `text` in at most `parts` consecutive parts of at least `minPartChars` (roughly even), each
 * ending at a piece boundary; one part when the text is too short or has no boundary near the cuts.
 * The parts joined are `text`.
 */
export function splitAtPieceBoundaries(text: string, parts: number, minPartChars: number): string[] {
  const n = Math.min(Math.floor(parts), Math.floor(text.length / Math.max(1, minPartChars)));
  if (n <= 1) return [text];
  const out: string[] = [];
  let start = 0;
  for (let k = 1; k < n; k++) {
    const at = boundaryFrom(text, Math.max(start + 1, Math.round((text.length * k) / n)));
    if (at < 0) continue;
    out.push(text.slice(start, at));
    start = at;
  }
  out.push(text.slice(start));
  return out;
}

/** The first boundary at or after `from` within SEARCH_CHARS, or -1. */
function boundaryFrom(text: string, from: number): number {
  const end = Math.min(text.length - 1, from + SEARCH_CHARS);
  for (let i = Math.max(1, from); i < end; i++) {
    if (text.charCodeAt(i) === 0x20 && isAsciiLetter(text.charCodeAt(i - 1)) && isAsciiLower(text.charCodeAt(i + 1))) return i;
  }
  return -1;
}

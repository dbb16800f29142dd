/**
 * The pre-tokenizer's pieces on ASCII text, without the regex.
 *
 * `asciiPieceEnd` returns where the piece that starts at `start` ends, exactly as the encoding's
 * pattern (encoding.ts PATTERNS) would match it, as long as every character the pattern has to
 * look at is ASCII; when it would have to classify a non-ASCII character (a letter? a digit? white
 * space? `ſ` after an apostrophe?) it returns -1 and the caller runs the regex. On ASCII the
 * Unicode classes are small: \p{Lu} = A–Z, \p{Ll} = a–z, \p{L} = both, \p{N} = 0–9, White_Space =
 * \t \n \v \f \r and space; \p{Lt}, \p{Lm}, \p{Lo} and \p{M} have no ASCII members.
 *
 * The alternatives are tried in the pattern's order with the same backtracking outcome:
 *   o200k_base                                           cl100k_base
 *   1 [^\r\n L N]? [Lu]* [Ll]+ contraction?              1 contraction
 *   2 [^\r\n L N]? [Lu]+ [Ll]* contraction?              2 [^\r\n L N]? L+
 *   3 N{1,3}                                             3 N{1,3}
 *   4 " "? [^\s L N]+ [\r\n/]*                           4 " "? [^\s L N]+ [\r\n]*
 *   5 \s*[\r\n]+   6 \s+(?!\S)   7 \s+                   5–7 the same
 * where contraction = '(s|t|re|ve|m|ll|d), case-insensitive with `ſ` folding to s. On whitespace, 5 ends after the run's last \r or \n; otherwise 6 leaves
 * the run's last character for the next piece unless the run ends the text; 7 is a lone character.
 */
import type { EncodingName } from "./ranks.js";

const LOWER = 1;
const UPPER = 2;
const DIGIT = 4;
const SPACE = 8; // White_Space other than \r \n
const NEWLINE = 16; // \r \n
const PUNCT = 32; // neither white space, letter nor digit
const LETTER = LOWER | UPPER;
const WHITE = SPACE | NEWLINE;
/** Class of a character at the end of the text: nothing matches it. */
const END = 0;
/** Not ASCII: the caller falls back to the regex. */
const OTHER = 64;

const CLASS = new Uint8Array(128);
for (let c = 0; c < 128; c++) {
  if (c >= 0x61 && c <= 0x7a) CLASS[c] = LOWER;
  else if (c >= 0x41 && c <= 0x5a) CLASS[c] = UPPER;
  else if (c >= 0x30 && c <= 0x39) CLASS[c] = DIGIT;
  else if (c === 0x0a || c === 0x0d) CLASS[c] = NEWLINE;
  else if ((c >= 0x09 && c <= 0x0d) || c === 0x20) CLASS[c] = SPACE;
  else CLASS[c] = PUNCT;
}

function classAt(text: string, i: number): number {
  if (i >= text.length) return END;
  const c = text.charCodeAt(i);
  return c < 128 ? CLASS[c]! : OTHER;
}

/** Length of the contraction at text[i] (an apostrophe), 0 if none. */
function contraction(text: string, i: number): number {
  if (i + 1 >= text.length) return 0;
  const raw = text.charCodeAt(i + 1);
  if (raw >= 128) return raw === 0x17f ? 2 : 0; // 'ſ (long s) folds to 's; nothing else non-ASCII
  const c1 = raw | 0x20; // lower case of an ASCII letter; no other ASCII character lands on one
  if (c1 === 0x73 || c1 === 0x74 || c1 === 0x6d || c1 === 0x64) return 2; // 's 't 'm 'd
  if (i + 2 >= text.length) return 0;
  const c2 = text.charCodeAt(i + 2) | 0x20;
  if ((c1 === 0x72 || c1 === 0x76) && c2 === 0x65) return 3; // 're 've
  if (c1 === 0x6c && c2 === 0x6c) return 3; // 'll
  return 0;
}

/** Index after the run of characters of class `mask` from i, or -1 if the run meets non-ASCII. */
function runEnd(text: string, i: number, mask: number): number {
  const n = text.length;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128) return -1;
    if ((CLASS[c]! & mask) === 0) return i;
  }
  return n;
}

/** Whitespace alternatives (5–7) for a run starting at `start`; -1 if the run meets non-ASCII. */
function whitespaceEnd(text: string, start: number): number {
  const n = text.length;
  let lastNewline = -1;
  let i = start;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128) return -1;
    const k = CLASS[c]!;
    if ((k & WHITE) === 0) break;
    if (k === NEWLINE) lastNewline = i;
  }
  if (lastNewline >= 0) return lastNewline + 1;
  if (i === n || i - start === 1) return i;
  return i - 1;
}

/** Punctuation alternative (4): optional space, punctuation run, then any of `tail`'s characters. */
function punctEnd(text: string, i: number, slashToo: boolean): number {
  i = runEnd(text, i, PUNCT);
  if (i < 0) return -1;
  const n = text.length;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c !== 0x0a && c !== 0x0d && !(slashToo && c === 0x2f)) break;
  }
  return i;
}

/** End of a run of one to three digits from `start` (a digit), or -1 when a non-ASCII character follows within it. */
function digitsEnd(text: string, start: number): number {
  const n = Math.min(text.length, start + 3);
  let i = start + 1;
  for (; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c >= 128) return -1;
    if (CLASS[c] !== DIGIT) break;
  }
  return i;
}

function o200k(text: string, start: number): number {
  const k0 = classAt(text, start);
  let i = start;
  let k = k0;
  if (k0 & (PUNCT | SPACE)) {
    // optional prefix of alternatives 1–2
    k = classAt(text, start + 1);
    if (k === OTHER) return -1;
    if (k & LETTER) i = start + 1;
  }
  if (k & LETTER) {
    const upperEnd = runEnd(text, i, UPPER);
    if (upperEnd < 0) return -1;
    let end = runEnd(text, upperEnd, LOWER);
    if (end < 0) return -1;
    // alternative 1 when lower-case letters follow the upper-case run, else 2 takes the run alone
    if (end < text.length && text.charCodeAt(end) === 0x27) end += contraction(text, end);
    return end;
  }
  if (k0 === DIGIT) return digitsEnd(text, start);
  if (k0 === PUNCT) return punctEnd(text, start, true);
  if (k0 === OTHER || k0 === END) return -1;
  // white space; a space before punctuation belongs to alternative 4
  if (text.charCodeAt(start) === 0x20 && k === PUNCT) return punctEnd(text, start + 1, true);
  return whitespaceEnd(text, start);
}

function cl100k(text: string, start: number): number {
  const k0 = classAt(text, start);
  if (k0 === OTHER || k0 === END) return -1;
  if (text.charCodeAt(start) === 0x27) {
    const c = contraction(text, start);
    if (c > 0) return start + c;
  }
  let i = start;
  let k = k0;
  if (k0 & (PUNCT | SPACE)) {
    k = classAt(text, start + 1);
    if (k === OTHER) return -1;
    if (k & LETTER) i = start + 1;
  }
  if (k & LETTER) return runEnd(text, i, LETTER);
  if (k0 === DIGIT) return digitsEnd(text, start);
  if (k0 === PUNCT) return punctEnd(text, start, false);
  if (text.charCodeAt(start) === 0x20 && k === PUNCT) return punctEnd(text, start + 1, false);
  return whitespaceEnd(text, start);
}

/** Per encoding: end of the piece at `start` (< text.length), or -1 when the regex has to decide. */
export const asciiPieceEnd: Readonly<Record<EncodingName, (text: string, start: number) => number>> = {
  o200k_base: o200k,
  cl100k_base: cl100k,
};

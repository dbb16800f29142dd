// Cutting a long input into windows the model handles well: whole sentences packed greedily up to
// WINDOW_CHARS; a sentence longer than that is cut at the last whitespace before the limit (or,
// in a run with no whitespace, at the limit, never inside a surrogate pair).
import { WINDOW_CHARS } from "./constants.js";

// Made on first use: building a segmenter loads ICU's break rules (~14 ms), which a server start
// should not wait for.
let sentences: Intl.Segmenter | undefined;

/** The windows of `text`, in order; their concatenation is `text` minus whitespace-only windows. */
export function splitIntoWindows(text: string, maxChars = WINDOW_CHARS): string[] {
  if (text.length <= maxChars) return [text];
  const windows: string[] = [];
  let current = "";
  const flush = () => {
    if (current.trim() !== "") windows.push(current);
    current = "";
  };
  for (const { segment } of (sentences ??= new Intl.Segmenter("en", { granularity: "sentence" })).segment(text)) {
    for (const piece of segment.length <= maxChars ? [segment] : cutLong(segment, maxChars)) {
      if (current.length + piece.length > maxChars) flush();
      current += piece;
    }
  }
  flush();
  return windows.length > 0 ? windows : [text.slice(0, maxChars)];
}

/** A sentence longer than maxChars as pieces of at most maxChars. */
function cutLong(s: string, maxChars: number): string[] {
  const out: string[] = [];
  let start = 0;
  while (s.length - start > maxChars) {
    let end = start + maxChars;
    // The last whitespace in the second half of the window, so that words stay whole.
    const space = lastWhitespace(s, start + (maxChars >> 1), end);
    if (space > start) end = space + 1;
    else if (isHighSurrogate(s.charCodeAt(end - 1))) end--;
    out.push(s.slice(start, end));
    start = end;
  }
  out.push(s.slice(start));
  return out;
}

function lastWhitespace(s: string, from: number, to: number): number {
  for (let i = to - 1; i >= from; i--) {
    const c = s.charCodeAt(i);
    if (c === 32 || c === 10 || c === 9 || c === 13 || c === 0x3000 || c === 0xa0) return i;
  }
  return -1;
}

const isHighSurrogate = (c: number) => c >= 0xd800 && c <= 0xdbff;

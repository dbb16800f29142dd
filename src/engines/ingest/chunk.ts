// Text to chunks of at most `maxTokens` tokens, consecutive chunks sharing up to `overlapTokens`
// (spec 2.1: `auto` is 800 / 400; `static` lets the caller choose, 100–4096, overlap ≤ half).
//
// Two passes. Segmentation cuts the text into small units, each ending at a boundary of some
// strength: a paragraph (a blank line) is stronger than a sentence or a line, which is stronger
// than a word, which is stronger than a token (a "word" too long for a chunk, such as base64).
// Packing then fills each chunk with whole units and, among the places it could end, picks the
// strongest boundary in its second half — so chunks break on paragraphs, then sentences, and on
// words or tokens only inside text that has nothing better. The next chunk starts as far back
// as the overlap allows.
//
// Token counts come from the project's tokenizer (cl100k_base, the encoding of the platform's
// embedding models). Each unit is counted once; a chunk's count is the sum of its units. Units
// are cut where tiktoken's pre-tokenizer cuts too (a sentence's trailing space goes with the
// next sentence, a paragraph's newlines with the paragraph they end), so that sum is the count of
// the chunk's text; the tests hold it to that.
//
// Segmentation is the expensive pass (it tokenizes everything once), so it runs in slices of a few
// milliseconds and yields the event loop in between: a large file never delays other requests.
import { getEncoding, type EncodingName } from "../tokenizer/index.js";
import { IngestError } from "./errors.js";

export interface ChunkingOptions {
  maxTokens: number;
  overlapTokens: number;
}

/** The `auto` strategy (spec 2.1). */
export const AUTO_CHUNKING: ChunkingOptions = { maxTokens: 800, overlapTokens: 400 };
export const MIN_CHUNK_TOKENS = 100;
export const MAX_CHUNK_TOKENS = 4096;
/** Spec 8: files of up to 2 million tokens. */
export const MAX_FILE_TOKENS = 2_000_000;

export interface Chunk {
  /** 0, 1, 2, ... in text order. */
  index: number;
  text: string;
  tokens: number;
  /** Where the chunk's text lies in the extracted text: [start, end) in UTF-16 units. */
  start: number;
  end: number;
}

export interface ChunkTextOptions {
  encoding?: EncodingName;
  /** Text over this many tokens is refused as invalid_file (default 2,000,000). */
  maxTotalTokens?: number;
  signal?: AbortSignal;
  /** How long a slice of work may hold the event loop (default 4 ms). */
  sliceMs?: number;
}

/** Boundary strengths: the break after a unit. */
const TOKEN = 0;
const WORD = 1;
const SENTENCE = 2; // also a line break
const PARAGRAPH = 3;

/** The units of a text, as parallel arrays (hundreds of thousands of them for a large file). */
class Units {
  start: number[] = [];
  end: number[] = [];
  tokens: number[] = [];
  /** Strength of the boundary after the unit. */
  strength: number[] = [];
  total = 0;

  push(start: number, end: number, tokens: number, strength: number) {
    this.start.push(start);
    this.end.push(end);
    this.tokens.push(tokens);
    this.strength.push(strength);
    this.total += tokens;
  }

  get length() {
    return this.start.length;
  }
}

// A paragraph ends after a blank line (the whole run of whitespace belongs to it).
const PARAGRAPH_END = /\n[ \t]*\n\s*/g;
// A sentence ends after its punctuation (and closing quotes or brackets) when whitespace follows;
// CJK full stops need no space. The whitespace itself starts the next sentence.
const SENTENCE_END = /[.!?…]+["'”’)\]]*(?=[ \t])|[。！？]+/g;
// A word with the whitespace before it.
const WORD_RE = /\s*\S+|\s+/g;
// These are templates: each segment() run uses its own copies. A /g expression keeps its position
// in `lastIndex`, and chunkText calls interleave at their yields, so shared instances let one call
// move another's position (the same text would then chunk differently, run to run).
/** Tokens per piece when a single "word" is too long for a chunk. */
const TOKEN_PIECE = 64;

/** Splits `text` into chunks. Throws IngestError (invalid_file) past `maxTotalTokens`. */
export async function chunkText(text: string, chunking: ChunkingOptions, opts: ChunkTextOptions = {}): Promise<Chunk[]> {
  checkChunking(chunking);
  const units = new Units();
  const sliceMs = opts.sliceMs ?? 4;
  let sliceStart = performance.now();
  const maxTotal = opts.maxTotalTokens ?? MAX_FILE_TOKENS;
  const tooLong = () => new IngestError("invalid_file", `The file has more than ${maxTotal.toLocaleString("en-US")} tokens of text.`);
  for (const _ of segment(text, chunking.maxTokens, units, opts.encoding ?? "cl100k_base")) {
    if (units.total > maxTotal) throw tooLong();
    if (performance.now() - sliceStart >= sliceMs) {
      await new Promise<void>((resolve) => setImmediate(resolve));
      opts.signal?.throwIfAborted();
      sliceStart = performance.now();
    }
  }
  if (units.total > maxTotal) throw tooLong();
  return pack(text, units, chunking);
}

/** Throws RangeError for a strategy outside spec 2.1 (the service validates requests before this). */
export function checkChunking({ maxTokens, overlapTokens }: ChunkingOptions): void {
  if (!Number.isInteger(maxTokens) || maxTokens < MIN_CHUNK_TOKENS || maxTokens > MAX_CHUNK_TOKENS)
    throw new RangeError(`maxTokens must be an integer from ${MIN_CHUNK_TOKENS} to ${MAX_CHUNK_TOKENS}, got ${maxTokens}`);
  if (!Number.isInteger(overlapTokens) || overlapTokens < 0 || overlapTokens > maxTokens / 2)
    throw new RangeError(`overlapTokens must be an integer from 0 to half of maxTokens, got ${overlapTokens}`);
}

/**
 * Fills `units` with the text's units, in order; yields every so often so the caller can pause.
 * Units are at most `maxTokens` long.
 */
function* segment(text: string, maxTokens: number, units: Units, encodingName: EncodingName): Generator<void> {
  const enc = getEncoding(encodingName);
  const paragraphEnd = new RegExp(PARAGRAPH_END);
  const sentenceEnd = new RegExp(SENTENCE_END);
  const wordRe = new RegExp(WORD_RE);
  const count = (a: number, b: number) => enc.countTokens(text.slice(a, b));
  // Pauses come every few hundred units, wherever they are made: a file that is one huge line or
  // one endless "word" yields as often as ordinary prose.
  let sinceYield = 0;
  const PAUSE_EVERY = 256;

  // A run of text that must be cut finer: into words, and a too-long word into token pieces.
  function* words(a: number, b: number, strength: number): Generator<void> {
    const run = text.slice(a, b);
    wordRe.lastIndex = 0;
    for (let m = wordRe.exec(run); m; m = wordRe.exec(run)) {
      const ws = a + m.index;
      const we = ws + m[0].length;
      const boundary = we >= b ? strength : WORD;
      const n = count(ws, we);
      if (n <= maxTokens) units.push(ws, we, n, boundary);
      else yield* tokenPieces(ws, we, boundary);
      if (++sinceYield >= PAUSE_EVERY) {
        sinceYield = 0;
        yield;
      }
    }
  }

  // A single word longer than a chunk: pieces of TOKEN_PIECE tokens, cut between characters.
  function* tokenPieces(a: number, b: number, strength: number): Generator<void> {
    const word = text.slice(a, b);
    const bytes = Buffer.from(word, "utf8");
    const ids = enc.encode(word);
    const tokenEnd: number[] = []; // byte offset where each token ends
    for (let k = 0, off = 0; k < ids.length; k++) tokenEnd.push((off += enc.table.bytesOf(ids[k]!).length));
    let byte = 0;
    let char = a;
    for (let i = 0; i < ids.length; ) {
      let j = Math.min(ids.length, i + TOKEN_PIECE);
      let end = tokenEnd[j - 1]!;
      // A token may end inside a multi-byte character: the piece then takes the rest of it.
      while (end < bytes.length && (bytes[end]! & 0xc0) === 0x80) end++;
      while (j < ids.length && tokenEnd[j]! <= end) j++;
      const piece = bytes.subarray(byte, end).toString("utf8");
      units.push(char, char + piece.length, enc.countTokens(piece), end >= bytes.length ? strength : TOKEN);
      char += piece.length;
      byte = end;
      i = j;
      if (++sinceYield >= PAUSE_EVERY) {
        sinceYield = 0;
        yield;
      }
    }
  }

  // A sentence or line: one unit if it fits, else words. A run far longer than any chunk (no
  // token is 8 characters on average) goes to words without being counted whole first.
  function* sentence(a: number, b: number, strength: number): Generator<void> {
    if (a >= b) return;
    const n = b - a > maxTokens * 8 ? Infinity : count(a, b);
    if (n <= maxTokens) units.push(a, b, n, strength);
    else yield* words(a, b, strength);
    if (++sinceYield >= PAUSE_EVERY) {
      sinceYield = 0;
      yield;
    }
  }

  // A line: its sentences.
  function* line(a: number, b: number, strength: number): Generator<void> {
    const run = text.slice(a, b);
    sentenceEnd.lastIndex = 0;
    let from = a;
    for (let m = sentenceEnd.exec(run); m; m = sentenceEnd.exec(run)) {
      const end = a + m.index + m[0].length;
      if (end >= b) break;
      yield* sentence(from, end, SENTENCE);
      from = end;
    }
    yield* sentence(from, b, strength);
  }

  // Paragraphs, then their lines.
  let p = 0;
  while (p < text.length) {
    paragraphEnd.lastIndex = p;
    const m = paragraphEnd.exec(text);
    const pEnd = m ? m.index + m[0].length : text.length;
    let l = p;
    while (l < pEnd) {
      const nl = text.indexOf("\n", l);
      let lEnd = nl < 0 || nl >= pEnd ? pEnd : nl + 1;
      // A run of line breaks is one pre-tokenizer piece: it stays with the line it ends.
      while (lEnd < pEnd && (text.charCodeAt(lEnd) === 10 || text.charCodeAt(lEnd) === 13)) lEnd++;
      yield* line(l, lEnd, lEnd === pEnd ? PARAGRAPH : SENTENCE);
      l = lEnd;
    }
    p = pEnd;
  }
}

/** Chunks from units: whole units, ending at the strongest boundary in the second half. */
function pack(text: string, units: Units, { maxTokens, overlapTokens }: ChunkingOptions): Chunk[] {
  const n = units.length;
  const before = new Array<number>(n + 1); // before[i]: tokens of the units before unit i
  before[0] = 0;
  for (let i = 0; i < n; i++) before[i + 1] = before[i]! + units.tokens[i]!;
  // A chunk that ends early at a strong boundary still moves at least half of its step forward.
  const minFill = overlapTokens + (maxTokens - overlapTokens) / 2;
  const chunks: Chunk[] = [];
  let s = 0;
  while (s < n) {
    let e = s + 1;
    while (e < n && before[e + 1]! - before[s]! <= maxTokens) e++;
    if (e < n) {
      let best = e;
      for (let k = e - 1; k > s && before[k]! - before[s]! >= minFill; k--) if (units.strength[k - 1]! > units.strength[best - 1]!) best = k;
      e = best;
    }
    const chunk = makeChunk(text, units, s, e, before[e]! - before[s]!, chunks.length);
    if (chunk) chunks.push(chunk);
    if (e >= n) break;
    let next = e;
    while (next - 1 > s && before[e]! - before[next - 1]! <= overlapTokens) next--;
    s = next;
  }
  return chunks;
}

function makeChunk(text: string, units: Units, s: number, e: number, tokens: number, index: number): Chunk | undefined {
  let start = units.start[s]!;
  let end = units.end[e - 1]!;
  // Whitespace at the edges is not content (a unit's leading space, a paragraph's trailing newlines).
  while (start < end && isSpace(text.charCodeAt(start))) start++;
  while (end > start && isSpace(text.charCodeAt(end - 1))) end--;
  if (start === end) return undefined;
  return { index, text: text.slice(start, end), tokens, start, end };
}

function isSpace(c: number): boolean {
  return c === 32 || c === 10 || c === 9 || c === 13 || c === 12 || c === 11 || c === 0xa0 || c === 0x3000;
}

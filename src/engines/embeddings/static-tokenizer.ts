// The encoder's sentencepiece tokenization (unigram pieces, best total log-probability, found by
// Viterbi over a trie), in linear time. The package's own Tokenizer copies the rest of the input
// at every position (quadratic: 20 s for 50 K characters) and builds objects per match; this one
// walks a trie of code points and keeps two arrays. It picks the same pieces: a character no
// piece starts with is the unknown piece (id 0, score 0, runs of them merged), and among equal
// scores the later candidate wins, as there. test/engines/embeddings/static-model.test.ts
// compares the two.
//
// No piece has "▁" anywhere but at its start, so a piece never spans a word boundary and the best
// split of a text is the best split of each of its words ("▁" + the characters up to the next
// space) in turn. Words repeat (a megabyte of prose has a few thousand distinct ones), so each
// word's pieces are found once and kept: this makes tokenizing ~10× faster on prose.
import type { Vocabulary } from "./static-table.js";

const SEPARATOR = "\u2581";
/** <unk>, <s>, </s> and three extra ids: never produced from text. */
const RESERVED_PIECES = 6;
/** Words kept with their pieces; past this many the cache starts again (a bounded memory). */
const CACHED_WORDS = 100_000;
/** Longer "words" (base64, minified code) are split every time rather than kept. */
const CACHED_WORD_CHARS = 64;

interface TrieNode {
  children: Map<number, TrieNode>;
  /** The piece ending here, or -1. */
  id: number;
}

export class PieceTokenizer {
  private readonly root: TrieNode = { children: new Map(), id: -1 };
  private readonly scores: Float64Array;
  private readonly lengths: Int32Array;
  private readonly words = new Map<string, readonly number[]>();

  constructor(vocabulary: Vocabulary) {
    this.scores = new Float64Array(vocabulary.length);
    this.lengths = new Int32Array(vocabulary.length);
    for (let id = RESERVED_PIECES; id < vocabulary.length; id++) {
      const [piece, score] = vocabulary[id]!;
      let node = this.root;
      let length = 0;
      for (const ch of piece) {
        const cp = ch.codePointAt(0)!;
        let next = node.children.get(cp);
        if (!next) node.children.set(cp, (next = { children: new Map(), id: -1 }));
        node = next;
        length++;
      }
      node.id = id;
      this.scores[id] = score;
      this.lengths[id] = length;
    }
  }

  /** The piece ids of `text` (NFKC, spaces as "▁", a leading "▁"), in order. */
  encode(text: string): number[] {
    const out: number[] = [];
    this.forEachWord(text, (ids) => {
      for (let k = 0; k < ids.length; k++) out.push(ids[k]!);
    });
    return out;
  }

  /** Calls `visit` with the piece ids of each word of `text` in order (the arrays are shared: read only). */
  forEachWord(text: string, visit: (ids: readonly number[]) => void): void {
    const normalized = text.normalize("NFKC");
    if (normalized.length === 0) return;
    for (let from = 0; ; ) {
      const space = normalized.indexOf(" ", from);
      const word = normalized.slice(from, space < 0 ? normalized.length : space);
      let ids = this.words.get(word);
      if (!ids) {
        ids = this.split(SEPARATOR + word);
        if (word.length <= CACHED_WORD_CHARS) {
          if (this.words.size >= CACHED_WORDS) this.words.clear();
          this.words.set(word, ids);
        }
      }
      visit(ids);
      if (space < 0) return;
      from = space + 1;
    }
  }

  /** The best split of one word (Viterbi over the trie). */
  private split(word: string): number[] {
    const symbols: number[] = [];
    for (const ch of word) symbols.push(ch.codePointAt(0)!);
    const n = symbols.length;
    // best[e]: best score of symbols[0, e); piece[e], start[e]: the last piece of that split.
    const best = new Float64Array(n + 1);
    const piece = new Int32Array(n + 1);
    const start = new Int32Array(n + 1);
    const seen = new Uint8Array(n + 1);
    for (let i = 0; i < n; i++) {
      let node = this.root.children.get(symbols[i]!);
      let matched = false;
      for (let k = i; node; ) {
        k++;
        if (node.id >= 0) {
          matched = true;
          this.offer(best, piece, start, seen, i, k, node.id, this.scores[node.id]!);
        }
        node = k < n ? node.children.get(symbols[k]!) : undefined;
      }
      if (!matched) this.offer(best, piece, start, seen, i, i + 1, 0, 0);
    }
    const out: number[] = [];
    for (let e = n; e > 0; e = start[e]!) out.push(piece[e]!);
    out.reverse();
    // Runs of unknown characters are one unknown piece.
    return out.filter((id, k) => !(id === 0 && k > 0 && out[k - 1] === 0));
  }

  private offer(best: Float64Array, piece: Int32Array, start: Int32Array, seen: Uint8Array, from: number, to: number, id: number, score: number): void {
    const total = score + best[from]!;
    if (!seen[to] || total >= best[to]!) {
      seen[to] = 1;
      best[to] = total;
      piece[to] = id;
      start[to] = from;
    }
  }
}

/**
 * splitAtPieceBoundaries (src/engines/tokenizer/split.ts): the parts of a text count, added up,
 * exactly what the whole counts, in both encodings, by this engine and by the reference tiktoken
 * (the WASM build of OpenAI's Rust core, whose regex is the definition of a piece).
 */
import { afterAll, describe, expect, it } from "vitest";
import { get_encoding as wasmTiktoken } from "tiktoken";
import { getEncoding, splitAtPieceBoundaries, type EncodingName } from "../../../src/engines/tokenizer/index.js";

/** Text with every kind of piece around spaces: words in any case, contractions, numbers, punctuation, unicode, code, runs of spaces and newlines. */
function mixed(chars: number, seed: number): string {
  const words = [
    "the", "Platform", "COUNTS", "tokens", "naïve", "café", "1234", "56", "😀", "function(x) {", "return x;", "}", "—", "日本語", "\n\n", "   ", "\t",
    "don't", "HTTP/1.1", "it's", "We'll", "x", "a", "Ünïcödé", "ab12cd", ".", ",", "?!", "'s", "e.g.", "  \n", "https://example.com/a?b=c", "ÀÉÎ", "İstanbul",
  ];
  let s = "";
  let r = seed;
  while (s.length < chars) {
    r = (r * 1103515245 + 12345) & 0x7fffffff;
    s += words[r % words.length] + (r % 7 === 0 ? "" : " ");
  }
  return s;
}

const reference = { o200k_base: wasmTiktoken("o200k_base"), cl100k_base: wasmTiktoken("cl100k_base") };
afterAll(() => {
  for (const e of Object.values(reference)) e.free();
});
const referenceCount = (encoding: EncodingName, text: string) => reference[encoding].encode_ordinary(text).length;

describe("splitAtPieceBoundaries", () => {
  for (const encoding of ["o200k_base", "cl100k_base"] as const) {
    it(`${encoding}: at every cut it makes, the parts count what the whole counts (this engine and tiktoken)`, () => {
      const enc = getEncoding(encoding);
      for (const seed of [1, 2, 3]) {
        const text = mixed(20_000, seed);
        const parts = splitAtPieceBoundaries(text, 200, 50);
        expect(parts.length).toBeGreaterThan(100);
        expect(parts.join("")).toBe(text);
        expect(parts.every((p) => p.length > 0)).toBe(true);
        const whole = enc.countTokens(text);
        expect(whole).toBe(referenceCount(encoding, text));
        expect(parts.reduce((n, p) => n + enc.countTokens(p), 0)).toBe(whole);
        expect(parts.reduce((n, p) => n + referenceCount(encoding, p), 0)).toBe(whole);
      }
    });
  }

  it("a long text splits into the parts asked for, roughly even", () => {
    const text = mixed(1_000_000, 9);
    const parts = splitAtPieceBoundaries(text, 4, 128 * 1024);
    expect(parts).toHaveLength(4);
    for (const p of parts) expect(Math.abs(p.length - text.length / 4)).toBeLessThan(1000);
    expect(parts.reduce((n, p) => n + getEncoding("o200k_base").countTokens(p), 0)).toBe(getEncoding("o200k_base").countTokens(text));
  });

  it("no more parts than the text holds parts of the least size; one part when none fits", () => {
    const text = mixed(300_000, 4);
    expect(splitAtPieceBoundaries(text, 4, 128 * 1024)).toHaveLength(2);
    expect(splitAtPieceBoundaries(text, 4, 400_000)).toEqual([text]);
    expect(splitAtPieceBoundaries(text, 1, 10)).toEqual([text]);
    expect(splitAtPieceBoundaries("", 4, 1)).toEqual([""]);
  });

  it("a text without a boundary (no letter, space, lowercase letter) stays whole", () => {
    for (const text of ["x".repeat(300_000), "1234 ".repeat(60_000), "A B C ".repeat(50_000), "日本語 ".repeat(80_000)]) {
      expect(splitAtPieceBoundaries(text, 4, 1000)).toEqual([text]);
    }
  });
});

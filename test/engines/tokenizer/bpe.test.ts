/**
 * The BPE engine (src/engines/tokenizer) against two independent tiktoken implementations:
 *   - js-tiktoken (a pure-JS port: different code, regex and merge loop), token for token on a
 *     large generated corpus;
 *   - tiktoken (the WASM build of OpenAI's Rust core, the reference), on the same corpus plus the
 *     characters where the JS ports' `\s` differs from Rust's (U+0085, U+FEFF) and long pieces.
 * Deterministic seed; a few seconds.
 */
import { describe, expect, it } from "vitest";
import { getEncoding as jsTiktoken } from "js-tiktoken";
import { get_encoding as wasmTiktoken } from "tiktoken";
import { asciiPieceEnd } from "../../../src/engines/tokenizer/ascii-pieces.js";
import { PATTERNS } from "../../../src/engines/tokenizer/encoding.js";
import {
  BpeEncoding,
  encodingForModel,
  getEncoding,
  InputTokensError,
  KNOWN_MODELS,
  resolveModel,
  UnknownModelError,
  countTextTokens,
} from "../../../src/engines/tokenizer/index.js";

/** mulberry32 */
function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FRAGMENTS = {
  words: ["the", "The", "THE", "quick", "Brown", "fOX", "jumps", "über", "naïve", "café", "résumé", "straße", "İstanbul", "ǅemal", "ﬁnance", "HTTPServer", "getElementById", "snake_case", "kebab-case", "CamelCaseWord"],
  contractions: ["don't", "I'M", "we've", "they'RE", "it's", "She'll", "you'd", "O'Neil", "'tis", "it'ſ", "DON'T", "rock'n'roll", "’s", "l'été"],
  numbers: ["0", "7", "42", "123", "1234", "12345678", "3.14159", "1,000,000", "٣٤٥", "१२३", "Ⅻ", "½", "²³", "0x1F", "1e-9", "-273.15"],
  punct: [".", ",", "!?", "...", "—", "–", "«»", "“quoted”", "(parens)", "[x]", "{y}", "<tag/>", "&&", "||", "=>", "::", "/**/", "#!", "@@", "%%", "\\", "//", "/*", "*/"],
  spaces: [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r\n\r\n", " \n", "\n ", "  \n  ", "\u00a0", "\u2003", "\u3000", "\u2028", "\v", "\f", "\u200b"],
  scripts: ["こんにちは世界", "お誕生日おめでとう", "中文分词测试", "한국어 텍스트", "Привет, мир", "Ελληνικά", "مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "ภาษาไทย", "Tiếng Việt", "ქართული", "ܐܪܡܝܐ", "ᏣᎳᎩ"],
  marks: ["e\u0301", "a\u0308\u0304", "\u0301\u0301x", "n\u0303o", "क़ि", "\u20dd", "ö\u0332"],
  emoji: ["😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇫🇷", "❤️", "🧑🏿‍💻", "🫠", "✅", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𝟘𝟙𝟚"],
  special: ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|endofprompt|>", "<|im_start|>", "<|im_end|>", "<|start|>", "<| endoftext |>", "<|endoftext"],
  code: [
    "function f(x) {\n  return x * 2;\n}\n",
    "def main():\n    print('hi')\n\n",
    "const a = [1, 2, 3].map((n) => n ** 2);",
    "SELECT * FROM users WHERE id = $1;",
    "if (a != b && c <= d) { x += 1; }",
    "    \tindented\n\t\tmore",
    "https://example.com/path?q=1&r=2#frag",
    "{\"key\": \"value\", \"n\": 12}",
    "#include <stdio.h>\nint main(void){return 0;}",
    "foo/bar/baz.ts",
    "a//b///c\n//\n",
  ],
};
type Kind = keyof typeof FRAGMENTS;
const KINDS = Object.keys(FRAGMENTS) as Kind[];

function randomAscii(r: () => number, n: number): string {
  let s = "";
  for (let i = 0; i < n; i++) s += String.fromCharCode(32 + Math.floor(r() * 95));
  return s;
}

function randomCodePoint(r: () => number): string {
  const ranges: [number, number][] = [
    [0x20, 0x7e], [0xa0, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f],
    [0x3040, 0x30ff], [0x4e00, 0x4fff], [0xac00, 0xacff], [0x2000, 0x206f], [0x1f300, 0x1f64f], [0x1d400, 0x1d4ff],
  ];
  const [lo, hi] = ranges[Math.floor(r() * ranges.length)]!;
  return String.fromCodePoint(lo + Math.floor(r() * (hi - lo + 1)));
}

/** One document: 5–60 random fragments, plus random code points and ASCII noise. */
function doc(r: () => number, longRuns: boolean): string {
  const parts: string[] = [];
  const n = 5 + Math.floor(r() * 55);
  for (let i = 0; i < n; i++) {
    const x = r();
    if (x < 0.08) parts.push(randomAscii(r, 1 + Math.floor(r() * 12)));
    else if (x < 0.14) {
      let s = "";
      for (let k = 0, m = 1 + Math.floor(r() * 6); k < m; k++) s += randomCodePoint(r);
      parts.push(s);
    } else if (longRuns && x < 0.2) {
      // long runs: pieces over 128 bytes take the heap-based merge
      const unit = ["a", " ", "ab", "=", "😀", "\n", "x1", "é", "-"][Math.floor(r() * 9)]!;
      parts.push(unit.repeat(50 + Math.floor(r() * 300)));
    } else {
      const kind = KINDS[Math.floor(r() * KINDS.length)]!;
      const list = FRAGMENTS[kind];
      parts.push(list[Math.floor(r() * list.length)]!);
    }
    const sep = r();
    if (sep < 0.55) parts.push(" ");
    else if (sep < 0.65) parts.push(FRAGMENTS.spaces[Math.floor(r() * FRAGMENTS.spaces.length)]!);
  }
  return parts.join("");
}

function corpus(seed: number, docs: number, longRuns = false): string[] {
  const r = rng(seed);
  return Array.from({ length: docs }, () => doc(r, longRuns));
}

/** Characters where Rust's `\s` (White_Space) and JS's `\s` disagree. */
const JS_WS_DIFF = /[\u0085\ufeff]/;

const ENCODINGS = ["o200k_base", "cl100k_base"] as const;

describe.each(ENCODINGS)("%s BPE engine", (name) => {
  const engine = getEncoding(name);
  const js = jsTiktoken(name);
  const wasm = wasmTiktoken(name);
  const docs = corpus(name === "o200k_base" ? 20240806 : 20230613, 1500);
  // js-tiktoken's merge is quadratic with a large constant: long runs are compared to WASM only
  const longDocs = corpus(name === "o200k_base" ? 4242 : 4343, 150, true);

  it("has the published vocabulary size and special tokens outside it", () => {
    const expected = name === "o200k_base" ? 199998 : 100256;
    expect(engine.table.size).toBe(expected);
    for (const id of Object.values(engine.table.specialTokens)) expect(id).toBeGreaterThanOrEqual(expected);
  });

  it("agrees token for token with js-tiktoken on the generated corpus", () => {
    let compared = 0;
    let bytes = 0;
    for (const text of docs) {
      if (JS_WS_DIFF.test(text)) continue; // js-tiktoken's own divergence, checked against WASM below
      const ours = engine.encode(text);
      const theirs = js.encode(text, [], []);
      if (ours.length !== theirs.length || ours.some((t, i) => t !== theirs[i])) {
        expect({ text, ids: ours }).toEqual({ text, ids: theirs });
      }
      compared++;
      bytes += Buffer.byteLength(text);
    }
    expect(compared).toBeGreaterThan(1400);
    expect(bytes).toBeGreaterThan(250_000);
  });

  it("agrees token for token with the WASM tiktoken (Rust core) on the corpus", () => {
    for (const text of [...docs, ...longDocs]) {
      const ours = engine.encode(text);
      const theirs = Array.from(wasm.encode_ordinary(text));
      if (ours.length !== theirs.length || ours.some((t, i) => t !== theirs[i])) {
        expect({ text, ids: ours }).toEqual({ text, ids: theirs });
      }
    }
  });

  it("counts exactly what it encodes, with the cache warm and cold", () => {
    const cold = new BpeEncoding(engine.table, { cacheEntries: 0 });
    const tiny = new BpeEncoding(engine.table, { cacheEntries: 16, cacheMaxPieceUnits: 4 });
    for (const text of [...docs.slice(0, 300), ...longDocs.slice(0, 50)]) {
      const n = engine.encode(text).length;
      expect(engine.countTokens(text)).toBe(n);
      expect(engine.countTokens(text)).toBe(n); // second pass: cache hits
      expect(cold.countTokens(text)).toBe(n);
      expect(tiny.countTokens(text)).toBe(n); // constant clearing
    }
    const all = docs.join("\n");
    expect(engine.countTokens(all)).toBe(wasm.encode_ordinary(all).length);
  });

  it("counts short ASCII pieces (keyed by their characters) like the reference, NUL and DEL included", () => {
    const e = new BpeEncoding(engine.table, { cacheEntries: 64 }); // 16 short entries: clears often
    const r = rng(name === "o200k_base" ? 21 : 22);
    const chars = ["\u0000", "\u007f", "a", "b", "e", "t", "T", "h", " ", "  ", "x", "y", "=", ";", "(", ")", "0", "\n", "'", "ll"];
    const texts: string[] = [];
    for (let k = 0; k < 3000; k++) {
      let t = "";
      for (let i = 0, n = 1 + Math.floor(r() * 9); i < n; i++) t += chars[Math.floor(r() * chars.length)];
      texts.push(t);
    }
    // the key holds the length: runs of NUL of every length must not collide
    for (let n = 1; n <= 9; n++) texts.push("\u0000".repeat(n), "\u007f".repeat(n), " ".repeat(n), "a".repeat(n));
    for (let pass = 0; pass < 2; pass++) {
      for (const t of texts) {
        const expected = wasm.encode_ordinary(t).length;
        if (e.countTokens(t) !== expected || engine.countTokens(t) !== expected) {
          expect({ t, count: e.countTokens(t), shared: engine.countTokens(t) }).toEqual({ t, count: expected, shared: expected });
        }
      }
    }
    expect(e.cache!.clears).toBeGreaterThan(0);
  });

  it("keeps the piece cache within its bounds", () => {
    const e = new BpeEncoding(engine.table, { cacheEntries: 64 });
    e.countTokens(docs.join(" "));
    const cache = e.cache!;
    expect(cache.size).toBeLessThanOrEqual(64);
    expect(cache.clears).toBeGreaterThan(0);
    expect(cache.byteSize).toBeLessThan(64 * 200);
  });

  it("matches the reference where JS `\\s` and Rust `\\s` differ (U+0085, U+FEFF) and on case-folded contractions", () => {
    const r = rng(7);
    const alphabet = ["\u0085", "\ufeff", " ", "a", "ſ", "'", "s", "S", "\n", "B", "1", ".", "\u00a0", "\t", "ll", "LL", "re"];
    for (let k = 0; k < 3000; k++) {
      let s = "";
      for (let i = 0, n = 1 + Math.floor(r() * 10); i < n; i++) s += alphabet[Math.floor(r() * alphabet.length)];
      expect(engine.encode(s), JSON.stringify(s)).toEqual(Array.from(wasm.encode_ordinary(s)));
    }
  });

  it("splits ASCII without the regex exactly as the regex does, from every position", () => {
    const re = new RegExp(PATTERNS[name], "yu");
    const scan = asciiPieceEnd[name];
    const r = rng(name === "o200k_base" ? 11 : 12);
    // ASCII classes at their edges plus the non-ASCII characters that must send the scan back to
    // the regex: letters, marks, digits, white space and punctuation outside ASCII, and `ſ`
    const alphabet = [
      "a", "z", "A", "Z", "Q", "x", "'", "s", "S", "t", "T", "re", "rE", "Ve", "ll", "lL", "m", "M", "d", "D", "'l", "'r",
      " ", "  ", "   ", "\t", "\n", "\r", "\r\n", "\n\n", "\v", "\f", "0", "1", "22", "333", "9", ".", ",", "!", "/", "//",
      "-", "(", ")", '"', "_", "@", "#", "`", "~", "\\", "[", "{", "\u007f", "\u0000",
      "ſ", "é", "É", "ǅ", "ª", "\u0301", "\u00a0", "\u0085", "\u2028", "\u3000", "\ufeff", "٣", "½", "²", "😀", "—", "’", "\ud800",
    ];
    const texts = [...docs.slice(0, 400), ...longDocs.slice(0, 20)];
    for (let k = 0; k < 6000; k++) {
      let t = "";
      for (let i = 0, n = 1 + Math.floor(r() * 16); i < n; i++) t += alphabet[Math.floor(r() * alphabet.length)];
      texts.push(t);
    }
    texts.push("don't I'M we've they'RE it's She'll you'd 'tis it'ſ rock'n'roll x'", "a".repeat(300) + "B".repeat(300) + "'ll");
    texts.push(" \t \n  \r\n   x   \n\n\t", "1234567 12 3.14 0x1F 1e-9 -273.15", "getElementById HTTPServer snake_case A.B.C");
    let decided = 0;
    for (const text of texts) {
      for (let start = 0; start < text.length; start++) {
        const end = scan(text, start);
        if (end < 0) continue;
        decided++;
        re.lastIndex = start;
        re.test(text);
        if (re.lastIndex !== end) expect({ text, start, end }).toEqual({ text, start, end: re.lastIndex });
      }
    }
    expect(decided).toBeGreaterThan(100_000);
  });

  it("merges very long pieces like the reference (heap path) without quadratic time", () => {
    for (const s of ["a".repeat(5000), " ".repeat(4000) + "x", "=".repeat(3000), "😀".repeat(800), "ab".repeat(2500), "\n".repeat(3000)]) {
      expect(engine.encode(s)).toEqual(Array.from(wasm.encode_ordinary(s)));
      expect(engine.countTokens(s)).toBe(wasm.encode_ordinary(s).length);
    }
    // 1 MB of one letter: one piece; quadratic merging would not finish within the test timeout
    expect(engine.countTokens("z".repeat(1_000_000))).toBeGreaterThan(0);
  });

  it("treats special-token text as ordinary text", () => {
    for (const special of Object.keys(engine.table.specialTokens)) {
      const text = `before ${special} after`;
      const ids = engine.encode(text);
      expect(ids).toEqual(Array.from(wasm.encode_ordinary(text)));
      expect(ids).not.toContain(engine.table.specialTokens[special]);
      expect(engine.countTokens(special)).toBeGreaterThan(1);
      expect(engine.decode(ids)).toBe(text);
    }
  });

  it("round-trips text through encode/decode and handles lone surrogates like TextEncoder", () => {
    for (const text of docs.slice(0, 200)) expect(engine.decode(engine.encode(text))).toBe(text);
    const lone = "a\ud800b \udc00 c";
    expect(engine.encode(lone)).toEqual(Array.from(wasm.encode_ordinary(lone)));
    expect(engine.countTokens("")).toBe(0);
  });
});

describe("cookbook string examples", () => {
  // OpenAI cookbook "How to count tokens with tiktoken", sections 3 and 5.
  it("tiktoken is great! → 6 tokens in cl100k_base with the published ids", () => {
    expect(getEncoding("cl100k_base").encode("tiktoken is great!")).toEqual([83, 1609, 5963, 374, 2294, 0]);
  });
  it("お誕生日おめでとう → 9 tokens in cl100k_base, 8 in o200k_base", () => {
    expect(getEncoding("cl100k_base").encode("お誕生日おめでとう")).toEqual([33334, 45918, 243, 21990, 9080, 33334, 62004, 16556, 78699]);
    expect(getEncoding("o200k_base").encode("お誕生日おめでとう")).toEqual([8930, 9697, 243, 128225, 8930, 17693, 4344, 48669]);
  });
  it("antidisestablishmentarianism → 6 tokens in cl100k_base", () => {
    expect(getEncoding("cl100k_base").encode("antidisestablishmentarianism")).toEqual([519, 85342, 34500, 479, 8997, 2191]);
  });
});

describe("model → encoding table", () => {
  it("maps every known model and its snapshots", () => {
    const o200k = ["gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-chat-latest", "gpt-5-2025-08-07", "gpt-4.1", "gpt-4.1-mini-2025-04-14", "gpt-4.1-nano", "gpt-4.5-preview", "gpt-4o", "gpt-4o-2024-08-06", "gpt-4o-mini", "gpt-4o-mini-2024-07-18", "chatgpt-4o-latest", "o1", "o1-2024-12-17", "o1-mini", "o1-pro", "o3", "o3-mini-2025-01-31", "o3-pro", "o4-mini", "o4-mini-2025-04-16"];
    const cl100k = ["gpt-4", "gpt-4-0613", "gpt-4-0314", "gpt-4-32k-0613", "gpt-4-turbo", "gpt-4-turbo-2024-04-09", "gpt-4-1106-preview", "gpt-3.5-turbo", "gpt-3.5-turbo-0125", "gpt-3.5-turbo-16k-0613", "gpt-3.5-turbo-0301", "text-embedding-3-small", "text-embedding-3-large", "text-embedding-ada-002"];
    for (const m of o200k) expect(encodingForModel(m), m).toBe("o200k_base");
    for (const m of cl100k) expect(encodingForModel(m), m).toBe("cl100k_base");
    for (const m of KNOWN_MODELS) expect(() => resolveModel(m)).not.toThrow();
  });

  it("resolves fine-tuned models to their base's encoding", () => {
    expect(encodingForModel("ft:gpt-4o-mini-2024-07-18:acme:support-bot:9xYzAbC1")).toBe("o200k_base");
    expect(encodingForModel("ft:gpt-3.5-turbo-0613:acme::7p4lURel")).toBe("cl100k_base");
    expect(encodingForModel("ft:gpt-4.1-2025-04-14:acme:x:abc:ckpt-step-100")).toBe("o200k_base");
    expect(resolveModel("ft:gpt-4.1-mini-2025-04-14:acme:x:abc").image).toEqual({ kind: "patch", multiplier: 1.62 });
  });

  it("throws UnknownModelError (404 model_not_found on `model`) for anything else", () => {
    for (const m of ["gpt-6", "gpt-4o-foo", "davinci", "llama-3", "ft:unknown-base:acme:x:y", "ft:", "GPT-4O", "gpt-4o-mini-2024-07-18x"]) {
      let err: unknown;
      try {
        resolveModel(m);
      } catch (e) {
        err = e;
      }
      expect(err, m).toBeInstanceOf(UnknownModelError);
      expect(err).toBeInstanceOf(InputTokensError);
      expect(err).toMatchObject({ status: 404, param: "model", code: "model_not_found", model: m });
    }
    expect(() => countTextTokens("nope", "x")).toThrow(UnknownModelError);
    expect(countTextTokens("gpt-4o", "hello world")).toBe(2);
  });
});

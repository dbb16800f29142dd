// The static model's engine: its tokenizer picks exactly the pieces the encoder package's does,
// and its table, built on first use into the cache directory, is read back on the next start
// and is rebuilt byte for byte from the shipped weights (the derivation is deterministic).
import { readdirSync, readFileSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { StaticEmbedder, STATIC_EMBEDDING_MODEL } from "../../../src/engines/embeddings/index.js";
import { buildTable, readVocabulary } from "../../../src/engines/embeddings/static-table.js";
import { PieceTokenizer } from "../../../src/engines/embeddings/static-tokenizer.js";
import { tempDir } from "../../shared/server.js";

const require = createRequire(import.meta.url);
const cacheDir = tempDir("atrium-static-embed-");
afterAll(() => rmSync(cacheDir, { recursive: true, force: true }));

describe("the static model's tokenizer", () => {
  it("splits text into the same pieces as the encoder package's tokenizer", async () => {
    const vocabulary = await readVocabulary();
    const { EmbeddingsModel } = require("@energetic-ai/embeddings") as { EmbeddingsModel: new (d: object) => { tokenizer: { encode(t: string): number[] } } };
    const theirs = new EmbeddingsModel({ vocabulary, model: null }).tokenizer;
    const ours = new PieceTokenizer(vocabulary);
    const corpus = readFileSync(new URL("../../../bench/data/retrieval/corpus.jsonl", import.meta.url), "utf8")
      .split("\n")
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { text: string }).text);
    const readme = readFileSync(new URL("../../../README.md", import.meta.url), "utf8").split("\n").slice(0, 400);
    const odd = ["", " ", "  two  spaces ", "héllo wörld", "ﬁne ligature (NFKC)", "☃ snow 😀😀 emoji", "日本語のテキスト", "tab\tand\nnewline", "x".repeat(300)];
    for (const text of [...corpus.slice(0, 150), ...readme, ...odd]) expect(ours.encode(text), JSON.stringify(text)).toEqual(theirs.encode(text));
  });
});

describe("the static model's table", () => {
  const texts = ["How do I reset my password?", "Where can I change my password?", "The weather in Paris is sunny"];
  const run = async () => {
    const e = new StaticEmbedder({ cacheDir });
    try {
      const { vectors } = await e.embed(texts, { model: STATIC_EMBEDDING_MODEL });
      return { vectors: vectors.map((v) => Array.from(v)), info: e.modelInfo };
    } finally {
      await e.close();
    }
  };
  const tableFile = () => {
    const files = readdirSync(cacheDir).filter((f) => f.startsWith("static-embed-") && f.endsWith(".f32"));
    expect(files).toHaveLength(1);
    return join(cacheDir, files[0]!);
  };

  it("is built on first use, read from the cache after, and rebuilt byte for byte", async () => {
    const first = await run();
    expect(first.info?.built).toBe(true);
    const built = readFileSync(tableFile());
    expect(built.byteLength).toBe((await readVocabulary()).length * 512 * 4);

    const second = await run();
    expect(second.info?.built).toBe(false);
    expect(second.vectors).toEqual(first.vectors);

    rmSync(tableFile());
    const third = await run();
    expect(third.info?.built).toBe(true);
    expect(readFileSync(tableFile()).equals(built)).toBe(true);
    expect(third.vectors).toEqual(first.vectors);
  }, 300_000);

  it("takes the direction every piece shares out of the table, the same bytes on every build", async () => {
    // A stand-in teacher (the real one takes tens of seconds): each piece's vector is one common
    // direction (component 0) plus a little of its own, as a sentence encoder's piece vectors are.
    const teacher = async (texts: string[]) => {
      const out = new Float32Array(texts.length * 512);
      texts.forEach((t, j) => {
        let h = 2166136261;
        for (const ch of t) h = Math.imul(h ^ ch.codePointAt(0)!, 16777619);
        const row = out.subarray(j * 512, (j + 1) * 512);
        for (let d = 1; d < 512; d++) row[d] = (((h = Math.imul(h ^ d, 16777619)) >>> 0) / 2 ** 32 - 0.5) * 0.1;
        row[0] = 1;
      });
      return out;
    };
    const vocabulary = await readVocabulary();
    const rows = await buildTable(vocabulary, teacher);
    expect(Buffer.from((await buildTable(vocabulary, teacher)).buffer).equals(Buffer.from(rows.buffer))).toBe(true);
    // Without the removal component 0 is ~85 % of a row's length; with it, a small share.
    let along = 0;
    let total = 0;
    for (let i = 6; i < vocabulary.length; i++) {
      along += Math.abs(rows[i * 512]!);
      let sq = 0;
      for (let d = 0; d < 512; d++) sq += rows[i * 512 + d]! ** 2;
      total += Math.sqrt(sq);
    }
    expect(along / total).toBeLessThan(0.1);
  }, 120_000);

  it("refuses another model's name and dimensions out of range, naming the option", async () => {
    const e = new StaticEmbedder();
    try {
      await expect(e.embed(["x"], { model: "atrium-embed-use-lite" })).rejects.toMatchObject({ name: "LocalEmbeddingsError", param: "model" });
      await expect(e.embed(["x"], { model: STATIC_EMBEDDING_MODEL, dimensions: 0 })).rejects.toMatchObject({ name: "LocalEmbeddingsError", param: "dimensions" });
    } finally {
      await e.close();
    }
  });
});

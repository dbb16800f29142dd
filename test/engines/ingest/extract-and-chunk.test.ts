// The ingest engine (src/engines/ingest): text extraction for every format it reads, typed errors
// for what it cannot, and token-bounded chunking that prefers paragraph, then sentence breaks.
import { strToU8, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import {
  AUTO_CHUNKING,
  IngestError,
  checkChunking,
  chunkText,
  detectFormat,
  extractText,
  htmlToText,
  Ingester,
  type Chunk,
} from "../../../src/engines/ingest/index.js";
import { getEncoding } from "../../../src/engines/tokenizer/index.js";
import { pdf } from "../../fixtures/token-inputs.js";

const enc = getEncoding("cl100k_base");
const utf8 = (s: string) => new Uint8Array(Buffer.from(s, "utf8"));

/** A minimal DOCX: the three parts mammoth needs, one <w:p> per paragraph. */
function docx(paragraphs: string[]): Uint8Array {
  const xml = (s: string) => strToU8(`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>${s}`);
  return zipSync({
    "[Content_Types].xml": xml(
      `<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`,
    ),
    "_rels/.rels": xml(
      `<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>`,
    ),
    "word/document.xml": xml(
      `<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>${paragraphs.map((p) => `<w:p><w:r><w:t>${p}</w:t></w:r></w:p>`).join("")}</w:body></w:document>`,
    ),
  });
}

async function ingestError(p: Promise<unknown>): Promise<IngestError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(IngestError);
  return e as IngestError;
}

describe("extraction", () => {
  it("plain text, Markdown, source code and CSV are read as written (CRLF normalised)", async () => {
    expect(await extractText(utf8("line one\r\nline two\n"), "notes.txt")).toEqual({ format: "text", text: "line one\nline two\n" });
    expect(await extractText(utf8("# Title\n\nSome *emphasis*."), "README.md")).toEqual({ format: "markdown", text: "# Title\n\nSome *emphasis*." });
    expect(await extractText(utf8("def f(x):\n    return x * 2\n"), "f.py")).toEqual({ format: "code", text: "def f(x):\n    return x * 2\n" });
    expect(await extractText(utf8("const a = 1;"), "a.ts")).toMatchObject({ format: "code" });
    expect(await extractText(utf8("name,age\nada,36\n"), "people.csv")).toEqual({ format: "csv", text: "name,age\nada,36\n" });
    // No extension: text content is text.
    expect(await extractText(utf8("just words"), "LICENSE")).toEqual({ format: "text", text: "just words" });
  });

  it("decodes UTF-16 with a byte-order mark and falls back to Windows-1252 for other 8-bit text", async () => {
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from("héllo wörld", "utf16le")]);
    expect((await extractText(new Uint8Array(le), "u16.txt")).text).toBe("héllo wörld");
    expect((await extractText(new Uint8Array([0x63, 0x61, 0x66, 0xe9, 0x20, 0x80]), "latin.txt")).text).toBe("café €");
  });

  it("JSON: validated; readable JSON kept as written, minified JSON indented so it has lines", async () => {
    const pretty = '{\n  "a": 1,\n  "b": [true, null]\n}\n';
    expect(await extractText(utf8(pretty), "x.json")).toEqual({ format: "json", text: pretty });
    const minified = JSON.stringify({ items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}` })) });
    const { text } = await extractText(utf8(minified), "min.json");
    expect(JSON.parse(text)).toEqual(JSON.parse(minified));
    expect(text.split("\n").length).toBeGreaterThan(200);
    const e = await ingestError(extractText(utf8("{not json"), "bad.json"));
    expect(e.code).toBe("invalid_file");
    expect(e.message).toContain("bad.json");
  });

  it("HTML: tags stripped, script/style/comments removed, blocks become paragraphs, entities decoded", async () => {
    const html = `<!DOCTYPE html><html><head><title>The Caf&eacute; Guide</title><style>p { color: red }</style>
      <script>var secret = "do not index";</script></head>
      <body><!-- a comment --><h1>Caf&eacute;s &amp; Bars</h1><p>Prices in &euro; &mdash; &#8220;cheap&#x201D;&nbsp;mostly.</p>
      <ul><li>One</li><li>Two &lt;b&gt;</li></ul><p>Line<br>break</p><noscript>enable js</noscript></body></html>`;
    const { format, text } = await extractText(utf8(html), "page.html");
    expect(format).toBe("html");
    expect(text).toBe("The Café Guide\n\nCafés & Bars\n\nPrices in € — “cheap” mostly.\n\nOne\n\nTwo <b>\n\nLine\nbreak");
    for (const gone of ["secret", "color", "comment", "enable js", "<h1>"]) expect(text).not.toContain(gone);
    // An unclosed script runs to the end, as in a browser; unknown entities are left alone.
    expect(htmlToText("<p>keep &bogus; this</p><script>lost")).toBe("keep &bogus; this");
  });

  it("PDF: the text of every page, pages separated by blank lines", async () => {
    const bytes = pdf([
      { w: 612, h: 792, text: "First page about lighthouses." },
      { w: 612, h: 792, text: "Second page about harbours." },
    ]);
    const { format, text } = await extractText(bytes, "doc.pdf");
    expect(format).toBe("pdf");
    expect(text).toBe("First page about lighthouses.\n\nSecond page about harbours.");
    // Magic bytes decide without an extension.
    expect((await extractText(bytes, "scan")).format).toBe("pdf");
  });

  it("DOCX: the paragraphs' text (mammoth), by extension or by content", async () => {
    const bytes = docx(["Quarterly report.", "Revenue grew &amp; costs fell."]);
    expect(await extractText(bytes, "report.docx")).toEqual({ format: "docx", text: "Quarterly report.\n\nRevenue grew & costs fell." });
    expect((await extractText(bytes, "download")).format).toBe("docx");
  });

  it("unsupported kinds are unsupported_file; files that are not what they claim are invalid_file", async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    for (const [bytes, name] of [
      [png, "image.png"],
      [png, "blob"], // binary, no extension
      [zipSync({ "a.txt": strToU8("x") }), "archive"],
      [utf8("PK-ish text"), "slides.pptx"],
    ] as const) {
      expect((await ingestError(extractText(bytes, name))).code, name).toBe("unsupported_file");
      expect(() => detectFormat(name, bytes)).toThrow(IngestError);
    }
    for (const [bytes, name] of [
      [utf8("not a pdf"), "fake.pdf"],
      [utf8("%PDF-1.7\nthis is not really a PDF body"), "corrupt.pdf"],
      [utf8("plain"), "fake.docx"],
      [zipSync({ "word/other.xml": strToU8("<x/>") }), "empty.docx"],
      [new Uint8Array([0x50, 0x4b, 0x03, 0x04, 1, 2, 3]), "truncated.docx"],
      [png, "binary.txt"],
    ] as const) {
      const e = await ingestError(extractText(bytes, name));
      expect(e.code, name).toBe("invalid_file");
      expect(e.message.length).toBeGreaterThan(10);
    }
  });
});

// Prose with paragraphs of several sentences: the shape chunking is tuned for.
const prose = (paragraphs: number, sentences = 6) =>
  Array.from({ length: paragraphs }, (_, p) =>
    Array.from({ length: sentences }, (_, s) => `Paragraph ${p} sentence ${s} says the harbour light number ${p * 10 + s} burns through the long night.`).join(" "),
  ).join("\n\n");

function checkChunks(chunks: Chunk[], max: number) {
  chunks.forEach((c, i) => {
    expect(c.index).toBe(i);
    expect(c.tokens).toBeLessThanOrEqual(max);
    expect(c.tokens).toBeGreaterThan(0);
    expect(c.text).toBe(c.text.trim());
  });
}

describe("chunking", () => {
  it("auto is 800 max / 400 overlap; every chunk within the limit, counts exact, text a slice of the input", async () => {
    expect(AUTO_CHUNKING).toEqual({ maxTokens: 800, overlapTokens: 400 });
    const text = prose(60);
    const chunks = await chunkText(text, AUTO_CHUNKING);
    expect(chunks.length).toBeGreaterThan(3);
    checkChunks(chunks, 800);
    for (const c of chunks) {
      expect(c.tokens).toBe(enc.countTokens(c.text));
      expect(text.slice(c.start, c.end)).toBe(c.text);
    }
    // Consecutive chunks overlap (by at most 400 tokens) and together cover the whole text.
    for (let i = 1; i < chunks.length; i++) {
      expect(chunks[i]!.start).toBeLessThan(chunks[i - 1]!.end);
      expect(chunks[i]!.start).toBeGreaterThan(chunks[i - 1]!.start);
      expect(enc.countTokens(text.slice(chunks[i]!.start, chunks[i - 1]!.end))).toBeLessThanOrEqual(400);
    }
    expect(chunks[0]!.start).toBe(0);
    expect(chunks[chunks.length - 1]!.end).toBe(text.length);
  });

  it("breaks at paragraph ends when one falls in the chunk's second half, else at sentence ends", async () => {
    const text = prose(30);
    const chunks = await chunkText(text, { maxTokens: 200, overlapTokens: 0 });
    checkChunks(chunks, 200);
    // Paragraphs are ~130 tokens: each chunk is whole paragraphs, or ends at a sentence.
    for (const c of chunks.slice(0, -1)) expect(c.text.endsWith("night.")).toBe(true);
    const atParagraph = chunks.slice(0, -1).filter((c) => text.slice(c.end, c.end + 2) === "\n\n").length;
    expect(atParagraph).toBeGreaterThan((chunks.length - 1) / 2);
    // No overlap: the chunks tile the text.
    expect(chunks.map((c) => c.text).join(" ").replace(/\s+/g, " ")).toBe(text.replace(/\s+/g, " "));
  });

  it("static strategies: 100-token chunks with 50 overlap; overlap 0", async () => {
    const text = prose(10);
    const a = await chunkText(text, { maxTokens: 100, overlapTokens: 50 });
    const b = await chunkText(text, { maxTokens: 100, overlapTokens: 0 });
    checkChunks(a, 100);
    checkChunks(b, 100);
    expect(a.length).toBeGreaterThan(b.length);
  });

  it("a sentence longer than a chunk is cut at words; a word longer than a chunk at tokens", async () => {
    const longSentence = Array.from({ length: 400 }, (_, i) => `word${i}`).join(" ");
    const words = await chunkText(longSentence, { maxTokens: 100, overlapTokens: 20 });
    checkChunks(words, 100);
    for (const c of words) expect(c.text).toMatch(/^word\d+( word\d+)*$/); // never inside a word
    expect(words.map((c) => c.text).join(" ")).toContain("word399");

    const blob = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo".repeat(120) + "é😀".repeat(300);
    const pieces = await chunkText(blob, { maxTokens: 100, overlapTokens: 0 });
    checkChunks(pieces, 100);
    // Cut between characters: the pieces put back together are the input, no U+FFFD anywhere.
    expect(pieces.map((c) => c.text).join("")).toBe(blob);
    expect(pieces.some((c) => c.text.includes("\ufffd"))).toBe(false);
  });

  it("lines are boundaries too (code, CSV), and empty or blank text gives no chunks", async () => {
    const csv = ["id,name,city", ...Array.from({ length: 300 }, (_, i) => `${i},name${i},City number ${i}`)].join("\n");
    const chunks = await chunkText(csv, { maxTokens: 120, overlapTokens: 30 });
    checkChunks(chunks, 120);
    for (const c of chunks) expect(c.text.split("\n").every((line) => /^(id,name,city|\d+,name\d+,City number \d+)$/.test(line))).toBe(true);
    expect(await chunkText("", AUTO_CHUNKING)).toEqual([]);
    expect(await chunkText(" \n\n \t\n", AUTO_CHUNKING)).toEqual([]);
  });

  it("refuses text over the file limit as invalid_file, and strategies outside spec 2.1", async () => {
    const e = await ingestError(chunkText(prose(20), AUTO_CHUNKING, { maxTotalTokens: 500 }));
    expect(e.code).toBe("invalid_file");
    expect(() => checkChunking({ maxTokens: 99, overlapTokens: 0 })).toThrow(RangeError);
    expect(() => checkChunking({ maxTokens: 4097, overlapTokens: 0 })).toThrow(RangeError);
    expect(() => checkChunking({ maxTokens: 800, overlapTokens: 401 })).toThrow(RangeError);
    expect(() => checkChunking({ maxTokens: 4096, overlapTokens: 2048 })).not.toThrow();
  });

  it("yields the event loop while chunking a large text; an abort stops it", async () => {
    // Counts the turns of the event loop that happen while `work` runs (a blocked loop gives ~1).
    const turns = async (work: () => Promise<unknown>) => {
      let n = 0;
      let on = true;
      const spin = () => on && (n++, setImmediate(spin));
      setImmediate(spin);
      await work();
      on = false;
      return n;
    };
    const text = prose(3000, 8); // ~2.6 MB
    let chunks: Chunk[] = [];
    // With 1 ms slices, tens of milliseconds of work must give way to the loop well over 10 times.
    expect(await turns(async () => (chunks = await chunkText(text, AUTO_CHUNKING, { sliceMs: 1 })))).toBeGreaterThan(10);
    expect(chunks.length).toBeGreaterThan(100);
    // The same for a text that is one endless line without sentence punctuation.
    const oneLine = Array.from({ length: 150_000 }, (_, i) => `w${i % 977}`).join(" ");
    expect(await turns(async () => checkChunks(await chunkText(oneLine, AUTO_CHUNKING, { sliceMs: 1 }), 800))).toBeGreaterThan(10);

    const ac = new AbortController();
    const p = chunkText(text, AUTO_CHUNKING, { signal: ac.signal });
    ac.abort();
    await expect(p).rejects.toThrow();
  });
});

describe("chunking is a function of the text alone", () => {
  it("concurrent chunkText calls, interleaved at every pause, give each text the chunks it gets alone", async () => {
    const texts = [0, 1, 2].map((k) =>
      Array.from({ length: 80 }, (_, i) => `Part ${k}.${i}. The survey team mapped the river delta again. Sediment moved ${i * 3 + k} metres! Was the old channel closing? Nobody knew.`).join(k % 2 ? "\n\n" : " "),
    );
    const opts = { maxTokens: 120, overlapTokens: 40 };
    const alone = [];
    for (const t of texts) alone.push(await chunkText(t, opts));
    // sliceMs 0: every pause yields to the event loop, so the three calls interleave throughout.
    const together = await Promise.all(texts.map((t) => chunkText(t, opts, { sliceMs: 0 })));
    expect(together).toEqual(alone);
  });
});

describe("Ingester (the worker pool)", () => {
  it("gives chunkText's chunks and the UTF-8 bytes of their texts, counted in the worker", async () => {
    const text = Array.from({ length: 60 }, (_, i) => `Paragraphe ${i}: les élèves ont visité le château fort, où l'on parle d'histoire — 城堡 ${i}.`).join("\n\n");
    const ingester = new Ingester();
    try {
      const r = await ingester.parse(utf8(text), "notes.md", { maxTokens: 100, overlapTokens: 20 });
      const direct = await chunkText(text, { maxTokens: 100, overlapTokens: 20 });
      expect(r.chunks).toEqual(direct);
      expect(r.chunks.length).toBeGreaterThan(3);
      expect(r.chunkBytes).toBe(direct.reduce((n, c) => n + Buffer.byteLength(c.text), 0));
      expect(r.chunkBytes).toBeGreaterThan(direct.reduce((n, c) => n + c.text.length, 0)); // accents and CJK: more bytes than characters
    } finally {
      await ingester.close();
    }
  });
});

// Bytes to searchable text, per format. Text formats are decoded (UTF-8, or UTF-16 with a
// byte-order mark; other 8-bit text is read as Windows-1252 rather than refused); HTML loses its
// markup; PDF text comes from pdf.js (through unpdf), DOCX text from mammoth. Pages and paragraphs
// are separated by blank lines, which is where the chunker prefers to break.
import { detectFormat, type Format } from "./detect.js";
import { IngestError } from "./errors.js";
import { htmlToText, normalizeWhitespace } from "./html.js";

export interface Extracted {
  format: Format;
  text: string;
}

export interface ExtractOptions {
  /** PDFs with more pages are refused as invalid_file (default 10,000). */
  maxPdfPages?: number;
}

export async function extractText(bytes: Uint8Array, filename: string, opts: ExtractOptions = {}): Promise<Extracted> {
  const format = detectFormat(filename, bytes);
  let text: string;
  switch (format) {
    case "pdf":
      text = await pdfText(bytes, filename, opts.maxPdfPages ?? 10_000);
      break;
    case "docx":
      text = await docxText(bytes, filename);
      break;
    case "html":
      text = htmlToText(decodeText(bytes));
      break;
    case "json":
      text = jsonText(decodeText(bytes), filename);
      break;
    default:
      text = decodeText(bytes).replace(/\r\n?/g, "\n");
  }
  return { format, text };
}

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: false });

// Windows-1252's 0x80-0x9F (Node's TextDecoder reads "windows-1252" as ISO-8859-1, whose
// C1 controls live there instead); the other bytes are their own code points.
const CP1252_HIGH = "€\u0081‚ƒ„…†‡ˆ‰Š‹Œ\u008dŽ\u008f\u0090‘’“”•–—˜™š›œ\u009džŸ";

function windows1252(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    const part = bytes.subarray(i, i + 8192);
    const codes = new Array<string>(part.length);
    for (let j = 0; j < part.length; j++) {
      const b = part[j]!;
      codes[j] = b >= 0x80 && b <= 0x9f ? CP1252_HIGH[b - 0x80]! : String.fromCharCode(b);
    }
    out += codes.join("");
  }
  return out;
}

export function decodeText(bytes: Uint8Array): string {
  if (bytes.length >= 2 && bytes[0] === 0xff && bytes[1] === 0xfe) return new TextDecoder("utf-16le").decode(bytes);
  if (bytes.length >= 2 && bytes[0] === 0xfe && bytes[1] === 0xff) return new TextDecoder("utf-16be").decode(bytes);
  try {
    return utf8.decode(bytes);
  } catch {
    return windows1252(bytes);
  }
}

function jsonText(raw: string, filename: string): string {
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch (e) {
    throw new IngestError("invalid_file", `${filename} is not valid JSON: ${(e as Error).message}`);
  }
  // Minified JSON has no line breaks to chunk on: indent it. Readable JSON is kept as written.
  const lines = raw.split("\n", 64).length;
  return raw.length / lines > 1000 ? JSON.stringify(doc, null, 1) : raw.replace(/\r\n?/g, "\n");
}

async function pdfText(bytes: Uint8Array, filename: string, maxPages: number): Promise<string> {
  const { getDocumentProxy, extractText } = await import("unpdf");
  let pdf;
  try {
    // pdf.js takes ownership of (detaches) the buffer it is given, and refuses a Buffer: pass a
    // plain Uint8Array copy.
    pdf = await getDocumentProxy(new Uint8Array(bytes), { verbosity: 0, isEvalSupported: false });
  } catch (e) {
    const why = (e as Error).name === "PasswordException" ? "it is encrypted" : (e as Error).message;
    throw new IngestError("invalid_file", `${filename} could not be read as a PDF: ${why}`, { cause: e });
  }
  try {
    if (pdf.numPages > maxPages) throw new IngestError("invalid_file", `${filename} has ${pdf.numPages} pages; at most ${maxPages} are read.`);
    const { text } = await extractText(pdf, { mergePages: false });
    return text.map((page) => normalizeWhitespace(page)).filter((page) => page !== "").join("\n\n");
  } catch (e) {
    if (e instanceof IngestError) throw e;
    throw new IngestError("invalid_file", `${filename} could not be read as a PDF: ${(e as Error).message}`, { cause: e });
  } finally {
    await pdf.destroy().catch(() => {});
  }
}

async function docxText(bytes: Uint8Array, filename: string): Promise<string> {
  const mammoth = (await import("mammoth")).default;
  try {
    const { value } = await mammoth.extractRawText({ buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length) });
    return value.replace(/\r\n?/g, "\n").replace(/\n{3,}/g, "\n\n").trim();
  } catch (e) {
    throw new IngestError("invalid_file", `${filename} could not be read as a DOCX document: ${(e as Error).message}`, { cause: e });
  }
}

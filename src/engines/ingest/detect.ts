// Which reader a file needs, from its name and its first bytes. The extension says what the file
// claims to be; magic bytes confirm it (a .pdf that is not a PDF is `invalid_file`) or decide for
// a name that says nothing (no or an unknown extension).
import { IngestError } from "./errors.js";

export type Format = "text" | "markdown" | "code" | "json" | "csv" | "html" | "pdf" | "docx";

const BY_EXTENSION: Record<string, Format> = {
  txt: "text",
  text: "text",
  log: "text",
  rst: "text",
  tex: "text",
  md: "markdown",
  markdown: "markdown",
  mdx: "markdown",
  json: "json",
  jsonl: "text", // one JSON document per line: searchable as lines of text
  csv: "csv",
  tsv: "csv",
  html: "html",
  htm: "html",
  xhtml: "html",
  pdf: "pdf",
  docx: "docx",
};

// Source code and config files: read as they are.
const CODE = "c h cc cpp hpp cs go java kt kts scala rs rb php py pyi sh bash zsh ps1 js mjs cjs jsx ts tsx vue svelte swift m sql r lua pl dart css scss less yaml yml toml ini cfg conf xml proto graphql gql dockerfile makefile gradle";
for (const ext of CODE.split(" ")) BY_EXTENSION[ext] = "code";

// Kinds we recognise and do not read (the platform does not index them either).
const UNSUPPORTED = new Set(
  "png jpg jpeg gif webp bmp tiff tif ico heic svgz mp3 wav ogg flac m4a mp4 mov avi mkv webm zip gz tgz bz2 xz 7z rar tar exe dll so dylib bin wasm class jar doc ppt pptx xls xlsx odt ods odp rtf epub sqlite db parquet avro pkl npy".split(" "),
);

export function extensionOf(filename: string): string {
  const base = filename.split(/[\\/]/).pop() ?? "";
  const dot = base.lastIndexOf(".");
  return dot > 0 ? base.slice(dot + 1).toLowerCase() : base.toLowerCase(); // "Makefile" → "makefile"
}

export function isPdf(bytes: Uint8Array): boolean {
  // "%PDF-" within the first 1024 bytes (PDF 32000-1 §7.5.2; readers allow junk before it).
  return Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).includes("%PDF-", 0, "latin1");
}

export function isZip(bytes: Uint8Array): boolean {
  return bytes.length >= 4 && bytes[0] === 0x50 && bytes[1] === 0x4b && bytes[2] === 0x03 && bytes[3] === 0x04;
}

/** True when the bytes look like binary data rather than text (NUL bytes in the first 8 KiB). */
export function looksBinary(bytes: Uint8Array): boolean {
  const n = Math.min(bytes.length, 8192);
  // UTF-16 text has NULs too; its byte-order mark says so.
  if (n >= 2 && ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))) return false;
  for (let i = 0; i < n; i++) if (bytes[i] === 0) return true;
  return false;
}

/** The format to read `bytes` as; IngestError when it is none we read or not what its name claims. */
export function detectFormat(filename: string, bytes: Uint8Array): Format {
  const ext = extensionOf(filename);
  const claimed = BY_EXTENSION[ext];
  if (claimed === "pdf") {
    if (!isPdf(bytes)) throw new IngestError("invalid_file", `${filename} is not a valid PDF (no %PDF- header).`);
    return "pdf";
  }
  if (claimed === "docx") {
    if (!isZip(bytes)) throw new IngestError("invalid_file", `${filename} is not a valid DOCX file (not a ZIP container).`);
    return "docx";
  }
  if (claimed) {
    if (looksBinary(bytes)) throw new IngestError("invalid_file", `${filename} should be text but holds binary data.`);
    return claimed;
  }
  if (UNSUPPORTED.has(ext)) throw new IngestError("unsupported_file", `Files of type .${ext} are not supported for vector store ingestion.`);
  // No usable extension: the content decides.
  if (isPdf(bytes)) return "pdf";
  if (isZip(bytes)) {
    if (Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).includes("word/document.xml", 0, "latin1")) return "docx";
    throw new IngestError("unsupported_file", `${filename}: ZIP archives are not supported.`);
  }
  if (looksBinary(bytes)) throw new IngestError("unsupported_file", `${filename} is a binary file of a type that is not supported.`);
  return "text";
}

/**
 * PDF inspection with unpdf (pdf.js): per page, the extracted text and the page size in points
 * (1/72 in) from the page's MediaBox (pdf.js `page.view`, the MediaBox clipped by a CropBox if
 * any), with width and height swapped for pages rotated by 90° or 270°.
 */
import { MediaFormatError } from "./image.js";

export interface PdfPage {
  /** points */
  width: number;
  height: number;
  text: string;
}

export interface PdfInfo {
  pages: PdfPage[];
}

export function isPdf(bytes: Uint8Array): boolean {
  // "%PDF-" must appear within the first 1024 bytes (PDF 32000-1 §7.5.2; readers allow junk before it)
  const head = Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(bytes.length, 1024)).toString("latin1");
  return head.includes("%PDF-");
}

export async function inspectPdf(bytes: Uint8Array, options: { maxPages?: number } = {}): Promise<PdfInfo> {
  if (!isPdf(bytes)) throw new MediaFormatError("not a PDF (no %PDF- header)");
  const { getDocumentProxy, extractText } = await import("unpdf");
  let pdf;
  try {
    // pdf.js takes ownership of (detaches) the buffer it is given: pass a copy.
    pdf = await getDocumentProxy(bytes.slice(), { verbosity: 0, isEvalSupported: false });
  } catch (e) {
    throw new MediaFormatError(`corrupt PDF: ${(e as Error).message}`);
  }
  try {
    const maxPages = options.maxPages ?? 10_000;
    if (pdf.numPages > maxPages) throw new MediaFormatError(`PDF has ${pdf.numPages} pages, more than ${maxPages}`);
    let texts: string[];
    try {
      texts = (await extractText(pdf, { mergePages: false })).text;
    } catch (e) {
      throw new MediaFormatError(`corrupt PDF: ${(e as Error).message}`);
    }
    const pages: PdfPage[] = [];
    for (let i = 1; i <= pdf.numPages; i++) {
      let page;
      try {
        page = await pdf.getPage(i);
      } catch (e) {
        throw new MediaFormatError(`corrupt PDF page ${i}: ${(e as Error).message}`);
      }
      const [x0, y0, x1, y1] = page.view as [number, number, number, number];
      let width = Math.abs(x1 - x0);
      let height = Math.abs(y1 - y0);
      if (page.rotate % 180 !== 0) [width, height] = [height, width];
      pages.push({ width, height, text: texts[i - 1] ?? "" });
    }
    return { pages };
  } finally {
    await pdf.destroy().catch(() => {});
  }
}

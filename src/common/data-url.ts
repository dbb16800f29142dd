// data: URLs (RFC 2397), read one way everywhere: split into media type, encoding and payload,
// then decoded with a size limit checked before any large buffer is made. Callers turn a
// DataUrlError into their own error for the field that held the URL.

export interface DataUrl {
  /** Everything between "data:" and the first comma: the media type and its ;parameters. */
  meta: string;
  /** The media type as written ("" when none). */
  mediaType: string;
  /** The payload is base64 (";base64" ends `meta`); otherwise percent-encoded text. */
  base64: boolean;
  /** The text after the comma, still encoded. */
  payload: string;
}

export type DataUrlProblem = "too_large" | "invalid_base64" | "invalid_percent_encoding";

export class DataUrlError extends Error {
  override readonly name = "DataUrlError";
  constructor(readonly problem: DataUrlProblem) {
    super(`data URL: ${problem.replace(/_/g, " ")}`);
  }
}

/** The parts of a data: URL (scheme matched case-insensitively), or undefined when it is not one. */
export function splitDataUrl(url: string): DataUrl | undefined {
  if (!/^data:/i.test(url)) return undefined;
  const comma = url.indexOf(",");
  if (comma < 0) return undefined;
  const meta = url.slice(5, comma);
  return { meta, mediaType: meta.split(";")[0] ?? "", base64: /;base64$/i.test(meta), payload: url.slice(comma + 1) };
}

/**
 * The bytes of a data URL's payload. Base64 may hold whitespace and either alphabet (standard or
 * URL-safe); one whose length shows more than `maxBytes` (two bytes of slack for padding) is
 * refused before it is decoded. Percent-encoded text is refused over `maxBytes` once decoded.
 */
export function decodeDataUrl(d: DataUrl, opts: { maxBytes?: number } = {}): Buffer {
  const maxBytes = opts.maxBytes ?? Infinity;
  if (d.base64) {
    const clean = d.payload.replace(/\s+/g, "");
    if (Math.floor((clean.length * 3) / 4) > maxBytes + 2) throw new DataUrlError("too_large");
    if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(clean)) throw new DataUrlError("invalid_base64");
    return Buffer.from(clean, "base64");
  }
  let text: string;
  try {
    text = decodeURIComponent(d.payload);
  } catch {
    throw new DataUrlError("invalid_percent_encoding");
  }
  const bytes = Buffer.from(text, "latin1");
  if (bytes.length > maxBytes) throw new DataUrlError("too_large");
  return bytes;
}

// HTML to text: the words a reader sees, nothing a browser would not show. Scripts, styles,
// comments and other non-content elements go with their content; block elements become line
// breaks so paragraphs stay paragraphs (which the chunker breaks on); entities are decoded last,
// so an escaped "&lt;p&gt;" stays text. Regular expressions, not a DOM: linear in the input and
// tolerant of the broken markup real pages have.

// Elements whose content is never text to index.
const DROPPED = /<(script|style|noscript|template|svg|math|iframe|object|head)\b[^>]*>[\s\S]*?<\/\1\s*>/gi;
// A script or style never closed runs to the end of the document, as in a browser.
const UNCLOSED = /<(?:script|style)\b[^>]*>[\s\S]*$/i;
const COMMENT = /<!--[\s\S]*?(?:-->|$)/g;
const CDATA_OR_DECL = /<!\[CDATA\[[\s\S]*?\]\]>|<![^>]*>|<\?[\s\S]*?\?>/g;
// Tags that end a block of text.
const BLOCK = /<\/?(?:p|div|section|article|header|footer|main|nav|aside|h[1-6]|ul|ol|li|dl|dt|dd|table|thead|tbody|tfoot|tr|blockquote|pre|figure|figcaption|form|fieldset|hr|address|details|summary)\b[^>]*>/gi;
const BREAK = /<br\s*\/?>/gi;
const CELL = /<\/(?:td|th)\s*>/gi;
const TAG = /<\/?[A-Za-z][^>]*>/g;

export function htmlToText(html: string): string {
  // The <title> is worth keeping even though <head> is dropped.
  const title = /<title\b[^>]*>([\s\S]*?)<\/title\s*>/i.exec(html)?.[1]?.trim();
  let s = html.replace(COMMENT, "").replace(CDATA_OR_DECL, "").replace(DROPPED, " ").replace(UNCLOSED, "");
  s = s.replace(BREAK, "\n").replace(CELL, "\t").replace(BLOCK, "\n\n").replace(TAG, "");
  s = decodeEntities(s);
  s = normalizeWhitespace(s);
  if (title && !s.startsWith(decodeEntities(title))) s = `${normalizeWhitespace(decodeEntities(title))}\n\n${s}`;
  return s;
}

/** Runs of spaces become one space, lines are trimmed, and at most one blank line separates blocks. */
export function normalizeWhitespace(s: string): string {
  return s
    .replace(/\r\n?/g, "\n")
    .replace(/[ \t\f\v\u00a0]+/g, " ")
    .replace(/ *\n */g, "\n")
    .replace(/\n{3,}/g, "\n\n")
    .trim();
}

// The named entities real pages use (the full HTML5 table has 2,231; these cover prose, typography,
// currency and math that appears in text). Unknown names are left as written.
const NAMED: Record<string, string> = {
  amp: "&", lt: "<", gt: ">", quot: '"', apos: "'", nbsp: "\u00a0", ensp: "\u2002", emsp: "\u2003", thinsp: "\u2009",
  shy: "\u00ad", zwj: "\u200d", zwnj: "\u200c", lrm: "\u200e", rlm: "\u200f",
  copy: "©", reg: "®", trade: "™", hellip: "…", mdash: "—", ndash: "–", minus: "−", lsquo: "‘", rsquo: "’",
  sbquo: "‚", ldquo: "“", rdquo: "”", bdquo: "„", laquo: "«", raquo: "»", lsaquo: "‹", rsaquo: "›", prime: "′", Prime: "″",
  bull: "•", middot: "·", sect: "§", para: "¶", dagger: "†", Dagger: "‡", permil: "‰", deg: "°", micro: "µ",
  euro: "€", pound: "£", yen: "¥", cent: "¢", curren: "¤", times: "×", divide: "÷", plusmn: "±", frac12: "½", frac14: "¼",
  frac34: "¾", sup1: "¹", sup2: "²", sup3: "³", ordf: "ª", ordm: "º", not: "¬", macr: "¯", acute: "´", cedil: "¸",
  iexcl: "¡", iquest: "¿", larr: "←", rarr: "→", uarr: "↑", darr: "↓", harr: "↔", lArr: "⇐", rArr: "⇒", hArr: "⇔",
  le: "≤", ge: "≥", ne: "≠", asymp: "≈", equiv: "≡", infin: "∞", sum: "∑", prod: "∏", radic: "√", part: "∂",
  int: "∫", forall: "∀", exist: "∃", isin: "∈", notin: "∉", cap: "∩", cup: "∪", sub: "⊂", sup: "⊃", and: "∧", or: "∨",
  alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", zeta: "ζ", eta: "η", theta: "θ", iota: "ι", kappa: "κ",
  lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", omicron: "ο", pi: "π", rho: "ρ", sigma: "σ", sigmaf: "ς", tau: "τ",
  upsilon: "υ", phi: "φ", chi: "χ", psi: "ψ", omega: "ω", Alpha: "Α", Beta: "Β", Gamma: "Γ", Delta: "Δ", Theta: "Θ",
  Lambda: "Λ", Pi: "Π", Sigma: "Σ", Phi: "Φ", Psi: "Ψ", Omega: "Ω",
  Agrave: "À", Aacute: "Á", Acirc: "Â", Atilde: "Ã", Auml: "Ä", Aring: "Å", AElig: "Æ", Ccedil: "Ç", Egrave: "È",
  Eacute: "É", Ecirc: "Ê", Euml: "Ë", Igrave: "Ì", Iacute: "Í", Icirc: "Î", Iuml: "Ï", ETH: "Ð", Ntilde: "Ñ",
  Ograve: "Ò", Oacute: "Ó", Ocirc: "Ô", Otilde: "Õ", Ouml: "Ö", Oslash: "Ø", Ugrave: "Ù", Uacute: "Ú", Ucirc: "Û",
  Uuml: "Ü", Yacute: "Ý", THORN: "Þ", szlig: "ß", agrave: "à", aacute: "á", acirc: "â", atilde: "ã", auml: "ä",
  aring: "å", aelig: "æ", ccedil: "ç", egrave: "è", eacute: "é", ecirc: "ê", euml: "ë", igrave: "ì", iacute: "í",
  icirc: "î", iuml: "ï", eth: "ð", ntilde: "ñ", ograve: "ò", oacute: "ó", ocirc: "ô", otilde: "õ", ouml: "ö",
  oslash: "ø", ugrave: "ù", uacute: "ú", ucirc: "û", uuml: "ü", yacute: "ý", thorn: "þ", yuml: "ÿ", OElig: "Œ",
  oelig: "œ", Scaron: "Š", scaron: "š", Yuml: "Ÿ", fnof: "ƒ", circ: "ˆ", tilde: "˜",
};

const ENTITY = /&(?:#(\d{1,7})|#[xX]([0-9A-Fa-f]{1,6})|([A-Za-z][A-Za-z0-9]{1,31}));?/g;

export function decodeEntities(s: string): string {
  if (!s.includes("&")) return s;
  return s.replace(ENTITY, (whole, dec: string | undefined, hex: string | undefined, name: string | undefined) => {
    if (name !== undefined) return NAMED[name] ?? whole;
    const cp = dec !== undefined ? Number.parseInt(dec, 10) : Number.parseInt(hex!, 16);
    // NUL, surrogates and out-of-range code points become U+FFFD, as the HTML parser does.
    if (cp === 0 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return "\ufffd";
    return String.fromCodePoint(cp);
  });
}

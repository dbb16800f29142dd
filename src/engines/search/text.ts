/**
 * Query text: the terms the lexical retriever searches for, the safe FTS5 query built from them,
 * and the local `rewrite_query`.
 *
 * Users type anything (quotes, `AND`, `*`, `(`, `NEAR`, column names, emoji). None of it reaches
 * FTS5's query syntax: the text is cut into runs of letters, digits and combining marks (what
 * FTS5's unicode61 tokenizer keeps, too), each run becomes a double-quoted string (it can never
 * contain a quote) and the strings are OR-ed. So the query can never be a syntax error.
 */

/**
 * English stop words: dropped from lexical queries (they match nearly every chunk, cost the most
 * and add almost nothing to BM25) and by `rewriteQuery`. A query made only of stop words keeps them.
 */
export const STOP_WORDS: ReadonlySet<string> = new Set(
  (
    "a about above after again against all am an and any are as at be because been before being below between " +
    "both but by can could did do does doing down during each few for from further had has have having he her " +
    "here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not " +
    "now of off on once only or other our ours ourselves out over own same she should so some such than that the " +
    "their theirs them themselves then there these they this those through to too under until up very was we " +
    "were what when where which while who whom why will with would you your yours yourself yourselves"
  ).split(" "),
);

/** At most this many distinct terms per query reach FTS5 (bounds the cost of pasted documents). */
export const MAX_QUERY_TERMS = 64;

// Letters and digits, each with the combining marks that follow it (a lone mark is no word).
const WORD = /(?:[\p{L}\p{N}]\p{M}*)+/gu;
// Apostrophes inside words ("don't", "l’été") join rather than split.
const APOSTROPHE = /(?<=[\p{L}\p{N}])['’](?=[\p{L}\p{N}])/gu;

/** Lower-cased words of `text` (NFKC, apostrophes joined), in order, duplicates kept. */
export function words(text: string): string[] {
  return text.normalize("NFKC").replace(APOSTROPHE, "").toLowerCase().match(WORD) ?? [];
}

/**
 * The distinct terms the lexical retriever looks for: the words without stop words (unless the
 * query is nothing but stop words), first `MAX_QUERY_TERMS` of them.
 */
export function queryTerms(text: string): string[] {
  const all = [...new Set(words(text))];
  const content = all.filter((w) => !STOP_WORDS.has(w));
  return (content.length > 0 ? content : all).slice(0, MAX_QUERY_TERMS);
}

/**
 * An FTS5 MATCH expression for `terms`: `"t1" OR "t2"`, or null when there is nothing to search
 * for (the lexical retriever then returns nothing).
 */
export function ftsExpression(terms: string[]): string | null {
  if (terms.length === 0) return null;
  // Each term is only letters/digits/marks, so quoting cannot be broken out of.
  return terms.map((t) => `"${t}"`).join(" OR ");
}

/**
 * The local `rewrite_query`: NFKC, lower-case, apostrophes inside words removed, every other
 * non-letter/digit/mark character a space, stop words dropped (kept when nothing else is left),
 * whitespace collapsed. `"What's the Return-Policy for EU orders?!"` → `"whats return policy eu orders"`.
 * Deterministic and model-free; the result is what a service passes on as the query text
 * (and, if it likes, embeds) when `rewrite_query` is true.
 */
export function rewriteQuery(text: string): string {
  const all = words(text);
  const content = all.filter((w) => !STOP_WORDS.has(w));
  return (content.length > 0 ? content : all).join(" ");
}

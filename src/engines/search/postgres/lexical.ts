/**
 * The lexical retriever on PostgreSQL full-text search, cut the way the SQLite/FTS5 path cuts
 * (text.ts): the engine splits text into words itself (NFKC, lower case, apostrophes joined, runs
 * of letters/digits) and removes Latin diacritics (FTS5's `remove_diacritics 2`), so the parser of
 * the `atrium_search` configuration only sees plain words and its Snowball stemmer does what
 * FTS5's porter stemmer does. Query terms are the same `queryTerms` (stop words dropped unless
 * the query is only stop words), OR-ed in a tsquery (they are letters and digits only, so a query
 * can never be tsquery syntax), and go through the same postings budget (lexical-budget.ts).
 * Ranked by RUM's `<=>` (walks the best matches only) or, with a GIN index, `ts_rank` over every
 * match the budget lets through.
 */
import type pg from "pg";
import { affordableTerms } from "../lexical-budget.js";
import { queryTerms, words } from "../text.js";
import type { Filter } from "../types.js";
import { compilePgFilter } from "./filter-sql.js";
import type { PgStoreRow, TextIndexKind } from "./schema.js";

const LATIN_MARKS = /[\u0300-\u036f]/g;

const plain = (word: string) => word.normalize("NFD").replace(LATIN_MARKS, "").normalize("NFC");

/** A chunk's text as the tsvector is built from: its words, diacritic-free, space-separated. */
export function lexicalText(text: string): string {
  return words(text).map(plain).join(" ");
}

/** The tsquery text for terms (`a | b`), or null when there is nothing to search for. */
export function tsqueryText(terms: string[]): string | null {
  const clean = [...new Set(terms.map(plain).filter((t) => t.length > 0))];
  return clean.length === 0 ? null : clean.join(" | ");
}

export interface LexicalSearch {
  storeId: string;
  store: PgStoreRow;
  text: string;
  filter: Filter | undefined;
  depth: number;
  /** `lexical` mode: use the rarest term alone when none fits the budget (hybrid leaves the list out). */
  mustAnswer: boolean;
  budget: number;
}

/** Chunk ids best first for one query text, the filter in the WHERE (before the LIMIT). */
export async function lexicalSearch(pool: pg.Pool, kind: TextIndexKind, s: LexicalSearch): Promise<number[]> {
  const terms = await budgetedTerms(pool, s, queryTerms(s.text));
  const query = tsqueryText(terms);
  if (!query) return [];
  const params: unknown[] = [s.store.ord, query, s.depth];
  const cond = s.filter ? `AND ${compilePgFilter(s.filter, "c", s.store.ord, params)}` : "";
  const order = kind === "rum" ? `c.tsv <=> q.q` : `ts_rank(c.tsv, q.q) DESC, c.id`;
  const { rows } = await pool.query<{ id: string }>(
    `SELECT c.id FROM search_chunks c, (SELECT to_tsquery('atrium_search', $2) AS q) q
     WHERE c.store_ord = $1 AND c.tsv @@ q.q ${cond} ORDER BY ${order} LIMIT $3`,
    params,
  );
  return rows.map((r) => Number(r.id));
}

/** How many of the store's chunks hold each term (its lexeme's count in `search_terms`). */
async function countTerms(pool: pg.Pool, ord: number, terms: string[]): Promise<Map<string, number>> {
  const { rows } = await pool.query<{ t: string; n: number }>(
    `SELECT u.t, coalesce(s.df, 0) AS n
     FROM unnest($2::text[]) AS u(t)
     LEFT JOIN LATERAL (SELECT v.lexeme FROM unnest(to_tsvector('atrium_search', u.t)) AS v LIMIT 1) l ON true
     LEFT JOIN search_terms s ON s.store_ord = $1 AND s.lexeme = l.lexeme`,
    [ord, terms.map(plain)],
  );
  const byPlain = new Map(rows.map((r) => [r.t, r.n]));
  return new Map(terms.map((t) => [t, byPlain.get(plain(t)) ?? 0]));
}

/** The terms the budget affords (lexical-budget.ts), with the counts read from `search_terms`. */
async function budgetedTerms(pool: pg.Pool, s: LexicalSearch, terms: string[]): Promise<string[]> {
  const usable = terms.filter((t) => plain(t).length > 0);
  if (usable.length === 0 || s.store.chunks * usable.length <= s.budget) return usable;
  const counts = await countTerms(pool, s.store.ord, usable);
  return affordableTerms((t) => counts.get(t) ?? 0, usable, s.store.chunks, s.mustAnswer, s.budget);
}

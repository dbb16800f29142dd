/**
 * The terms one lexical query can afford. FTS5 scores every chunk a term matches (~0.6 µs each),
 * so a word found in most of a 100k-chunk store costs ~100 ms whatever the LIMIT. So, with each
 * term's count in the store (counting stops past the budget):
 * 1. terms in more than half the chunks are dropped when any other term matches: BM25 gives
 *    them weight ~0 anyway (FTS5 floors their IDF at 1e-6), they would only add cost;
 * 2. the rest are taken rarest first while their counts add up to at most `budget`;
 * 3. if not even the rarest fits: `lexical` mode (`mustAnswer`) uses it alone (the slow case,
 *    every posting walked); `hybrid` leaves the lexical list out and the dense list answers.
 *
 * `count(term, cap)` counts the store's chunks matching a term, stopping at `cap`.
 */
export function affordableTerms(count: (term: string, cap: number) => number, terms: string[], chunks: number, mustAnswer: boolean, budget: number): string[] {
  if (terms.length === 0 || chunks * terms.length <= budget) return terms;
  const half = chunks / 2;
  let counted = terms.map((t) => ({ t, n: count(t, budget + 1) })).filter((c) => c.n > 0);
  if (counted.some((c) => c.n <= half)) counted = counted.filter((c) => c.n <= half);
  counted.sort((a, b) => a.n - b.n);
  const chosen: string[] = [];
  let total = 0;
  for (const c of counted) {
    if (total + c.n > budget) break;
    chosen.push(c.t);
    total += c.n;
  }
  if (chosen.length === 0 && mustAnswer && counted.length > 0) {
    // The counts stopped at the budget: count in full to find the truly rarest.
    const full = counted.map((c) => ({ t: c.t, n: count(c.t, chunks + 1) }));
    chosen.push(full.reduce((a, b) => (b.n < a.n ? b : a)).t);
  }
  return chosen;
}

// SQL shared by the SQLite stores (records, jobs, the search index).

/**
 * A LIMIT bound at run time. SQLite reads a bare `LIMIT ?` as an input to the query plan, so every
 * bind of it expires the statement and the next run prepares it again (~10 µs on a records list,
 * 16 µs → 2 µs per list without it). The same limit as an expression (`+?`) is only evaluated.
 */
export const BOUND_LIMIT = "LIMIT +?";

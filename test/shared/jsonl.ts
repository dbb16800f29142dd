// JSON Lines, as batch and fine-tuning input files are written and output files read.

/** One line per row, ending in a newline: a string row is written as given (malformed input), any other row as JSON. */
export const jsonl = (rows: unknown[]) => rows.map((r) => (typeof r === "string" ? r : JSON.stringify(r))).join("\n") + "\n";

/** The JSON value of every line of `text`. */
export const parseJsonl = (text: string): any[] => text.trim().split("\n").map((l) => JSON.parse(l));

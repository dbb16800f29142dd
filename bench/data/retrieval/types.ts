// The retrieval evaluation's records: written by generate.ts, read by bench/vector-stores.bench.ts.
export interface Doc {
  id: string;
  title: string;
  text: string;
}

export interface Question {
  doc: string;
  question: string;
  /** named: the question names the document's subject; described: it does not. */
  kind: "named" | "described";
}

// Reading every record of a list, page by page, for code that needs them all (a project's
// fine-tuned models, a vector store's files, a container's files on delete) without holding one
// giant query open or hand-writing the cursor loop at each call site.
import type { Collection, ListQuery, Scope, StoredRecord } from "../storage/types.js";

export type AllQuery = Omit<ListQuery, "after" | "before" | "limit"> & { pageSize?: number };

export async function* eachRecord<T>(collection: Collection<T>, scope: Scope, query: AllQuery): AsyncGenerator<StoredRecord<T>> {
  const { pageSize = 1000, ...q } = query;
  for (let after: string | undefined; ; ) {
    const page = await collection.list(scope, { ...q, after, limit: pageSize });
    yield* page.records;
    if (!page.hasMore || !page.records.length) return;
    after = page.records[page.records.length - 1].id;
  }
}

export async function allRecords<T>(collection: Collection<T>, scope: Scope, query: AllQuery): Promise<StoredRecord<T>[]> {
  const out: StoredRecord<T>[] = [];
  for await (const r of eachRecord(collection, scope, query)) out.push(r);
  return out;
}

// The compare-and-set loop behind Collection.mutate, written once for every store that offers
// get() and an atomic batch. A store with row locks (PostgreSQL's SELECT … FOR UPDATE) may
// implement mutate() natively instead.
import { MUTATE_ATTEMPTS, VersionConflict, type Collection, type Mutation, type Scope, type StoredRecord, type WriteOp } from "./types.js";

/** The write ops a decided mutation stands for, conditional on the version it was decided on. */
export function mutationOps<T>(kind: string, scope: Scope, id: string, cur: StoredRecord<T> | undefined, m: Mutation<T, unknown>): WriteOp[] {
  if (m.write === "none") return [];
  const also = m.also ?? [];
  // An update or delete decided on an absent record has no version to hold: it applies as the
  // store's own rules say (an update of a missing record fails the batch).
  const expectVersion = cur?.version;
  if (m.write === "delete") return [{ op: "delete", kind, scope, id, ...(expectVersion !== undefined && { expectVersion }) }, ...also];
  const update: WriteOp = { op: "update", kind, scope, id, data: m.data, ...(expectVersion !== undefined && { expectVersion }) };
  if (m.tag !== undefined) update.tag = m.tag;
  if (m.expiresAt !== undefined) update.expiresAt = m.expiresAt;
  return [update, ...also];
}

/**
 * Runs `change` on the current record and commits what it decides, retrying from the read when
 * any op of the write meets a VersionConflict (the record itself or an `also` op's record changed).
 */
export async function mutateRecord<T, R>(
  collection: Pick<Collection<T>, "kind" | "get">,
  atomically: (ops: WriteOp[]) => Promise<void>,
  scope: Scope,
  id: string,
  change: (cur: StoredRecord<T> | undefined, attempt: number) => Mutation<T, R> | Promise<Mutation<T, R>>,
  opts?: { commit?: (ops: WriteOp[]) => Promise<void> },
): Promise<R> {
  const commit = opts?.commit ?? atomically;
  for (let attempt = 0; ; attempt++) {
    const cur = await collection.get(scope, id);
    const decided = await change(cur, attempt);
    const ops = mutationOps(collection.kind, scope, id, cur, decided);
    // "none" writes nothing, through the store or `commit`.
    if (ops.length === 0) return decided.result;
    try {
      await commit(ops);
      return decided.result;
    } catch (e) {
      if (e instanceof VersionConflict && attempt + 1 < MUTATE_ATTEMPTS) continue;
      throw e;
    }
  }
}

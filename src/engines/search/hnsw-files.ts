/**
 * The HNSW graphs kept beside the database, one `<ord>.hnsw` per store (dense.ts builds them):
 * a dropped store's graph goes with it, and a start-up sweep removes what nothing owns.
 */
import { readdirSync, statSync, unlinkSync } from "node:fs";
import { join } from "node:path";

/** A build's temporary file older than this is a leftover of a process that died mid-build. */
const STALE_BUILD_MS = 3600_000;

/** Deletes a store's kept graph. */
export function removeGraphFile(dir: string, ord: number): void {
  try {
    unlinkSync(join(dir, `${ord}.hnsw`));
  } catch {
    // never built
  }
}

/** Deletes graphs of stores that no longer exist (not in `liveOrds()`) and build leftovers older than an hour. */
export function sweepGraphFiles(dir: string, liveOrds: () => Set<number>): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  const ords = liveOrds();
  for (const name of names) {
    const m = /^(\d+)\.hnsw(\.tmp-.*)?$/.exec(name);
    if (!m) continue;
    const file = join(dir, name);
    try {
      if (m[2] ? Date.now() - statSync(file).mtimeMs > STALE_BUILD_MS : !ords.has(Number(m[1]))) unlinkSync(file);
    } catch {
      // raced with another process
    }
  }
}

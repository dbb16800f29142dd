// For tests that open stores, runners and directories themselves: what a test registers is undone
// after it, last first, so every test starts from nothing.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach } from "vitest";

/**
 * Registers the file's afterEach hook. `cleanups` takes what to undo; `tempDir()` makes a directory
 * (named from `prefix`) that is removed the same way.
 */
export function undoAfterEach(prefix: string) {
  const cleanups: Array<() => Promise<void> | void> = [];
  afterEach(async () => {
    while (cleanups.length) await cleanups.pop()!();
  });
  const tempDir = (): string => {
    const dir = mkdtempSync(join(tmpdir(), prefix));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    return dir;
  };
  return { cleanups, tempDir };
}

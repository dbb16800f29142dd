// Waiting in tests: a plain pause, polling a resource (a batch, a fine-tuning job, a video, ...)
// over any client until a condition holds, and waiting for a server to answer, never past a
// deadline. A check begun before the deadline never ends a wait: a busy machine (or a blocked event
// loop) may have kept it from seeing the answer. Nothing here imports vitest: bench/ uses it too.
import { setTimeout as sleep } from "node:timers/promises";

/** Resolves after `ms` milliseconds. */
export { sleep };

/**
 * Calls `get` until `until` holds for what it returns, and returns that; fails with the status it
 * last saw once `ms` have gone by. Between calls it waits `intervalMs`, or what `intervalMs(last)`
 * says (a server's poll-after hint).
 */
export async function pollUntil<T extends { status: string }>(
  get: () => Promise<T>,
  until: (t: T) => boolean,
  what: string,
  { ms = 60_000, intervalMs = 50 }: { ms?: number; intervalMs?: number | ((last: T) => number) } = {},
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const begun = Date.now();
    const t = await get();
    if (until(t)) return t;
    if (begun > deadline) throw new Error(`${what} still ${t.status}`);
    await sleep(typeof intervalMs === "number" ? intervalMs : intervalMs(t));
  }
}

/** Asks `ready` every `intervalMs` until it says yes; fails with `failure()` once a check begun after `ms` still says no. */
export async function waitReady(ready: () => Promise<boolean>, ms: number, failure: () => string, intervalMs = 100): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const begun = Date.now();
    if (await ready()) return;
    if (begun > deadline) throw new Error(failure());
    await sleep(intervalMs);
  }
}

// Waiting in tests: a plain pause, and polling a resource (a batch, a fine-tuning job, a video, ...)
// over any client until a condition holds, never past a deadline.
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
    const t = await get();
    if (until(t)) return t;
    if (Date.now() > deadline) throw new Error(`${what} still ${t.status}`);
    await sleep(typeof intervalMs === "number" ? intervalMs : intervalMs(t));
  }
}

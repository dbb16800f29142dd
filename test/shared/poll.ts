// Polls a resource (a batch, a fine-tuning job, ...) over any client until `until` holds; fails
// with what it last saw once `ms` have gone by.
export async function pollUntil<T extends { status: string }>(
  get: () => Promise<T>,
  until: (t: T) => boolean,
  what: string,
  { ms = 60_000, intervalMs = 50 }: { ms?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const t = await get();
    if (until(t)) return t;
    if (Date.now() > deadline) throw new Error(`${what} still ${t.status}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

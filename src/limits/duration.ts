// Durations as the platform writes them in x-ratelimit-reset-* (spec 8): Go's time.Duration
// notation at millisecond resolution — "17ms", "1s", "1.5s", "6m0s", "2h46m40s", "0s".

/** `ms` rounded up to a whole millisecond (a client that waits that long is never early). */
export function formatDuration(ms: number): string {
  let rest = Math.ceil(ms);
  if (!(rest > 0)) return "0s";
  if (rest < 1000) return `${rest}ms`;
  const h = Math.floor(rest / 3_600_000);
  rest -= h * 3_600_000;
  const m = Math.floor(rest / 60_000);
  rest -= m * 60_000;
  const s = Math.floor(rest / 1000);
  const frac = rest - s * 1000;
  const seconds = frac === 0 ? `${s}s` : `${s}.${String(frac).padStart(3, "0").replace(/0+$/, "")}s`;
  if (h > 0) return `${h}h${m}m${seconds}`;
  if (m > 0) return `${m}m${seconds}`;
  return seconds;
}

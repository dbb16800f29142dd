// Integer settings read from the environment, each refused with a message that names it.

/**
 * `env[name]` as an integer from `min` to `max`; `fallback` when unset or empty. Anything else
 * (a word, a fraction, out of range) throws, so a bad setting stops the start-up instead of being guessed at.
 */
export function integerFromEnv(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new Error(`${name} must be an integer from ${min} to ${max}, got '${raw}'`);
  return n;
}

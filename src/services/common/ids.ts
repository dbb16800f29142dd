import { randomBytes } from "node:crypto";

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/** An opaque id like the platform's: a kind prefix and 24 random base62 characters. */
export function newId(prefix: string): string {
  const bytes = randomBytes(24);
  let s = "";
  for (const b of bytes) s += ALPHABET[b % 62];
  return prefix + s;
}

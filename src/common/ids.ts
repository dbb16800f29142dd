// Opaque ids like the platform's: a kind prefix and 24 base62 characters. nanoid draws them with
// rejection sampling from crypto-random bytes, so every character is uniform (no modulo bias).
import { customAlphabet } from "nanoid";

const random24 = customAlphabet("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789", 24);

export function newId(prefix: string): string {
  return prefix + random24();
}

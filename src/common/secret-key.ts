// The master secret of the secrets at rest (container domain secrets) and of minted workload
// tokens: ATRIUM_SECRET_KEY (any string) or, without it, 32 random bytes in the data directory's
// key file, created once (mode 0600). Each use derives its own key from it with HKDF.
import { closeSync, openSync, readFileSync, writeSync } from "node:fs";
import { hkdfSync, randomBytes } from "node:crypto";
import { join } from "node:path";

export const SECRET_KEY_FILE = "secret.key";
const KEY_BYTES = 32;

function masterKey(secretKey: string | undefined, dataDir: string): Buffer {
  if (secretKey) return Buffer.from(secretKey, "utf8");
  const path = join(dataDir, SECRET_KEY_FILE);
  try {
    // "wx": created exactly once, even if two processes start on the same data dir together.
    const fd = openSync(path, "wx", 0o600);
    try {
      writeSync(fd, randomBytes(KEY_BYTES));
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== "EEXIST") throw e;
  }
  const key = readFileSync(path);
  if (key.length !== KEY_BYTES) throw new Error(`${path} must hold exactly ${KEY_BYTES} bytes; it holds ${key.length}`);
  return key;
}

/** A 32-byte key for `purpose`, derived from the master secret. */
export function derivedKey(secretKey: string | undefined, dataDir: string, purpose: string): Buffer {
  return Buffer.from(hkdfSync("sha256", masterKey(secretKey, dataDir), "atrium", purpose, KEY_BYTES));
}

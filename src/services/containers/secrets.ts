// Secrets at rest (a container's domain_secrets): AES-256-GCM with a random 96-bit IV per value,
// bound by associated data to where the value belongs, so a sealed value copied onto another
// container or domain does not open. The key comes from ATRIUM_SECRET_KEY or, without it, from a
// key file generated once in the data directory (mode 0600). Plain values are never logged and
// never returned by any call; nothing here logs at all.
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";
import { closeSync, openSync, readFileSync, writeSync } from "node:fs";
import { join } from "node:path";

export const SECRET_KEY_FILE = "secret.key";
const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;
// Sealed values carry a version prefix so the scheme can change without guessing.
const PREFIX = "v1:";

/** The master key: ATRIUM_SECRET_KEY (any string; derived below) or the data dir's key file. */
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

export class SecretBox {
  private readonly key: Buffer;

  /** `purpose` separates the keys of different uses of the same master key. */
  constructor(opts: { secretKey?: string; dataDir: string; purpose: string }) {
    this.key = Buffer.from(hkdfSync("sha256", masterKey(opts.secretKey, opts.dataDir), "atrium", opts.purpose, KEY_BYTES));
  }

  /** Encrypts `plain`; `context` (e.g. "container/domain/name") must be given again to open it. */
  seal(plain: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    cipher.setAAD(Buffer.from(context, "utf8"));
    const body = Buffer.concat([cipher.update(plain, "utf8"), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString("base64");
  }

  /** Decrypts a sealed value; throws when the key, the context or the bytes do not match. */
  open(sealed: string, context: string): string {
    if (!sealed.startsWith(PREFIX)) throw new Error("unknown sealed-value format");
    const raw = Buffer.from(sealed.slice(PREFIX.length), "base64");
    const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context, "utf8"));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString("utf8");
  }
}

// Secrets at rest (a container's domain_secrets): AES-256-GCM with a random 96-bit IV per value,
// bound by associated data to where the value belongs, so a sealed value copied onto another
// container or domain does not open. The key comes from ATRIUM_SECRET_KEY or, without it, from a
// key file generated once in the data directory (mode 0600). Plain values are never logged and
// never returned by any call; nothing here logs at all.
import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";
import { derivedKey } from "../../common/secret-key.js";

const IV_BYTES = 12;
const TAG_BYTES = 16;
// Sealed values carry a version prefix so the scheme can change without guessing.
const PREFIX = "v1:";

export class SecretBox {
  private readonly key: Buffer;

  /** `purpose` separates the keys of different uses of the same master key. */
  constructor(opts: { secretKey?: string; dataDir: string; purpose: string }) {
    this.key = derivedKey(opts.secretKey, opts.dataDir, opts.purpose);
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

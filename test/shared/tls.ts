// A self-signed certificate for localhost and 127.0.0.1, made at test time with openssl.
import { spawnSync } from "node:child_process";
import { join } from "node:path";

export function makeCert(dir: string): { cert: string; key: string } {
  const cert = join(dir, "cert.pem");
  const key = join(dir, "key.pem");
  const r = spawnSync(
    "openssl",
    ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
    { encoding: "utf8", timeout: 30_000 },
  );
  if (r.status !== 0) throw new Error(`openssl is required to make the test certificate: ${r.error?.message ?? r.stderr}`);
  return { cert, key };
}

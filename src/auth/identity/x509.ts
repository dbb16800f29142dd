// X.509 client certificates: the chain a client presented during the TLS handshake, a path from
// its leaf through the intermediates it sent (none are fetched) to one of the configured roots,
// validity windows, admission rules, and the facts CEL mappings see. Node's crypto.X509Certificate
// does every signature and name check (checkIssued, verify); nothing here parses ASN.1. No CRL or
// OCSP check is made (spec 4.11).
import { X509Certificate } from "node:crypto";
import type { DetailedPeerCertificate } from "node:tls";

/** At most this many certificates are read from what a client sends (a path-building bound). */
const MAX_PRESENTED = 10;
/** Longest path tried (leaf + intermediates + root), whatever a root's admission allows. */
const MAX_PATH = 8;
const CLIENT_AUTH = "1.3.6.1.5.5.7.3.2";
const ANY_EKU = "2.5.29.37.0";

export interface PresentedChain {
  leaf: X509Certificate;
  /** The other certificates the client sent, in the order it sent them. */
  intermediates: X509Certificate[];
}

/**
 * The chain from the TLS socket (getPeerCertificate(true)): undefined when the client sent no
 * certificate, "malformed" when it cannot be read.
 */
export function presentedChain(peer: DetailedPeerCertificate | undefined): PresentedChain | undefined | "malformed" {
  if (!peer || !peer.raw) return undefined;
  try {
    const leaf = new X509Certificate(peer.raw);
    const intermediates: X509Certificate[] = [];
    const seen = new Set([leaf.fingerprint256]);
    // Node links each certificate to its issuer; a self-signed one links to itself.
    for (let c = peer.issuerCertificate; c && c.raw && intermediates.length < MAX_PRESENTED; c = c.issuerCertificate) {
      const x = new X509Certificate(c.raw);
      if (seen.has(x.fingerprint256)) break;
      seen.add(x.fingerprint256);
      intermediates.push(x);
    }
    return { leaf, intermediates };
  } catch {
    return "malformed";
  }
}

/** A configured trust anchor with the admission rules that apply to certificates under it. */
export interface TrustRoot {
  cert: X509Certificate;
  /** Project the root admits certificates for; null: every project of its organization. */
  projectId: string | null;
  subjectMatches?: RegExp;
  /** Longest accepted path, counting the leaf and the root. */
  maxChain?: number;
}

const times = new WeakMap<X509Certificate, { from: number; to: number }>();

/** The validity window in Unix seconds. */
export function validity(c: X509Certificate): { from: number; to: number } {
  let t = times.get(c);
  if (!t) {
    t = { from: Math.floor(Date.parse(c.validFrom) / 1000), to: Math.floor(Date.parse(c.validTo) / 1000) };
    times.set(c, t);
  }
  return t;
}

const within = (c: X509Certificate, now: number) => {
  const { from, to } = validity(c);
  return now >= from && now <= to;
};

export type PathResult =
  | { ok: true; root: TrustRoot; path: X509Certificate[]; notAfter: number }
  | { ok: false; reason: "no_path" | "not_valid_now" | "not_a_client_certificate" | "admission" };

/** Bounds the depth-first search: a client sending many cross-linked certificates gets "no path". */
const MAX_STEPS = 200;

/**
 * Builds and checks a path leaf → presented intermediates → one of `roots`. Every certificate on
 * it must be inside its validity window at `now`; intermediates must be CAs; the leaf must not be
 * a CA and, when it lists extended key usages, must allow client authentication. The root's
 * admission rules then apply. The first root whose path passes everything wins.
 */
export function verifyPath(chain: PresentedChain, roots: TrustRoot[], now: number): PathResult {
  const { leaf } = chain;
  const eku = leaf.keyUsage; // Node's name for the extended key usage OIDs
  if (leaf.ca || (eku && eku.length && !eku.includes(CLIENT_AUTH) && !eku.includes(ANY_EKU))) return { ok: false, reason: "not_a_client_certificate" };
  const intermediates = chain.intermediates.filter((c) => c.ca);
  // Each (issuer, child) signature is checked at most once per call.
  const checked = new Map<X509Certificate, Map<X509Certificate, boolean>>();
  const issues = (issuer: X509Certificate, child: X509Certificate) => {
    let row = checked.get(child);
    if (!row) checked.set(child, (row = new Map()));
    let r = row.get(issuer);
    if (r === undefined) row.set(issuer, (r = child.checkIssued(issuer) && child.verify(issuer.publicKey)));
    return r;
  };
  let failure: "no_path" | "not_valid_now" | "admission" = "no_path";
  let steps = 0;

  // Depth-first over issuers (a client may send cross-signed or unrelated extras).
  const extend = (path: X509Certificate[]): PathResult | undefined => {
    if (++steps > MAX_STEPS) return undefined;
    const tip = path[path.length - 1]!;
    for (const root of roots) {
      if (!issues(root.cert, tip)) continue;
      const full = [...path, root.cert];
      if (!full.every((c) => within(c, now))) {
        failure = "not_valid_now";
        continue;
      }
      if ((root.maxChain !== undefined && full.length > root.maxChain) || (root.subjectMatches && !root.subjectMatches.test(distinguishedName(leaf.subject)))) {
        if (failure === "no_path") failure = "admission";
        continue;
      }
      return { ok: true, root, path: full, notAfter: Math.min(...full.map((c) => validity(c).to)) };
    }
    if (path.length + 1 >= MAX_PATH) return undefined;
    for (const next of intermediates) {
      if (path.includes(next) || !issues(next, tip)) continue;
      const found = extend([...path, next]);
      if (found) return found;
    }
    return undefined;
  };
  return extend([leaf]) ?? { ok: false, reason: failure };
}

/**
 * A distinguished name as one string, most specific first, comma-separated (RFC 4514 order):
 * "CN=svc.acme.test,O=Acme". Node gives the attributes one per line in certificate order.
 */
export function distinguishedName(nodeSubject: string): string {
  return nodeSubject.split("\n").filter(Boolean).reverse().join(",");
}

function commonName(nodeSubject: string): string {
  const cn = nodeSubject.split("\n").filter((l) => l.startsWith("CN=")).pop();
  return cn ? cn.slice(3) : "";
}

/** Node's subjectAltName string ("DNS:a, URI:spiffe://x, IP Address:1.2.3.4"), by kind. Quoted values are JSON strings. */
function alternativeNames(san: string | undefined): Record<"dns" | "uri" | "email" | "ip", string[]> {
  const out = { dns: [] as string[], uri: [] as string[], email: [] as string[], ip: [] as string[] };
  if (!san) return out;
  const kinds: Record<string, keyof typeof out> = { DNS: "dns", URI: "uri", email: "email", "IP Address": "ip" };
  for (const m of san.matchAll(/([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:, |$)/g)) {
    const kind = kinds[m[1]!.trim()];
    if (!kind) continue;
    let value = m[2]!;
    if (value.startsWith('"')) {
      try {
        value = JSON.parse(value);
      } catch {
        continue;
      }
    }
    out[kind].push(value);
  }
  return out;
}

/**
 * What an X.509 provider's CEL sees as `assertion`: the leaf's subject and issuer (DN strings and
 * common names), serial number, SHA-256 fingerprint, subject alternative names by kind, the SPIFFE
 * ID (the first spiffe:// URI name, "" when none), and the validity window in Unix seconds.
 */
export function certificateAssertion(leaf: X509Certificate): Record<string, unknown> {
  const san = alternativeNames(leaf.subjectAltName);
  const { from, to } = validity(leaf);
  return {
    subject: distinguishedName(leaf.subject),
    subject_cn: commonName(leaf.subject),
    issuer: distinguishedName(leaf.issuer),
    issuer_cn: commonName(leaf.issuer),
    serial_number: leaf.serialNumber.toLowerCase(),
    fingerprint_sha256: leaf.fingerprint256.replaceAll(":", "").toLowerCase(),
    san_dns: san.dns,
    san_uri: san.uri,
    san_email: san.email,
    san_ip: san.ip,
    spiffe_id: san.uri.find((u) => u.startsWith("spiffe://")) ?? "",
    not_before: from,
    not_after: to,
  };
}

/** Every certificate in a PEM text (a bundle may hold several). Throws when none parses. */
export function certificatesFromPem(pem: string): X509Certificate[] {
  const blocks = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (!blocks.length) throw new Error("holds no PEM certificate");
  return blocks.map((b) => new X509Certificate(b));
}

// Fetching a caller-supplied URL (token counting's image_url/file_url, moderation images, video
// image_url references, JWKS URLs) without letting
// callers use the server to reach its own network: unless allowed, addresses in loopback,
// private, link-local (cloud metadata), CGNAT, multicast and reserved ranges are refused. The
// check runs on the address actually connected to (a DNS lookup hook, so a name that re-resolves
// to 127.0.0.1 is caught) and again on every redirect hop.
import dns from "node:dns";
import http from "node:http";
import https from "node:https";
import net from "node:net";

export interface FetchPolicy {
  timeoutMs: number;
  maxBytes: number;
  /** Allow loopback/private targets (tests, or a deployment that serves images on its LAN). */
  allowPrivate: boolean;
  maxRedirects?: number;
}

const blocked = new net.BlockList();
for (const [a, p] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const)
  blocked.addSubnet(a, p, "ipv4");
for (const [a, p] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
  ["64:ff9b::", 96],
] as const)
  blocked.addSubnet(a, p, "ipv6");

export function isBlockedAddress(address: string): boolean {
  const v = net.isIP(address);
  if (v === 4) return blocked.check(address, "ipv4");
  if (v === 6) {
    const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
    if (mapped) return blocked.check(mapped[1], "ipv4");
    return blocked.check(address, "ipv6");
  }
  return true;
}

/** Why a URL could not be fetched; callers turn it into their own 4xx (naming their field). */
export class FetchUrlError extends Error {
  constructor(
    readonly status: 400 | 413,
    message: string,
    readonly code: "invalid_url" | "payload_too_large",
  ) {
    super(message);
  }
}

const fail = (url: string, reason: string, status: 400 | 413 = 400) =>
  new FetchUrlError(status, `Could not fetch '${url}': ${reason}.`, status === 413 ? "payload_too_large" : "invalid_url");

function guardedLookup(allowPrivate: boolean): net.LookupFunction {
  return (hostname, options, callback) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return (callback as any)(err);
      const list = (addresses as dns.LookupAddress[]).filter((a) => allowPrivate || !isBlockedAddress(a.address));
      if (!list.length) return (callback as any)(Object.assign(new Error("the host resolves only to private or reserved addresses"), { code: "EBLOCKED" }));
      if ((options as dns.LookupOptions).all) (callback as any)(null, list);
      else (callback as any)(null, list[0].address, list[0].family);
    });
  };
}

export async function fetchUrl(url: string, policy: FetchPolicy): Promise<Uint8Array> {
  const deadline = Date.now() + policy.timeoutMs;
  let current = url;
  for (let hop = 0; hop <= (policy.maxRedirects ?? 3); hop++) {
    let u: URL;
    try {
      u = new URL(current);
    } catch {
      throw fail(url, "not a valid URL");
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") throw fail(url, `the scheme '${u.protocol}' is not supported (http or https only)`);
    const host = u.hostname.replace(/^\[|\]$/g, "");
    if (net.isIP(host) && !policy.allowPrivate && isBlockedAddress(host)) throw fail(url, "the address is private or reserved");
    const res = await get(u, Math.max(1, deadline - Date.now()), policy, url);
    if (res.redirect) {
      current = new URL(res.redirect, u).toString();
      continue;
    }
    return res.body!;
  }
  throw fail(url, "too many redirects");
}

function get(u: URL, timeoutMs: number, policy: FetchPolicy, original: string): Promise<{ redirect?: string; body?: Uint8Array }> {
  return new Promise((resolve, reject) => {
    const mod = u.protocol === "https:" ? https : http;
    const req = mod.get(u, { lookup: guardedLookup(policy.allowPrivate), timeout: timeoutMs, headers: { "user-agent": "atrium" } }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        return resolve({ redirect: res.headers.location });
      }
      if (status < 200 || status >= 300) {
        res.resume();
        return reject(fail(original, `HTTP ${status}`));
      }
      const declared = Number(res.headers["content-length"] ?? NaN);
      if (declared > policy.maxBytes) {
        res.destroy();
        return reject(fail(original, `larger than ${policy.maxBytes} bytes`, 413));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on("data", (c: Buffer) => {
        size += c.length;
        if (size > policy.maxBytes) {
          res.destroy();
          reject(fail(original, `larger than ${policy.maxBytes} bytes`, 413));
        } else chunks.push(c);
      });
      res.on("end", () => resolve({ body: new Uint8Array(Buffer.concat(chunks)) }));
      res.on("error", (e) => reject(fail(original, e.message)));
    });
    const timer = setTimeout(() => req.destroy(Object.assign(new Error(`timed out after ${policy.timeoutMs} ms`), { code: "ETIMEDOUT" })), timeoutMs);
    req.on("close", () => clearTimeout(timer));
    req.on("timeout", () => req.destroy(Object.assign(new Error(`timed out after ${policy.timeoutMs} ms`), { code: "ETIMEDOUT" })));
    req.on("error", (e: NodeJS.ErrnoException) => reject(fail(original, e.code === "EBLOCKED" ? "the host resolves only to private or reserved addresses" : e.message)));
  });
}

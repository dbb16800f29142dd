// A read-mostly Headers view over Node's already-parsed request headers. Building a WHATWG
// Headers object validates and copies every header on every request; REST handlers only read a
// few, so this wraps the object Node gives us instead.
import type { IncomingHttpHeaders } from "node:http";

export class NodeHeaders {
  constructor(private readonly raw: IncomingHttpHeaders) {}
  get(name: string): string | null {
    const v = this.raw[name.toLowerCase()];
    if (v === undefined) return null;
    return Array.isArray(v) ? v.join(", ") : v;
  }
  has(name: string): boolean {
    return this.raw[name.toLowerCase()] !== undefined;
  }
  forEach(cb: (value: string, key: string) => void) {
    for (const k of Object.keys(this.raw)) {
      if (k.startsWith(":")) continue;
      const v = this.get(k);
      if (v !== null) cb(v, k);
    }
  }
  *entries(): IterableIterator<[string, string]> {
    for (const k of Object.keys(this.raw)) {
      if (k.startsWith(":")) continue;
      const v = this.get(k);
      if (v !== null) yield [k, v];
    }
  }
  [Symbol.iterator]() {
    return this.entries();
  }
  set(): never {
    throw new Error("request headers are read-only");
  }
}

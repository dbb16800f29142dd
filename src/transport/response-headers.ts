// The response headers of a REST or lean Connect call. Handlers and the auth wrapper write a handful
// (vendor-organization, the six x-ratelimit-* headers, a poll hint) that the transport copies onto
// the reply. Node's WHATWG Headers validates and normalises each name and value and keeps them
// sorted, which cost ~1.5 µs a header, about 10 µs a call (bench/limits.bench.ts); Node validates
// them again when it writes the reply anyway. This is the same interface over a Map of lower-cased
// names, with Headers' semantics for append (values joined by ", ") and set-cookie.
export class ResponseHeaders implements Headers {
  private readonly map = new Map<string, string>();
  private cookies: string[] | undefined;

  append(name: string, value: string): void {
    const k = name.toLowerCase();
    const v = String(value).trim();
    if (k === "set-cookie") (this.cookies ??= []).push(v);
    const old = this.map.get(k);
    this.map.set(k, old === undefined ? v : `${old}, ${v}`);
  }
  set(name: string, value: string): void {
    const k = name.toLowerCase();
    const v = String(value).trim();
    if (k === "set-cookie") this.cookies = [v];
    this.map.set(k, v);
  }
  get(name: string): string | null {
    return this.map.get(name.toLowerCase()) ?? null;
  }
  has(name: string): boolean {
    return this.map.has(name.toLowerCase());
  }
  delete(name: string): void {
    const k = name.toLowerCase();
    if (k === "set-cookie") this.cookies = undefined;
    this.map.delete(k);
  }
  getSetCookie(): string[] {
    return [...(this.cookies ?? [])];
  }
  forEach(cb: (value: string, key: string, parent: Headers) => void, thisArg?: unknown): void {
    for (const [k, v] of this.map) cb.call(thisArg, v, k, this);
  }
  entries(): HeadersIterator<[string, string]> {
    return this.map.entries() as HeadersIterator<[string, string]>;
  }
  keys(): HeadersIterator<string> {
    return this.map.keys() as HeadersIterator<string>;
  }
  values(): HeadersIterator<string> {
    return this.map.values() as HeadersIterator<string>;
  }
  [Symbol.iterator](): HeadersIterator<[string, string]> {
    return this.entries();
  }
}

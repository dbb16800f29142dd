// Bounded caches with a time to live, on lru-cache. Values may be `undefined` (a remembered
// miss, e.g. "no such key"), which lru-cache cannot hold directly, so each is boxed.
import { LRUCache } from "lru-cache";

export class TtlCache<V> {
  private readonly lru: LRUCache<string, { value: V }>;

  constructor(opts: { max: number; ttlMs: number }) {
    this.lru = new LRUCache({ max: opts.max, ttl: opts.ttlMs });
  }

  /** `{ value }` while fresh (value may be undefined: a cached miss), else undefined. */
  lookup(key: string): { value: V } | undefined {
    return this.lru.get(key);
  }

  set(key: string, value: V): void {
    this.lru.set(key, { value });
  }

  delete(key: string): void {
    this.lru.delete(key);
  }
}

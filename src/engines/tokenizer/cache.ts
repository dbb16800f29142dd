/**
 * A bounded piece → token-count cache that never allocates on the hot path.
 *
 * The pre-tokenizer's pieces repeat a lot (" the", ",", "\n    ", " return"), so counting mostly
 * looks counts up. A JS `Map<string, number>` would need every piece as a string (allocation, GC)
 * and pointer-chasing probes; this table is keyed by the piece's place in the input text:
 * FNV-1a hash of its UTF-16 units, open addressing in one Int32Array
 * (4 int32 per slot: hash, offset + 1 in the pool, length, count), the piece's UTF-16 units copied
 * into a Uint16Array pool to compare against on a hash match.
 *
 * Short ASCII pieces (2–8 characters: " the", "();", "    ") are most lookups on prose and code,
 * and they have a table of their own where the key IS the text, seven bits a character in two
 * int32, with the count in the second's top bits: one probe of 8 bytes, no hash of the units and
 * no pool to compare against, in a table small enough (256 KiB by default) to stay in the CPU's
 * L2 cache. A quarter of `capacity` goes to it.
 *
 * Bounded: at most `capacity` entries (slots = 2 × entries, load ≤ 0.5) and
 * `capacity × avgPieceUnits` pooled units; pieces longer than `maxPieceUnits` are not cached.
 * When either is full the table is cleared at once (a 2–4 MB memset, well under a millisecond).
 * That is cruder than LRU, but with pieces' Zipf-like frequencies the frequent ones are back
 * after one miss each, and it costs nothing per hit. Memory: capacity × (32 + 2 × avgPieceUnits)
 * bytes, 4 MB at the default 65 536 × 16.
 */
export class PieceCountCache {
  readonly capacity: number;
  readonly maxPieceUnits: number;
  private readonly slots: Int32Array;
  private readonly mask: number;
  private readonly pool: Uint16Array;
  private poolUsed = 0;
  private entries = 0;
  /** Statistics since creation (the bench prints them). */
  hits = 0;
  misses = 0;
  clears = 0;

  private readonly longCapacity: number;
  private readonly shortCapacity: number;
  private readonly shortSlots: Int32Array;
  private readonly shortMask: number;
  private shortEntries = 0;

  constructor(capacity = 65_536, maxPieceUnits = 32, avgPieceUnits = 16) {
    if (!Number.isInteger(capacity) || capacity < 16) throw new RangeError("capacity must be an integer ≥ 16");
    this.capacity = capacity;
    this.shortCapacity = capacity >> 2;
    this.longCapacity = capacity - this.shortCapacity;
    let cap = 16;
    while (cap < this.longCapacity * 2) cap <<= 1;
    this.maxPieceUnits = maxPieceUnits;
    this.mask = cap - 1;
    this.slots = new Int32Array(cap * 4);
    this.pool = new Uint16Array(Math.max(this.longCapacity * avgPieceUnits, maxPieceUnits));
    cap = 16;
    while (cap < this.shortCapacity * 2) cap <<= 1;
    this.shortMask = cap - 1;
    this.shortSlots = new Int32Array(cap * 2);
  }

  /** Bytes held by the tables (fixed at construction). */
  get byteSize(): number {
    return this.slots.byteLength + this.pool.byteLength + this.shortSlots.byteLength;
  }

  get size(): number {
    return this.entries + this.shortEntries;
  }

  /**
   * The count cached for the short ASCII piece keyed (k0, k1), or -1. The key: k0 = length << 28 |
   * characters 0–3, k1 = characters 4–7, seven bits each (k0 is never 0: it holds the length).
   */
  getShort(k0: number, k1: number): number {
    const slots = this.shortSlots;
    const mask = this.shortMask;
    let i = shortHash(k0, k1) & mask;
    for (;;) {
      const w0 = slots[i * 2]!;
      if (w0 === k0) {
        const w1 = slots[i * 2 + 1]!;
        if ((w1 & SHORT_KEY_MASK) === k1) {
          this.hits++;
          return w1 >>> 28;
        }
      } else if (w0 === 0) {
        this.misses++;
        return -1;
      }
      i = (i + 1) & mask;
    }
  }

  /** Caches `count` (1–8) for the short ASCII piece keyed (k0, k1). */
  setShort(k0: number, k1: number, count: number): void {
    if (this.shortEntries >= this.shortCapacity) {
      this.clears++;
      this.shortSlots.fill(0);
      this.shortEntries = 0;
    }
    const slots = this.shortSlots;
    const mask = this.shortMask;
    let i = shortHash(k0, k1) & mask;
    while (slots[i * 2] !== 0) i = (i + 1) & mask;
    slots[i * 2] = k0;
    slots[i * 2 + 1] = k1 | (count << 28);
    this.shortEntries++;
  }

  /**
   * The count cached for text[start, end) whose hash is `h`, or -1. Only pieces of length ≤
   * maxPieceUnits can be cached; callers skip the lookup for longer ones.
   */
  get(text: string, start: number, end: number, h: number): number {
    const slots = this.slots;
    const mask = this.mask;
    const len = end - start;
    let i = h & mask;
    for (;;) {
      const b = i << 2;
      const off1 = slots[b + 1]!;
      if (off1 === 0) {
        this.misses++;
        return -1;
      }
      if (slots[b] === h && slots[b + 2] === len) {
        const pool = this.pool;
        const off = off1 - 1;
        let k = 0;
        while (k < len && pool[off + k] === text.charCodeAt(start + k)) k++;
        if (k === len) {
          this.hits++;
          return slots[b + 3]!;
        }
      }
      i = (i + 1) & mask;
    }
  }

  set(text: string, start: number, end: number, h: number, count: number): void {
    const len = end - start;
    if (len > this.maxPieceUnits) return;
    if (this.entries >= this.longCapacity || this.poolUsed + len > this.pool.length) this.clear();
    const slots = this.slots;
    const mask = this.mask;
    let i = h & mask;
    while (slots[(i << 2) + 1] !== 0) i = (i + 1) & mask;
    const b = i << 2;
    const off = this.poolUsed;
    const pool = this.pool;
    for (let k = 0; k < len; k++) pool[off + k] = text.charCodeAt(start + k);
    this.poolUsed += len;
    slots[b] = h;
    slots[b + 1] = off + 1;
    slots[b + 2] = len;
    slots[b + 3] = count;
    this.entries++;
  }

  clear(): void {
    if (this.entries > 0) this.clears++;
    this.slots.fill(0);
    this.poolUsed = 0;
    this.entries = 0;
  }
}

/** Longest piece, in characters, with a short key. */
export const SHORT_PIECE_MAX = 8;
const SHORT_KEY_MASK = 0x0fffffff;

function shortHash(k0: number, k1: number): number {
  const h = Math.imul(k0 ^ Math.imul(k1, 0x85ebca6b), 0x9e3779b1);
  return h ^ (h >>> 16);
}

/** FNV-1a over the UTF-16 units text[start, end). */
export function hashUnits(text: string, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h | 0;
}

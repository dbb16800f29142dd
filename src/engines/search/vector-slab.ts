/**
 * A store's vectors in one shared WebAssembly memory, with a SIMD dot product over it.
 *
 * Why WebAssembly: the HNSW graph (hnsw.ts) computes ~10,000 dot products of 512 floats per
 * insert; V8's scalar loop does one in ~0.4 µs, the f32x4 kernel below in a fraction of that, which
 * is what makes a graph build over 100k vectors take about as long as a C++ library's. Why shared:
 * the build runs in a worker thread that reads these very vectors (a posted shared memory is the
 * same memory), so neither the build nor the graph holds a copy of them.
 *
 * Layout: bytes [0, stride) are the calling thread's query scratch; slot `s` sits at
 * `base + s · stride` with `stride = dim · 4` and `base` = stride rounded up to 16. Only the main
 * thread writes the scratch (searches); a build reads slots only.
 */
const PAGE = 65536;
/** 32-bit addressing: 4 GiB at most. */
const MAX_PAGES = 65536;

/**
 * `dot(a, b, n)`: Σ f32 a[i]·b[i] for n floats at byte addresses a and b, four f32x4 accumulators
 * over 16 floats a step (independent additions keep the SIMD unit busy), then a scalar tail.
 * Hand-assembled (the module is 291 bytes; no toolchain needed), checked against the JavaScript
 * dot product in test/engines/search/hnsw.test.ts.
 */
const DOT_MODULE = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00, // \0asm, version 1
  // type section: one type, (i32 i32 i32) -> f32
  0x01, 0x08, 0x01, 0x60, 0x03, 0x7f, 0x7f, 0x7f, 0x01, 0x7d,
  // import section: "e" "m", a shared memory, min 1 page, max 65536 pages
  0x02, 0x0b, 0x01, 0x01, 0x65, 0x01, 0x6d, 0x02, 0x03, 0x01, 0x80, 0x80, 0x04,
  // function section: one function of type 0
  0x03, 0x02, 0x01, 0x00,
  // export section: "dot" = function 0
  0x07, 0x07, 0x01, 0x03, 0x64, 0x6f, 0x74, 0x00, 0x00,
  // code section (244 bytes): one body of 241 bytes
  0x0a, 0xf4, 0x01, 0x01, 0xf1, 0x01,
  // locals: 2 × i32 (3 end16, 4 end), 4 × v128 (5–8 acc0–acc3), 1 × f32 (9 sum)
  0x03, 0x02, 0x7f, 0x04, 0x7b, 0x01, 0x7d,
  // end = a + n·4
  0x20, 0x00, 0x20, 0x02, 0x41, 0x02, 0x74, 0x6a, 0x21, 0x04,
  // end16 = a + (n & ~15)·4
  0x20, 0x00, 0x20, 0x02, 0x41, 0x70, 0x71, 0x41, 0x02, 0x74, 0x6a, 0x21, 0x03,
  // block { loop { if a >= end16 break
  0x02, 0x40, 0x03, 0x40, 0x20, 0x00, 0x20, 0x03, 0x4f, 0x0d, 0x01,
  // accK += load(a + 16K) · load(b + 16K), K = 0..3
  0x20, 0x05, 0x20, 0x00, 0xfd, 0x00, 0x00, 0x00, 0x20, 0x01, 0xfd, 0x00, 0x00, 0x00, 0xfd, 0xe6, 0x01, 0xfd, 0xe4, 0x01, 0x21, 0x05,
  0x20, 0x06, 0x20, 0x00, 0xfd, 0x00, 0x00, 0x10, 0x20, 0x01, 0xfd, 0x00, 0x00, 0x10, 0xfd, 0xe6, 0x01, 0xfd, 0xe4, 0x01, 0x21, 0x06,
  0x20, 0x07, 0x20, 0x00, 0xfd, 0x00, 0x00, 0x20, 0x20, 0x01, 0xfd, 0x00, 0x00, 0x20, 0xfd, 0xe6, 0x01, 0xfd, 0xe4, 0x01, 0x21, 0x07,
  0x20, 0x08, 0x20, 0x00, 0xfd, 0x00, 0x00, 0x30, 0x20, 0x01, 0xfd, 0x00, 0x00, 0x30, 0xfd, 0xe6, 0x01, 0xfd, 0xe4, 0x01, 0x21, 0x08,
  // a += 64; b += 64; continue } }
  0x20, 0x00, 0x41, 0xc0, 0x00, 0x6a, 0x21, 0x00, 0x20, 0x01, 0x41, 0xc0, 0x00, 0x6a, 0x21, 0x01, 0x0c, 0x00, 0x0b, 0x0b,
  // acc0 = (acc0 + acc1) + (acc2 + acc3); sum = acc0[0] + acc0[1] + acc0[2] + acc0[3]
  0x20, 0x05, 0x20, 0x06, 0xfd, 0xe4, 0x01, 0x20, 0x07, 0x20, 0x08, 0xfd, 0xe4, 0x01, 0xfd, 0xe4, 0x01, 0x21, 0x05,
  0x20, 0x05, 0xfd, 0x1f, 0x00, 0x20, 0x05, 0xfd, 0x1f, 0x01, 0x92, 0x20, 0x05, 0xfd, 0x1f, 0x02, 0x92, 0x20, 0x05, 0xfd, 0x1f, 0x03, 0x92, 0x21, 0x09,
  // block { loop { if a >= end break; sum += f32(a) · f32(b); a += 4; b += 4 } }
  0x02, 0x40, 0x03, 0x40, 0x20, 0x00, 0x20, 0x04, 0x4f, 0x0d, 0x01,
  0x20, 0x09, 0x20, 0x00, 0x2a, 0x02, 0x00, 0x20, 0x01, 0x2a, 0x02, 0x00, 0x94, 0x92, 0x21, 0x09,
  0x20, 0x00, 0x41, 0x04, 0x6a, 0x21, 0x00, 0x20, 0x01, 0x41, 0x04, 0x6a, 0x21, 0x01, 0x0c, 0x00, 0x0b, 0x0b,
  // return sum
  0x20, 0x09, 0x0b,
]);

let compiled: WebAssembly.Module | undefined;

/** The dot product over a shared memory: byte addresses of two vectors of `n` floats. */
export type DotKernel = (a: number, b: number, n: number) => number;

function kernelFor(memory: WebAssembly.Memory): DotKernel {
  compiled ??= new WebAssembly.Module(DOT_MODULE);
  const instance = new WebAssembly.Instance(compiled, { e: { m: memory } });
  return instance.exports.dot as DotKernel;
}

/** What a build worker needs to read a slab: it is posted as is (the memory is shared). */
export interface SlabHandle {
  memory: WebAssembly.Memory;
  dim: number;
}

export class VectorSlab {
  readonly dim: number;
  /** Bytes from one slot to the next. */
  readonly stride: number;
  /** Byte address of slot 0. */
  readonly base: number;
  readonly dot: DotKernel;
  /** The slots' floats: slot `s` is `vectors[s·dim … (s+1)·dim)`. Replaced when the slab grows. */
  vectors!: Float32Array;
  /** The query scratch (main thread only). */
  scratch!: Float32Array;
  private memory: WebAssembly.Memory;

  /** A slab of `capacity` slots (grown as needed). */
  static create(dim: number, capacity: number): VectorSlab {
    const base = Math.ceil((dim * 4) / 16) * 16;
    const pages = Math.max(1, Math.ceil((base + capacity * dim * 4) / PAGE));
    if (pages > MAX_PAGES) throw new RangeError(`${capacity} vectors of ${dim} dimensions exceed the 4 GiB a store's vectors may take`);
    return new VectorSlab(new WebAssembly.Memory({ initial: pages, maximum: MAX_PAGES, shared: true }), dim);
  }

  /** The slab a handle names (in a build worker). */
  static attach(handle: SlabHandle): VectorSlab {
    return new VectorSlab(handle.memory, handle.dim);
  }

  private constructor(memory: WebAssembly.Memory, dim: number) {
    this.memory = memory;
    this.dim = dim;
    this.stride = dim * 4;
    this.base = Math.ceil(this.stride / 16) * 16;
    this.dot = kernelFor(memory);
    this.view();
  }

  get handle(): SlabHandle {
    return { memory: this.memory, dim: this.dim };
  }

  /** Slots the memory holds now. */
  get capacity(): number {
    return Math.floor((this.memory.buffer.byteLength - this.base) / this.stride);
  }

  /** Bytes of memory the slab holds. */
  get bytes(): number {
    return this.memory.buffer.byteLength;
  }

  /** Makes room for `slots` slots (in place: a shared memory grows without moving). */
  reserve(slots: number): void {
    if (slots <= this.capacity) return;
    const want = Math.ceil((this.base + Math.max(slots, Math.ceil(this.capacity * 1.5)) * this.stride) / PAGE);
    const need = Math.ceil((this.base + slots * this.stride) / PAGE);
    const have = this.memory.buffer.byteLength / PAGE;
    if (need > MAX_PAGES) throw new RangeError(`${slots} vectors of ${this.dim} dimensions exceed the 4 GiB a store's vectors may take`);
    this.memory.grow(Math.min(MAX_PAGES, want) - have);
    this.view();
  }

  /** Byte address of a slot. */
  address(slot: number): number {
    return this.base + slot * this.stride;
  }

  private view(): void {
    const buffer = this.memory.buffer;
    this.scratch = new Float32Array(buffer, 0, this.dim);
    this.vectors = new Float32Array(buffer, this.base, Math.floor((buffer.byteLength - this.base) / this.stride) * this.dim);
  }
}

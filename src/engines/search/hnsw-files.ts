/**
 * The HNSW graphs kept beside the database, one `<ord>.graph` per store (dense.ts builds them):
 * the file format, a dropped store's graph going with it, and a start-up sweep that removes what
 * nothing owns (with any `<ord>.hnsw` file: hnswlib's format, which this engine does not read).
 *
 * Format (little-endian): a 40-byte header — "ATRGRPH1", then u32 dim, m, count, i32 entry,
 * maxLevel, u32 upper ints, two reserved — then the node labels (f64 × count), levels (u8 ×
 * count, padded to 4 bytes), level-0 links (i32 × count·(2m + 1)) and the upper levels' links
 * (i32 × upper ints). A file is checked whole before use: a torn or foreign file is refused (the
 * store rebuilds its graph), never trusted into an out-of-range link.
 */
import { closeSync, openSync, readdirSync, statSync, unlinkSync, writeSync } from "node:fs";
import { open } from "node:fs/promises";
import { join } from "node:path";
import type { GraphParts } from "./hnsw.js";

/** A build's temporary file older than this is a leftover of a process that died mid-build. */
const STALE_BUILD_MS = 3600_000;
const MAGIC = "ATRGRPH1";
const HEADER = 40;

export function graphFileName(ord: number): string {
  return `${ord}.graph`;
}

/** Deletes a store's kept graph. */
export function removeGraphFile(dir: string, ord: number): void {
  try {
    unlinkSync(join(dir, graphFileName(ord)));
  } catch {
    // never built
  }
}

/** Deletes graphs of stores that no longer exist (not in `liveOrds()`), build leftovers older than an hour, and library-format graphs. */
export function sweepGraphFiles(dir: string, liveOrds: () => Set<number>): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  const ords = liveOrds();
  for (const name of names) {
    const m = /^(\d+)\.(graph|hnsw)(\.tmp-.*)?$/.exec(name);
    if (!m) continue;
    const file = join(dir, name);
    try {
      if (m[2] === "hnsw" || (m[3] ? Date.now() - statSync(file).mtimeMs > STALE_BUILD_MS : !ords.has(Number(m[1])))) unlinkSync(file);
    } catch {
      // raced with another process
    }
  }
}

const pad4 = (n: number) => Math.ceil(n / 4) * 4;

/** Writes a graph file (a build worker writes it under a temporary name), section by section. */
export function writeGraphFile(file: string, g: GraphParts): void {
  const header = Buffer.alloc(HEADER);
  header.write(MAGIC, 0, "latin1");
  [g.dim, g.m, g.count, g.entry, g.maxLevel, g.upper.length, 0, 0].forEach((v, i) => header.writeInt32LE(v, 8 + i * 4));
  const bytes = (a: Float64Array | Uint8Array | Int32Array, n: number) => new Uint8Array(a.buffer, a.byteOffset, n * a.BYTES_PER_ELEMENT);
  const fd = openSync(file, "w");
  try {
    for (const part of [
      header,
      bytes(g.labels, g.count),
      bytes(g.levels, g.count),
      new Uint8Array(pad4(g.count) - g.count),
      bytes(g.links0, g.links0.length),
      bytes(g.upper, g.upper.length),
    ]) {
      for (let off = 0; off < part.length; ) off += writeSync(fd, part, off);
    }
  } finally {
    closeSync(fd);
  }
}

/** Reads and checks a graph file; throws when it is torn, foreign or inconsistent. */
export async function readGraphFile(file: string): Promise<GraphParts> {
  // Read into a fresh buffer at offset 0, so every section is aligned for its typed array.
  const fh = await open(file);
  let data: ArrayBuffer;
  try {
    const size = (await fh.stat()).size;
    data = new ArrayBuffer(size);
    for (let off = 0; off < size; ) {
      const { bytesRead } = await fh.read(new Uint8Array(data, off), 0, size - off, off);
      if (bytesRead === 0) throw new Error(`${file}: shorter than it was a moment ago`);
      off += bytesRead;
    }
  } finally {
    await fh.close();
  }
  if (data.byteLength < HEADER || Buffer.from(data, 0, 8).toString("latin1") !== MAGIC) throw new Error(`${file}: not a graph file`);
  const view = new DataView(data);
  const [dim, m, count, entry, maxLevel, upperInts] = [0, 1, 2, 3, 4, 5].map((i) => view.getInt32(8 + i * 4, true)) as [number, number, number, number, number, number];
  const bad = (why: string) => new Error(`${file}: ${why}`);
  if (dim < 1 || m < 2 || m > 1024 || count < 1 || upperInts < 0) throw bad("bad header");
  const levelsAt = HEADER + count * 8;
  const links0At = levelsAt + pad4(count);
  const per0 = 2 * m + 1;
  const upperAt = links0At + count * per0 * 4;
  if (data.byteLength !== upperAt + upperInts * 4) throw bad(`${data.byteLength} bytes where the header says ${upperAt + upperInts * 4}`);
  const parts: GraphParts = {
    dim,
    m,
    count,
    entry,
    maxLevel,
    labels: new Float64Array(data, HEADER, count),
    levels: new Uint8Array(data, levelsAt, count),
    links0: new Int32Array(data, links0At, count * per0),
    upper: new Int32Array(data, upperAt, upperInts),
  };
  if (entry < 0 || entry >= count || parts.levels[entry] !== maxLevel) throw bad("bad entry point");
  const checkLinks = (links: Int32Array, off: number, max: number) => {
    const n = links[off]!;
    if (n < 0 || n > max) throw bad("bad link count");
    for (let i = 1; i <= n; i++) {
      const e = links[off + i]!;
      if (e < 0 || e >= count) throw bad("link out of range");
    }
  };
  for (let node = 0; node < count; node++) checkLinks(parts.links0, node * per0, 2 * m);
  let off = 0;
  for (let node = 0; node < count; node++) {
    const top = parts.levels[node]!;
    if (top > maxLevel) throw bad("level above the entry's");
    for (let l = 0; l < top; l++, off += m + 1) {
      if (off + m + 1 > upperInts) throw bad("upper links cut short");
      checkLinks(parts.upper, off, m);
    }
  }
  if (off !== upperInts) throw bad("upper links left over");
  return parts;
}

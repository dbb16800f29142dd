// What a server process holds, read from /proc (Linux): resident memory, open descriptors and
// threads, and the temp files in its data directory. Shared by the fuzz run and the soak.
import { readFileSync, readdirSync, readlinkSync } from "node:fs";
import { join } from "node:path";

export interface ProcessSample {
  rssMb: number;
  fds: number;
  threads: number;
}

export function sampleProcess(pid: number): ProcessSample {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1] ?? 0);
  return { rssMb: field("VmRSS") / 1024, fds: readdirSync(`/proc/${pid}/fd`).length, threads: field("Threads") };
}

/** What each open descriptor points at (`socket:[…]`, a path), for telling which ones leaked. */
export function openFiles(pid: number): string[] {
  const out: string[] = [];
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      out.push(readlinkSync(`/proc/${pid}/fd/${fd}`));
    } catch {
      // closed between the listing and the read
    }
  }
  return out;
}

/** Files in the data directory's `tmp/` (blobs being written). */
export function tempFiles(dataDir: string): string[] {
  try {
    return readdirSync(join(dataDir, "tmp"));
  } catch {
    return [];
  }
}

/** The entries of `after` not in `before` (a multiset difference), for naming what leaked. */
export function added(before: string[], after: string[]): string[] {
  const left = new Map<string, number>();
  for (const x of before) left.set(x, (left.get(x) ?? 0) + 1);
  const out: string[] = [];
  for (const x of after) {
    const n = left.get(x) ?? 0;
    if (n > 0) left.set(x, n - 1);
    else out.push(x);
  }
  return out;
}

/**
 * Resident memory by kind of mapping, from /proc/<pid>/smaps (MiB): WebAssembly memories (the
 * accessible part of a region followed by a guard reservation of 1 GiB or more), glibc's
 * per-thread malloc arenas (anonymous regions on a 64 MiB boundary), the main malloc heap
 * (`[heap]`), file-backed mappings (code, mmapped files such as SQLite's), and the rest of the
 * anonymous memory (V8's heaps, large buffers mmapped on their own).
 */
export function memoryMap(pid: number): Record<"wasm" | "mallocArenas" | "mainHeap" | "files" | "otherAnon", number> {
  const maps: Array<{ start: number; end: number; perms: string; name: string; inode: string; rssKb: number }> = [];
  for (const line of readFileSync(`/proc/${pid}/smaps`, "utf8").split("\n")) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) (\S+) \S+ \S+ (\d+)\s*(.*)$/.exec(line);
    if (head) maps.push({ start: parseInt(head[1]!, 16), end: parseInt(head[2]!, 16), perms: head[3]!, inode: head[4]!, name: head[5]!, rssKb: 0 });
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && maps.length) maps[maps.length - 1]!.rssKb = Number(rss[1]);
  }
  const out = { wasm: 0, mallocArenas: 0, mainHeap: 0, files: 0, otherAnon: 0 };
  maps.forEach((m, i) => {
    const next = maps[i + 1];
    const anon = m.inode === "0" && !m.name;
    let kind: keyof typeof out = "otherAnon";
    if (m.name === "[heap]") kind = "mainHeap";
    else if (!anon && !m.name.startsWith("[")) kind = "files";
    else if (anon && next && next.start === m.end && next.perms.startsWith("---") && next.end - next.start >= 2 ** 30) kind = "wasm";
    else if (anon && m.start % 2 ** 26 === 0) kind = "mallocArenas";
    out[kind] += m.rssKb / 1024;
  });
  return out;
}

const TCP_STATES = ["", "ESTABLISHED", "SYN_SENT", "SYN_RECV", "FIN_WAIT1", "FIN_WAIT2", "TIME_WAIT", "CLOSE", "CLOSE_WAIT", "LAST_ACK", "LISTEN", "CLOSING"];

/** `socket:[inode]` → what it is (`tcp 127.0.0.1:80 → 127.0.0.1:5000 CLOSE_WAIT`, `unix /path`), from /proc/net. */
export function describeSocket(fd: string): string {
  const inode = /^socket:\[(\d+)\]$/.exec(fd)?.[1];
  if (!inode) return fd;
  const addr = (hex: string) => {
    const [ip, port] = hex.split(":");
    const v4 = ip!.length === 8 ? ip!.match(/../g)!.reverse().map((b) => parseInt(b, 16)).join(".") : ip;
    return `${v4}:${parseInt(port!, 16)}`;
  };
  for (const proto of ["tcp", "tcp6", "udp", "udp6"]) {
    let text = "";
    try {
      text = readFileSync(`/proc/net/${proto}`, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[9] === inode) return `${fd} ${proto} ${addr(f[1]!)} → ${addr(f[2]!)} ${proto.startsWith("tcp") ? TCP_STATES[parseInt(f[3]!, 16)] : ""}`.trim();
    }
  }
  const unix = readFileSync("/proc/net/unix", "utf8").split("\n").find((l) => l.trim().split(/\s+/)[6] === inode);
  return unix ? `${fd} unix ${unix.trim().split(/\s+/)[7] ?? "(unnamed)"}` : `${fd} (not in /proc/net)`;
}

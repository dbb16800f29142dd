// GET /readyz: whether this instance should get traffic. Ready means: not shutting down, the record
// store takes a write, the blob store takes a write, the data directory's file system has at least
// ATRIUM_MIN_FREE_DISK_BYTES free, and the job runner is running. Each check
// has a time limit, so a hung disk answers 503 rather than hanging the probe. GET /healthz
// (liveness: the process answers) stays in server.ts and checks nothing else.
import type { FastifyInstance } from "fastify";
import type { BlobStore, RecordStore } from "../storage/types.js";
import { freeBytes } from "../storage/space-reserve.js";

export interface ReadinessOptions {
  records: RecordStore;
  blobs: BlobStore;
  /** Below `minFreeBytes` free on the file system holding `dir`, the instance is not ready. */
  disk?: { dir: string; minFreeBytes: number };
  jobsRunning: () => boolean;
  draining: () => boolean;
  /** Per check. Default 2000 ms. */
  timeoutMs?: number;
}

const PROBE_KEY = "atrium-readyz-probe";

async function withTimeout(p: Promise<unknown>, ms: number): Promise<string> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([p, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)))]);
    return "ok";
  } catch (e) {
    return `failing: ${(e as Error).message}`;
  } finally {
    clearTimeout(timer);
  }
}

async function* oneChunk(): AsyncGenerator<Uint8Array> {
  yield Buffer.from("ok");
}

async function diskCheck(disk: { dir: string; minFreeBytes: number }): Promise<string> {
  try {
    const free = await freeBytes(disk.dir);
    return free >= disk.minFreeBytes ? "ok" : `failing: ${free} bytes free, below ATRIUM_MIN_FREE_DISK_BYTES (${disk.minFreeBytes})`;
  } catch (e) {
    return `failing: ${(e as Error).message}`;
  }
}

export function installReadiness(app: FastifyInstance, o: ReadinessOptions) {
  const ms = o.timeoutMs ?? 2000;
  app.get("/readyz", async (_req, reply) => {
    if (o.draining()) return reply.code(503).send({ status: "shutting_down", checks: {} });
    const [database, blobs, disk] = await Promise.all([
      withTimeout(o.records.setMeta("readyz_probe", String(Date.now())), ms),
      withTimeout(
        o.blobs.put(PROBE_KEY, oneChunk()).then(() => o.blobs.delete(PROBE_KEY)),
        ms,
      ),
      o.disk ? diskCheck(o.disk) : "ok",
    ]);
    const checks = { database, blobs, disk, jobs: o.jobsRunning() ? "ok" : "failing: the job runner is not running" };
    const ready = Object.values(checks).every((c) => c === "ok");
    return reply.code(ready ? 200 : 503).send({ status: ready ? "ok" : "not_ready", checks });
  });
}

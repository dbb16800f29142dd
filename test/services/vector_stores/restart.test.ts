// Crash safety of ingestion: a server is SIGKILLed in the middle of a file
// batch; a second server on the same data directory takes the interrupted jobs over (once their
// leases expire), resumes each file from its last checkpoint, and finishes the batch. Every chunk
// is in the index exactly once, and chunks indexed before the crash were not indexed again.
import { spawn, type ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import Database from "better-sqlite3";
import { afterAll, describe, expect, it } from "vitest";
import { API_KEY, ADMIN_KEY, tempDir } from "../../shared/server.js";
import { sdk } from "../../shared/rest.js";
import { longText, upload } from "../../shared/vector-stores.js";
import { sleep } from "../../shared/poll.js";

const ROOT = fileURLToPath(new URL("../../..", import.meta.url));
const dataDir = tempDir("atrium-vs-restart-");
const children: ChildProcess[] = [];

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
  await sleep(100);
  rmSync(dataDir, { recursive: true, force: true });
});

/** The server from sources (`node --import tsx src/main.ts`), so no build is needed. */
async function startServer(): Promise<{ proc: ChildProcess; baseURL: string }> {
  const proc = spawn(process.execPath, ["--import", "tsx", "src/main.ts"], {
    cwd: ROOT,
    env: { ...process.env, ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: API_KEY, ATRIUM_ADMIN_KEY: ADMIN_KEY },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(proc);
  let out = "";
  // Only the start-up lines matter; stop collecting once the address is known.
  proc.stdout!.on("data", (d) => out.length < 1 << 16 && (out += d));
  proc.stderr!.on("data", (d) => (out += d));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out);
    if (m) return { proc, baseURL: `${m[1]}/v1` };
    if (proc.exitCode !== null) throw new Error(`server exited early:\n${out}`);
    if (Date.now() > deadline) throw new Error(`server did not start:\n${out}`);
    await sleep(50);
  }
}

function query<T>(sql: string, ...params: unknown[]): T[] {
  const db = new Database(join(dataDir, "atrium.db"), { readonly: true, fileMustExist: true });
  try {
    db.pragma("busy_timeout = 5000");
    return db.prepare(sql).all(...params) as T[];
  } finally {
    db.close();
  }
}

describe("ingestion across a crash", () => {
  it("kill -9 mid-batch: the next server resumes from checkpoints and indexes nothing twice", async () => {
    const first = await startServer();
    const c1 = sdk(first.baseURL);
    const store = await c1.vectorStores.create({ name: "crash" });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push(await upload(c1, longText(i, 40), `part${i}.txt`)); // ~40 chunks each
    const batch = await c1.vectorStores.fileBatches.create(store.id, {
      file_ids: ids,
      chunking_strategy: { type: "static", static: { max_chunk_size_tokens: 100, chunk_overlap_tokens: 50 } },
    });

    // Wait until a file is done and another is part-way (a checkpoint saved, not finished).
    const deadline = Date.now() + 60_000;
    for (;;) {
      const b = await c1.vectorStores.fileBatches.retrieve(batch.id, { vector_store_id: store.id });
      const partial = query<{ n: number }>(
        `SELECT COUNT(*) AS n FROM jobs WHERE kind = 'vector_stores.ingest' AND state = 'running' AND json_extract(checkpoint, '$.indexed') > 0`,
      )[0]!.n;
      if (b.file_counts.completed >= 1 && partial >= 1) break;
      expect(b.file_counts.in_progress, "the batch finished before the crash could be staged").toBeGreaterThan(0);
      expect(Date.now()).toBeLessThan(deadline);
      await sleep(250); // the SDK poller's pace: inside the store's 300 requests a minute
    }
    first.proc.kill("SIGKILL");
    await new Promise((r) => first.proc.once("exit", r));

    // What the dead server had checkpointed, and the index rows those chunks live in.
    const resumed = query<{ payload: string; indexed: number }>(
      `SELECT payload, json_extract(checkpoint, '$.indexed') AS indexed FROM jobs WHERE kind = 'vector_stores.ingest' AND state = 'running' AND checkpoint IS NOT NULL`,
    ).map((r) => ({ fileId: (JSON.parse(r.payload) as { fileId: string }).fileId, indexed: r.indexed }));
    expect(resumed.length).toBeGreaterThan(0);
    const rowsBefore = new Map(query<{ id: number; chunk_id: string }>(`SELECT id, chunk_id FROM search_chunks WHERE store_id = ?`, store.id).map((r) => [r.chunk_id, r.id]));

    const second = await startServer();
    const c2 = sdk(second.baseURL);
    const done = await c2.vectorStores.fileBatches.poll(store.id, batch.id, { pollIntervalMs: 200 });
    expect(done).toMatchObject({ status: "completed", file_counts: { completed: 4, failed: 0, in_progress: 0, total: 4 } });

    // Every file's chunks are in the index once each: indexes 0..n-1, the store's counters agree.
    const files = await c2.vectorStores.files.list(store.id, { limit: 100 });
    expect(files.data.every((f) => f.status === "completed")).toBe(true);
    const perFile = query<{ file_id: string; n: number; lo: number; hi: number; distinct_idx: number }>(
      `SELECT file_id, COUNT(*) AS n, MIN(idx) AS lo, MAX(idx) AS hi, COUNT(DISTINCT idx) AS distinct_idx FROM search_chunks WHERE store_id = ? GROUP BY file_id`,
      store.id,
    );
    expect(perFile.length).toBe(4);
    const chunksOf = new Map(
      query<{ data: string }>(`SELECT data FROM records WHERE kind = 'vector_store.file' AND parent_id = ?`, store.id).map((r) => {
        const d = JSON.parse(r.data) as { fileId: string; chunks: number };
        return [d.fileId, d.chunks];
      }),
    );
    for (const f of perFile) expect(f).toEqual({ file_id: f.file_id, n: chunksOf.get(f.file_id), lo: 0, hi: chunksOf.get(f.file_id)! - 1, distinct_idx: chunksOf.get(f.file_id) });
    const total = perFile.reduce((n, f) => n + f.n, 0);
    const { ord, chunks } = query<{ ord: number; chunks: number }>(`SELECT ord, chunks FROM search_stores WHERE store_id = ?`, store.id)[0]!;
    expect(chunks).toBe(total);
    expect(query<{ n: number }>(`SELECT COUNT(*) AS n FROM search_fts_${ord}`)[0]!.n).toBe(total);

    // Resumed, not restarted: chunks checkpointed before the crash kept their rows.
    for (const { fileId, indexed } of resumed) {
      for (let i = 0; i < indexed; i++) {
        const chunk = `${fileId}:${i}`;
        expect(query<{ id: number }>(`SELECT id FROM search_chunks WHERE store_id = ? AND chunk_id = ?`, store.id, chunk)[0]?.id, chunk).toBe(rowsBefore.get(chunk));
      }
    }
    const hits = await c2.vectorStores.search(store.id, { query: "ledger entry filed", max_num_results: 5 });
    expect(hits.data.length).toBe(5);
    second.proc.kill("SIGTERM");
    await new Promise((r) => second.proc.once("exit", r));
  }, 120_000);
});

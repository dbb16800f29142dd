// The WAL checkpoint worker (wal-checkpointer.ts): its own connection to each database it is asked
// about, on which it copies the write-ahead log back into the database file.
import Database from "better-sqlite3";
import { serveTasks } from "../pool/serve.js";
import type { CheckpointResult, CheckpointTask } from "./wal-checkpointer.js";

const connections = new Map<string, Database.Database>();

serveTasks<CheckpointTask, CheckpointResult>(({ path }) => {
  let db = connections.get(path);
  if (!db) {
    db = new Database(path, { fileMustExist: true });
    // A checkpoint that would wait is skipped: the next one (or the writer's own) catches up.
    db.pragma("busy_timeout = 0");
    connections.set(path, db);
  }
  // PASSIVE: copies what no reader still needs and never blocks the writer.
  const [r] = db.pragma("wal_checkpoint(PASSIVE)") as Array<{ busy: number; log: number; checkpointed: number }>;
  return { busy: r!.busy === 1, frames: r!.log, copied: r!.checkpointed };
});

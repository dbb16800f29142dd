// The messages between a WorkerPool and its workers (serveTasks). Plain objects: they cross the
// thread boundary by structured clone, typed arrays in the transfer list.

/** Parent → worker. */
export type TaskRequest = { type: "run"; id: number; payload: unknown } | { type: "cancel"; id: number };

/** Worker → parent: one per "run", after the handler returned or threw. */
export type TaskReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: { name?: string; message?: string; code?: string; stack?: string } };

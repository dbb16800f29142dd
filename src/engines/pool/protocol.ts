// The messages between a WorkerPool and its workers (serveTasks). Plain objects: they cross the
// thread boundary by structured clone, typed arrays in the transfer list.

/** An error as it crosses the boundary: `name`, `message` and `code` of the original. */
export interface ErrorDescription {
  name?: string;
  message?: string;
  code?: string;
  stack?: string;
}

/** Parent → worker: a task, its cancellation, the answer to one of the worker's host calls, or its priority (first, once). */
export type TaskRequest =
  | { type: "nice"; by: number }
  | { type: "run"; id: number; payload: unknown }
  | { type: "cancel"; id: number }
  | { type: "host-reply"; call: number; ok: true; result: unknown }
  | { type: "host-reply"; call: number; ok: false; error: ErrorDescription };

/**
 * Worker → parent: one per "run", after the handler returned or threw (with the worker's memory
 * then: its V8 heap plus the external memory its isolate holds, WebAssembly memories included,
 * in MiB); or a host call (callHost).
 */
export type TaskReply =
  | { type?: undefined; id: number; ok: true; result: unknown; memoryMb?: number }
  | { type?: undefined; id: number; ok: false; error: ErrorDescription; memoryMb?: number }
  | { type: "host"; call: number; method: string; args: unknown[] };

export function describeError(e: unknown): ErrorDescription {
  const err = e as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown } | null;
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  return { name: str(err?.name), message: str(err?.message) ?? String(e), code: str(err?.code), stack: str(err?.stack) };
}

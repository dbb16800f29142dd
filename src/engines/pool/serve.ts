// The worker side of WorkerPool: a worker script calls serveTasks(handler) once; every task the
// pool sends is handed to `handler`, and what it returns (or throws) goes back to the caller.
import { isMainThread, parentPort, type Transferable } from "node:worker_threads";
import type { TaskReply, TaskRequest } from "./protocol.js";

export interface TaskContext {
  /** Aborted when the caller gave up (its signal fired); check it between steps of long work. */
  signal: AbortSignal;
  /** Moves these buffers to the caller instead of copying them (e.g. a result's Float32Array.buffer). */
  transfer(...items: Transferable[]): void;
}

export function serveTasks<Req, Res>(handler: (payload: Req, ctx: TaskContext) => Res | Promise<Res>): void {
  if (isMainThread || !parentPort) throw new Error("serveTasks() must run in a worker thread started by WorkerPool");
  const port = parentPort;
  const running = new Map<number, AbortController>();

  port.on("message", async (m: TaskRequest) => {
    if (m.type === "cancel") {
      running.get(m.id)?.abort(new Error("cancelled by the caller"));
      return;
    }
    const controller = new AbortController();
    running.set(m.id, controller);
    const transfer: Transferable[] = [];
    try {
      const result = await handler(m.payload as Req, { signal: controller.signal, transfer: (...items) => transfer.push(...items) });
      const reply: TaskReply = { id: m.id, ok: true, result };
      port.postMessage(reply, transfer);
    } catch (e) {
      // The handler's error, or a result that cannot be cloned: either way the caller gets an answer.
      const reply: TaskReply = { id: m.id, ok: false, error: describe(e) };
      port.postMessage(reply);
    } finally {
      running.delete(m.id);
    }
  });
}

function describe(e: unknown): { name?: string; message?: string; code?: string; stack?: string } {
  const err = e as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown } | null;
  const str = (v: unknown) => (typeof v === "string" ? v : undefined);
  return { name: str(err?.name), message: str(err?.message) ?? String(e), code: str(err?.code), stack: str(err?.stack) };
}

// The worker side of WorkerPool: a worker script calls serveTasks(handler) once; every task the
// pool sends is handed to `handler`, and what it returns (or throws) goes back to the caller.
// callHost() asks the parent for something only it has (its storage, say), by name.
import { getPriority, setPriority } from "node:os";
import { isMainThread, parentPort, type Transferable } from "node:worker_threads";
import { describeError, type ErrorDescription, type TaskReply, type TaskRequest } from "./protocol.js";

/** A host function threw; `name`, `message` and `code` are the original's. */
export class HostCallError extends Error {
  readonly code: string | undefined;
  constructor(e: ErrorDescription) {
    super(e.message ?? "host call failed");
    this.name = e.name ?? "Error";
    this.code = e.code;
  }
}

const hostCalls = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
let nextHostCall = 1;

/** Calls the parent's host function `method` (WorkerPoolOptions.host) with `args` (cloned both ways). */
export function callHost<T>(method: string, ...args: unknown[]): Promise<T> {
  if (isMainThread || !parentPort) throw new Error("callHost() must run in a worker thread started by WorkerPool");
  const call = nextHostCall++;
  const port = parentPort;
  return new Promise<T>((resolve, reject) => {
    hostCalls.set(call, { resolve: resolve as (v: unknown) => void, reject });
    const msg: TaskReply = { type: "host", call, method, args };
    port.postMessage(msg);
  });
}

export interface TaskContext {
  /** Aborted when the caller gave up (its signal fired); check it between steps of long work. */
  signal: AbortSignal;
  /** Moves these buffers to the caller instead of copying them (e.g. a result's Float32Array.buffer). */
  transfer(...items: Transferable[]): void;
}

/**
 * This worker's memory in MiB: its V8 heap and the external memory of its isolate (buffers and
 * WebAssembly memories, which grow and never shrink). The process-wide RSS says nothing per thread.
 */
function isolateMemoryMb(): number {
  const m = process.memoryUsage();
  return (m.heapTotal + m.external) / 2 ** 20;
}

/**
 * Lowers this thread's priority by `by` (up to nice 19). On Linux setpriority(PRIO_PROCESS, 0)
 * applies to the calling thread alone; elsewhere it would reach the whole process, so it is left.
 */
export function lowerPriority(by: number): void {
  if (process.platform !== "linux") return;
  try {
    setPriority(0, Math.min(19, getPriority(0) + by));
  } catch {
    // A container that forbids it: the work still runs, at the usual priority.
  }
}

export function serveTasks<Req, Res>(handler: (payload: Req, ctx: TaskContext) => Res | Promise<Res>): void {
  if (isMainThread || !parentPort) throw new Error("serveTasks() must run in a worker thread started by WorkerPool");
  const port = parentPort;
  const running = new Map<number, AbortController>();

  port.on("message", async (m: TaskRequest) => {
    if (m.type === "host-reply") {
      const waiting = hostCalls.get(m.call);
      hostCalls.delete(m.call);
      if (m.ok) waiting?.resolve(m.result);
      else waiting?.reject(new HostCallError(m.error));
      return;
    }
    if (m.type === "nice") {
      lowerPriority(m.by);
      return;
    }
    if (m.type === "cancel") {
      running.get(m.id)?.abort(new Error("cancelled by the caller"));
      return;
    }
    const controller = new AbortController();
    running.set(m.id, controller);
    const transfer: Transferable[] = [];
    try {
      const result = await handler(m.payload as Req, { signal: controller.signal, transfer: (...items) => transfer.push(...items) });
      const reply: TaskReply = { id: m.id, ok: true, result, memoryMb: isolateMemoryMb() };
      port.postMessage(reply, transfer);
    } catch (e) {
      // The handler's error, or a result that cannot be cloned: either way the caller gets an answer.
      const reply: TaskReply = { id: m.id, ok: false, error: describeError(e), memoryMb: isolateMemoryMb() };
      port.postMessage(reply);
    } finally {
      running.delete(m.id);
    }
  });
}

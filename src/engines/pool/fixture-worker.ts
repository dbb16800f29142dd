// A worker for the pool's own tests (test/embeddings-pool.test.ts): each task names what the
// worker should do, so a test can check replies, transfers, errors, cancellation and crashes
// without loading a model.
import { threadId } from "node:worker_threads";
import { callHost, serveTasks } from "./serve.js";

export type FixtureTask =
  | { op: "echo"; value: unknown }
  | { op: "double"; values: Float32Array }
  | { op: "sleep"; ms: number }
  | { op: "throw"; message: string }
  | { op: "unclonable" }
  | { op: "crash" }
  | { op: "exit"; code: number }
  | { op: "host"; method: string; args: unknown[] };

serveTasks<FixtureTask, unknown>(async (task, ctx) => {
  switch (task.op) {
    case "echo":
      return { value: task.value, threadId };
    case "double": {
      const out = task.values.map((v) => v * 2);
      ctx.transfer(out.buffer);
      return out;
    }
    case "sleep": {
      // Wakes up every 5 ms to honour a cancellation, as a long engine task would between batches.
      const end = Date.now() + task.ms;
      while (Date.now() < end) {
        if (ctx.signal.aborted) throw new Error("sleep cancelled");
        await new Promise((r) => setTimeout(r, 5));
      }
      return { slept: task.ms, threadId };
    }
    case "throw": {
      const e = new RangeError(task.message) as RangeError & { code: string };
      e.code = "fixture_error";
      throw e;
    }
    case "unclonable":
      return { f: () => 1 }; // a result postMessage cannot send
    case "crash":
      // An exception nobody catches, outside the task's promise: the thread dies.
      setImmediate(() => {
        throw new Error("fixture crash");
      });
      return new Promise(() => {});
    case "exit":
      process.exit(task.code);
    case "host":
      // Asks the parent, as a worker asks for what only the main thread has (its storage).
      try {
        return { ok: await callHost(task.method, ...task.args) };
      } catch (e) {
        const err = e as Error & { code?: string };
        return { error: { name: err.name, message: err.message, code: err.code } };
      }
  }
});

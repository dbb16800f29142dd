// A small pool of worker threads for CPU-bound engine work (docs/architecture.md, principle 7: the event loop
// never blocks on inference). N workers, started on demand; one task per worker at a time; a FIFO
// queue in front. Each task has an id; results come back as the worker posts them (typed arrays
// transferred, not copied). A worker that crashes rejects its in-flight task and is replaced on
// the next task; close() stops everything.
//
// The worker side of the protocol is serveTasks() (serve.ts); workerScript() (script.ts) finds
// the file to start from compiled JS or from TypeScript sources.
import { Worker, type ResourceLimits, type Transferable } from "node:worker_threads";
import { describeError, type TaskReply, type TaskRequest } from "./protocol.js";

export interface WorkerPoolOptions {
  /** What each worker runs: see workerScript(). */
  script: URL;
  /** Most workers alive at once. */
  size: number;
  /** Thread name (shown in inspectors and heap snapshots) and prefix of error messages. */
  name: string;
  /** Handed to every worker as `workerData`. */
  workerData?: unknown;
  /** V8 heap limits per worker: a worker over them dies as a crash, not the whole process. */
  resourceLimits?: ResourceLimits;
  /**
   * When an idle worker is replaced by a fresh one: after `afterTasks` tasks, or once its memory
   * (V8 heap plus external memory, WebAssembly included, measured after each task) passes
   * `aboveMb`. Engines' WebAssembly memories and allocators only grow, so a long-lived worker
   * keeps the peak of its largest task; replacing it returns that memory. Default: `recycleFromEnv()`.
   */
  recycle?: RecyclePolicy;
  /**
   * A task that readies a fresh worker (an engine loading its model). With it, a worker due for
   * recycling keeps serving while its replacement starts and runs this task; only then does it
   * leave, so no request waits for a replacement's start-up. Without it the worker leaves at once
   * and the next task starts a fresh one.
   */
  warmUp?: unknown;
  /**
   * What workers may ask of this thread by name (callHost in serve.ts): what only it has, such
   * as the storage. Arguments and results cross by structured clone; a function's result (or its
   * error's name, message and code) goes back, even to a task its caller has given up on.
   */
  host?: Record<string, (...args: any[]) => unknown>;
  /**
   * Lowers each worker thread's scheduling priority by this much (nice, 0 to 19; 0 changes nothing), so that the
   * operating system runs the process's other threads first when the cores are busy: background
   * work (ingestion) yields to requests someone waits for. Linux only, where a thread's nice
   * value is its own; elsewhere setpriority would renice the whole process, so nothing changes.
   */
  nice?: number;
}

export interface RecyclePolicy {
  afterTasks?: number;
  aboveMb?: number;
}

/**
 * The recycling policy from the environment: ATRIUM_WORKER_RECYCLE_TASKS (default 10000) and
 * ATRIUM_WORKER_RECYCLE_MB (default 256); 0 turns either off.
 */
export function recycleFromEnv(env: NodeJS.ProcessEnv = process.env): RecyclePolicy {
  const num = (name: string, def: number) => {
    const raw = env[name];
    if (raw === undefined || raw === "") return def;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < 0) throw new RangeError(`${name} must be a number of 0 or more, got '${raw}'`);
    return n;
  };
  const afterTasks = num("ATRIUM_WORKER_RECYCLE_TASKS", 10_000);
  const aboveMb = num("ATRIUM_WORKER_RECYCLE_MB", 256);
  return { afterTasks: afterTasks || undefined, aboveMb: aboveMb || undefined };
}

export interface RunOptions {
  /** Aborts the task: a queued task leaves the queue; a running one is told to stop (serveTasks' signal). */
  signal?: AbortSignal;
  /** Buffers to move into the worker instead of copying (they become unusable here). */
  transfer?: Transferable[];
}

/** The worker died (uncaught exception, out of memory, exit) while running this task. */
export class WorkerCrashedError extends Error {
  override readonly name = "WorkerCrashedError";
}

/** The pool was closed before the task finished. */
export class PoolClosedError extends Error {
  override readonly name = "PoolClosedError";
}

/** The task's own error, thrown inside the worker; `name`, `message` and `code` are the original's. */
export class WorkerTaskError extends Error {
  override name: string;
  readonly code: string | undefined;
  constructor(error: { name?: string; message?: string; code?: string; stack?: string }) {
    super(error.message ?? "worker task failed");
    this.name = error.name ?? "Error";
    this.code = error.code;
    if (error.stack) this.stack = error.stack;
  }
}

interface Task {
  id: number;
  payload: unknown;
  transfer: Transferable[] | undefined;
  resolve(value: unknown): void;
  reject(err: unknown): void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  /** Rejected already (aborted while running): its worker is busy until it answers. */
  settled: boolean;
}

interface Slot {
  worker: Worker;
  task: Task | null;
  /** Set once the worker is going away (crash, exit, close, recycling): never given work again. */
  dead: boolean;
  /** Tasks it has answered. */
  done: number;
  /** Running the warm-up before its first task: not given work yet. */
  warming: boolean;
  /** Due for recycling, serving until its replacement is warm (then `replaced`, and it leaves when idle). */
  retiring: boolean;
  replaced: boolean;
}

export interface PoolStats {
  workers: number;
  busy: number;
  queued: number;
  /** Workers that died while running a task, since the pool was made. */
  crashes: number;
  /** Idle workers replaced by the recycling policy, since the pool was made. */
  recycled: number;
  /** The memory the busiest worker reported after its last task (MiB). */
  workerMemoryMb: number;
}

/** Every pool not yet closed, for the worker gauges of /metrics (livePools()). */
const live = new Set<WorkerPool<unknown, unknown>>();

/** The name and stats of every open pool in this process. */
export function livePools(): Array<{ name: string } & PoolStats> {
  return [...live].map((p) => ({ name: p.name, ...p.stats() }));
}

export class WorkerPool<Req, Res> {
  readonly size: number;
  private readonly slots = new Set<Slot>();
  private readonly queue: Task[] = [];
  private nextId = 1;
  private closed = false;
  private crashes = 0;
  private recycled = 0;
  private readonly recycle: RecyclePolicy;
  private readonly memoryMb = new WeakMap<Slot, number>();

  constructor(private readonly opts: WorkerPoolOptions) {
    if (!Number.isInteger(opts.size) || opts.size < 1) throw new RangeError(`${opts.name}: pool size must be a positive integer, got ${opts.size}`);
    if (opts.nice !== undefined && (!Number.isInteger(opts.nice) || opts.nice < 0 || opts.nice > 19))
      throw new RangeError(`${opts.name}: nice must be an integer from 0 to 19, got ${opts.nice}`);
    this.size = opts.size;
    this.recycle = opts.recycle ?? recycleFromEnv();
    live.add(this as WorkerPool<unknown, unknown>);
  }

  get name(): string {
    return this.opts.name;
  }

  /** Runs `payload` on a worker; resolves with what the worker's handler returned. */
  run(payload: Req, opts: RunOptions = {}): Promise<Res> {
    if (this.closed) return Promise.reject(new PoolClosedError(`${this.opts.name}: the pool is closed`));
    const signal = opts.signal;
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Res>((resolve, reject) => {
      const task: Task = {
        id: this.nextId++,
        payload,
        transfer: opts.transfer,
        resolve: resolve as (v: unknown) => void,
        reject,
        signal,
        onAbort: undefined,
        settled: false,
      };
      if (signal) {
        task.onAbort = () => this.abort(task);
        signal.addEventListener("abort", task.onAbort, { once: true });
      }
      this.queue.push(task);
      this.dispatch();
    });
  }

  /** The live worker threads (for diagnostics and tests; do not post to them). */
  get threads(): Worker[] {
    return [...this.slots].filter((s) => !s.dead).map((s) => s.worker);
  }

  stats(): PoolStats {
    let busy = 0;
    for (const s of this.slots) if (s.task) busy++;
    let workerMemoryMb = 0;
    for (const s of this.slots) workerMemoryMb = Math.max(workerMemoryMb, this.memoryMb.get(s) ?? 0);
    return { workers: this.slots.size, busy, queued: this.queue.length, crashes: this.crashes, recycled: this.recycled, workerMemoryMb };
  }

  /** Rejects queued and running tasks with PoolClosedError and terminates every worker. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    live.delete(this as WorkerPool<unknown, unknown>);
    const err = new PoolClosedError(`${this.opts.name}: the pool was closed`);
    for (const t of this.queue.splice(0)) this.fail(t, err);
    const exits: Promise<unknown>[] = [];
    for (const s of this.slots) {
      s.dead = true;
      if (s.task) this.fail(s.task, err);
      exits.push(s.worker.terminate());
    }
    this.slots.clear();
    await Promise.allSettled(exits);
  }

  // ---- internals ----

  private dispatch(): void {
    while (this.queue.length > 0 && !this.closed) {
      const slot = this.idleSlot() ?? (this.serving() < this.size ? this.spawn() : undefined);
      if (!slot) return;
      this.start(slot, this.queue.shift()!, true);
    }
  }

  /** Sends `task` to `slot`; `keepAlive`: the running task keeps the process alive (an idle pool does not). */
  private start(slot: Slot, task: Task, keepAlive: boolean): void {
    slot.task = task;
    if (keepAlive) slot.worker.ref();
    const msg: TaskRequest = { type: "run", id: task.id, payload: task.payload };
    try {
      slot.worker.postMessage(msg, task.transfer);
    } catch (e) {
      // The payload could not be cloned (a function, a detached buffer): the task's fault, not the worker's.
      slot.task = null;
      slot.worker.unref();
      this.fail(task, e);
    }
  }

  private idleSlot(): Slot | undefined {
    for (const s of this.slots) if (!s.task && !s.dead && !s.warming) return s;
    return undefined;
  }

  /** Workers that count against the size: a retiring one's replacement takes its place. */
  private serving(): number {
    let n = 0;
    for (const s of this.slots) if (!s.retiring) n++;
    return n;
  }

  private spawn(): Slot {
    const worker = new Worker(this.opts.script, {
      name: this.opts.name,
      workerData: this.opts.workerData,
      resourceLimits: this.opts.resourceLimits,
      // Workers must not inherit a --inspect port or the test runner's loader flags.
      execArgv: [],
      stdout: false,
      stderr: false,
    });
    const slot: Slot = { worker, task: null, dead: false, done: 0, warming: false, retiring: false, replaced: false };
    worker.on("message", (m: TaskReply) => (m.type === "host" ? this.onHostCall(slot, m) : this.onReply(slot, m)));
    worker.on("messageerror", (e) => this.onCrash(slot, e));
    worker.on("error", (e) => this.onCrash(slot, e));
    worker.on("exit", (code) => this.onCrash(slot, new Error(`exited with code ${code}`)));
    worker.unref();
    // Before any task: messages arrive in order.
    if (this.opts.nice) worker.postMessage({ type: "nice", by: this.opts.nice } satisfies TaskRequest);
    this.slots.add(slot);
    return slot;
  }

  private onHostCall(slot: Slot, m: Extract<TaskReply, { type: "host" }>): void {
    const answer = (reply: TaskRequest) => {
      if (slot.dead) return;
      try {
        slot.worker.postMessage(reply);
      } catch (e) {
        // A result that cannot be cloned (a function, a detached buffer): the caller gets an error, not silence.
        slot.worker.postMessage({ type: "host-reply", call: m.call, ok: false, error: describeError(e) } satisfies TaskRequest);
      }
    };
    const fn = this.opts.host && Object.hasOwn(this.opts.host, m.method) ? this.opts.host[m.method] : undefined;
    if (!fn) {
      answer({ type: "host-reply", call: m.call, ok: false, error: { name: "Error", message: `${this.opts.name}: no host function '${m.method}'` } });
      return;
    }
    Promise.resolve()
      .then(() => fn(...m.args))
      .then(
        (result) => answer({ type: "host-reply", call: m.call, ok: true, result }),
        (e) => answer({ type: "host-reply", call: m.call, ok: false, error: describeError(e) }),
      );
  }

  private onReply(slot: Slot, m: Extract<TaskReply, { ok: boolean }>): void {
    const task = slot.task;
    if (!task || task.id !== m.id) return; // an answer nobody waits for any more
    slot.task = null;
    slot.worker.unref();
    const warmUp = slot.warming; // not one of its tasks: neither counted nor a reason to recycle
    if (!warmUp) slot.done++;
    if (m.memoryMb !== undefined) this.memoryMb.set(slot, m.memoryMb);
    if (m.ok) this.succeed(task, m.result);
    else this.fail(task, new WorkerTaskError(m.error));
    if (slot.replaced) this.retire(slot);
    else if (!warmUp && !slot.retiring && this.dueForRecycling(slot, m.memoryMb)) this.replace(slot);
    this.dispatch();
  }

  /** Recycles `slot`: at once without a warm-up task; with one, once a fresh worker has run it. */
  private replace(slot: Slot): void {
    if (this.opts.warmUp === undefined || this.closed) {
      this.retire(slot);
      return;
    }
    slot.retiring = true;
    const fresh = this.spawn();
    fresh.warming = true;
    const warmed = () => {
      fresh.warming = false;
      if (this.closed) return;
      // Warm or not (a failed warm-up leaves a worker that starts on its first task, as without one), the old one goes.
      if (this.slots.has(slot)) {
        if (slot.task) slot.replaced = true;
        else this.retire(slot);
      }
      this.dispatch();
    };
    // Not a caller's task: it does not keep the process alive.
    this.start(fresh, { id: this.nextId++, payload: this.opts.warmUp, transfer: undefined, resolve: warmed, reject: warmed, signal: undefined, onAbort: undefined, settled: false }, false);
  }

  private dueForRecycling(slot: Slot, memoryMb: number | undefined): boolean {
    const { afterTasks, aboveMb } = this.recycle;
    return (afterTasks !== undefined && slot.done >= afterTasks) || (aboveMb !== undefined && memoryMb !== undefined && memoryMb > aboveMb);
  }

  /** An idle worker leaves the pool now and its thread ends. */
  private retire(slot: Slot): void {
    this.slots.delete(slot);
    slot.dead = true;
    this.recycled++;
    void slot.worker.terminate();
  }

  /** The worker is gone or going: fail its task, forget it; the next dispatch starts a new one. */
  private onCrash(slot: Slot, cause: unknown): void {
    if (!this.slots.has(slot)) return; // already handled (error, then exit)
    this.slots.delete(slot);
    slot.dead = true;
    const task = slot.task;
    slot.task = null;
    if (task) {
      this.crashes++;
      const why = cause instanceof Error ? cause.message : String(cause);
      this.fail(task, new WorkerCrashedError(`${this.opts.name}: the worker died while running the task (${why})`, { cause }));
    }
    void slot.worker.terminate(); // after 'error' the thread may still be winding down
    this.dispatch();
  }

  private abort(task: Task): void {
    const queued = this.queue.indexOf(task);
    if (queued >= 0) {
      this.queue.splice(queued, 1);
      this.fail(task, task.signal!.reason);
      return;
    }
    // Running: answer the caller now, ask the worker to stop; it stays busy until it replies.
    for (const s of this.slots) {
      if (s.task === task) {
        const msg: TaskRequest = { type: "cancel", id: task.id };
        s.worker.postMessage(msg);
        break;
      }
    }
    this.fail(task, task.signal!.reason);
  }

  private succeed(task: Task, result: unknown): void {
    if (this.settle(task)) task.resolve(result);
  }

  private fail(task: Task, err: unknown): void {
    if (this.settle(task)) task.reject(err);
  }

  /** Marks the task answered; false if it was already. */
  private settle(task: Task): boolean {
    if (task.settled) return false;
    task.settled = true;
    if (task.onAbort) task.signal!.removeEventListener("abort", task.onAbort);
    return true;
  }
}

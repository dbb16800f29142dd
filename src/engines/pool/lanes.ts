// LaneScheduler: what runs next on a shared engine (the sentence encoder's workers). Callers hand
// in a request already cut into small units of work; the scheduler keeps at most `slots` units
// running and picks each next unit by
// - lane: every interactive unit (a search query, /v1/embeddings, a moderation) before any bulk
//   one (ingestion, batches), so an interactive request waits behind at most one running unit
//   per slot, never behind a whole bulk request;
// - project, inside a lane: round-robin over the projects with work queued, one unit each turn;
//   a project's own requests go first come, first served;
// - except that after `bulkEvery` interactive units in a row while bulk work waited, one bulk
//   unit goes next: interactive load that fills the engine slows ingestion down but never stops it.
// Lanes share the engine's workers (`slots` a number: the order above decides), or each lane has
// workers of its own (`slots` per lane: the bulk lane's are niced, src/engines/pool/pool.ts, so
// the operating system, not the queue, puts interactive work first and no request waits for a
// bulk unit to end).
// A lane holds a bounded number of requests, and a request whose first unit would start later
// than the lane's wait bound is refused at once (EngineBusyError, with when to retry) instead of
// waiting for its turn. The wait is estimated from how long units have been taking.
import { integerFromEnv } from "../../common/env.js";

/** Interactive work goes ahead of bulk work. */
export type Lane = "interactive" | "bulk";

export const LANES: readonly Lane[] = ["interactive", "bulk"];

export interface LaneLimits {
  /** Most requests a lane holds (queued or running); one more is refused. */
  maxRequests: number;
  /** Most estimated milliseconds before a new request's first unit starts; 0: no bound. */
  maxWaitMs: number;
}

export interface LaneSchedulerOptions<U, R> {
  /** Runs one unit (on a worker of `lane` when lanes have their own); `signal` is the request's. */
  run(unit: U, signal: AbortSignal | undefined, lane: Lane): Promise<R>;
  /** Units running at once: shared by the lanes (the pool's workers), or per lane (each lane's own pool). */
  slots: number | Record<Lane, number>;
  limits: Record<Lane, LaneLimits>;
  /** Prefix of error messages ("the local sentence encoder"). */
  name: string;
  /** Estimated milliseconds of one unit before any has run. */
  initialUnitMs?: number;
  /** With shared slots, one bulk unit after this many interactive units in a row while bulk work waited; 0: never (strict priority). */
  bulkEvery?: number;
}

/** A lane is full, or its wait is over the bound: try again after `retryAfterMs`. */
export class EngineBusyError extends Error {
  override readonly name = "EngineBusyError";
  constructor(
    message: string,
    readonly lane: Lane,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

export interface SubmitOptions {
  lane?: Lane;
  /** Whose work it is; fairness is between projects. */
  project?: string;
  signal?: AbortSignal;
}

interface Request<U, R> {
  units: U[];
  results: R[];
  /** Next unit to start. */
  next: number;
  /** Units finished. */
  done: number;
  lane: Lane;
  project: string;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
  settled: boolean;
  resolve(results: R[]): void;
  reject(e: unknown): void;
}

/** One lane: per project, its requests in arrival order; `turns` is the round-robin order of projects. */
interface LaneQueue<U, R> {
  projects: Map<string, Array<Request<U, R>>>;
  turns: string[];
  /** Requests admitted and not yet settled (queued or running). */
  requests: number;
  /** Units finished since the scheduler was made. */
  unitsDone: number;
}

export interface LaneStats {
  requests: number;
  queuedUnits: number;
  projects: number;
  /** Units finished since the scheduler was made. */
  unitsDone: number;
}

export interface SchedulerStats {
  /** Units running, all lanes. */
  running: number;
  /** Estimated milliseconds of one unit (the interactive lane's, when lanes have their own workers). */
  unitMs: number;
  lanes: Record<Lane, LaneStats>;
}

/** Weight of the newest unit's duration in the running estimate. */
const UNIT_MS_SMOOTHING = 0.2;

export class LaneScheduler<U, R> {
  private readonly lanes: Record<Lane, LaneQueue<U, R>> = {
    interactive: { projects: new Map(), turns: [], requests: 0, unitsDone: 0 },
    bulk: { projects: new Map(), turns: [], requests: 0, unitsDone: 0 },
  };
  private readonly runningIn: Record<Lane, number> = { interactive: 0, bulk: 0 };
  /** Slots per lane when lanes have their own workers; undefined when they share. */
  private readonly own: Record<Lane, number> | undefined;
  /** Estimated milliseconds of one unit per lane (the same for both when they share the workers). */
  private readonly unitMs: Record<Lane, number>;
  /** Interactive units started in a row while bulk work waited. */
  private interactiveStreak = 0;

  constructor(private readonly opts: LaneSchedulerOptions<U, R>) {
    const counts = typeof opts.slots === "number" ? [opts.slots] : LANES.map((l) => (opts.slots as Record<Lane, number>)[l]);
    for (const n of counts) if (!Number.isInteger(n) || n < 1) throw new RangeError(`${opts.name}: slots must be positive integers, got ${JSON.stringify(opts.slots)}`);
    this.own = typeof opts.slots === "number" ? undefined : { ...opts.slots };
    const initial = opts.initialUnitMs ?? 200;
    this.unitMs = { interactive: initial, bulk: initial };
  }

  /** Runs every unit of one request; resolves with their results in order. Throws EngineBusyError at once when the lane is full. */
  submit(units: U[], opts: SubmitOptions = {}): Promise<R[]> {
    const lane = opts.lane ?? "interactive";
    const project = opts.project ?? "";
    if (opts.signal?.aborted) return Promise.reject(opts.signal.reason);
    if (units.length === 0) return Promise.resolve([]);
    const refusal = this.admission(lane, project);
    if (refusal) return Promise.reject(refusal);
    return new Promise<R[]>((resolve, reject) => {
      const req: Request<U, R> = {
        units,
        results: new Array<R>(units.length),
        next: 0,
        done: 0,
        lane,
        project,
        signal: opts.signal,
        onAbort: undefined,
        settled: false,
        resolve,
        reject,
      };
      if (req.signal) {
        req.onAbort = () => this.finish(req, req.signal!.reason);
        req.signal.addEventListener("abort", req.onAbort, { once: true });
      }
      const q = this.lanes[lane];
      q.requests++;
      const own = q.projects.get(project);
      if (own) own.push(req);
      else q.projects.set(project, [req]);
      // A project whose units are all running has no turn until it queues more.
      if (!q.turns.includes(project)) q.turns.push(project);
      this.dispatch();
    });
  }

  /**
   * Units that would start before a new request's first one in `lane` for `project`: every
   * queued unit of the lanes ahead, the project's own queued units, and from each other project
   * of the lane at most one more than the project has queued (the round-robin's turns).
   */
  unitsAhead(lane: Lane, project: string): number {
    let ahead = 0;
    // Lanes with workers of their own do not wait for each other.
    if (!this.own)
      for (const l of LANES) {
        if (l === lane) break;
        for (const reqs of this.lanes[l].projects.values()) ahead += queuedUnits(reqs);
      }
    const q = this.lanes[lane];
    const own = queuedUnits(q.projects.get(project) ?? []);
    ahead += own;
    for (const [p, reqs] of q.projects) if (p !== project) ahead += Math.min(queuedUnits(reqs), own + 1);
    return ahead;
  }

  /** Units running, all lanes. */
  private get running(): number {
    return this.runningIn.interactive + this.runningIn.bulk;
  }

  /** Estimated milliseconds before a new request's first unit starts. */
  estimatedWaitMs(lane: Lane, project: string): number {
    const ahead = this.unitsAhead(lane, project);
    const slots = this.own ? this.own[lane] : (this.opts.slots as number);
    const running = this.own ? this.runningIn[lane] : this.running;
    if (ahead === 0 && running < slots) return 0;
    // Every slot busy: half a unit left on average, then the units ahead spread over the slots.
    return Math.round((ahead / slots + 0.5) * this.unitMs[lane]);
  }

  stats(): SchedulerStats {
    const lane = (l: Lane): LaneStats => {
      let queued = 0;
      for (const reqs of this.lanes[l].projects.values()) queued += queuedUnits(reqs);
      const q = this.lanes[l];
      return { requests: q.requests, queuedUnits: queued, projects: q.projects.size, unitsDone: q.unitsDone };
    };
    return { running: this.running, unitMs: Math.round(this.unitMs.interactive), lanes: { interactive: lane("interactive"), bulk: lane("bulk") } };
  }

  // ---- internals ----

  private admission(lane: Lane, project: string): EngineBusyError | undefined {
    const limits = this.opts.limits[lane];
    const q = this.lanes[lane];
    const wait = this.estimatedWaitMs(lane, project);
    // Retry when about the work ahead has drained, at least a second later.
    const retryAfterMs = Math.max(1000, wait);
    if (q.requests >= limits.maxRequests)
      return new EngineBusyError(`${this.opts.name} is busy: ${q.requests} ${lane} requests are in its queue (at most ${limits.maxRequests}).`, lane, retryAfterMs);
    if (limits.maxWaitMs > 0 && wait > limits.maxWaitMs)
      return new EngineBusyError(
        `${this.opts.name} is busy: this request would wait about ${wait} ms to start (at most ${limits.maxWaitMs} ms for ${lane} work).`,
        lane,
        retryAfterMs,
      );
    return undefined;
  }

  private dispatch(): void {
    if (this.own) {
      for (const lane of LANES)
        while (this.runningIn[lane] < this.own[lane]) {
          const req = this.nextOf(lane);
          if (!req) break;
          this.start(req, req.next++);
        }
      return;
    }
    while (this.running < (this.opts.slots as number)) {
      const req = this.pick();
      if (!req) return;
      this.start(req, req.next++);
    }
  }

  /** The request whose next unit runs now: the first lane with work (bulk's share aside), its project whose turn it is. */
  private pick(): Request<U, R> | undefined {
    const every = this.opts.bulkEvery ?? 0;
    if (every > 0 && this.interactiveStreak >= every) {
      const bulk = this.nextOf("bulk");
      if (bulk) {
        this.interactiveStreak = 0;
        return bulk;
      }
    }
    const interactive = this.nextOf("interactive");
    if (interactive) {
      if (this.lanes.bulk.turns.length > 0) this.interactiveStreak++;
      return interactive;
    }
    this.interactiveStreak = 0;
    return this.nextOf("bulk");
  }

  /** The lane's request whose project's turn it is (its next unit is taken), or undefined. */
  private nextOf(lane: Lane): Request<U, R> | undefined {
    const q = this.lanes[lane];
    while (q.turns.length > 0) {
      const project = q.turns.shift()!;
      const reqs = q.projects.get(project);
      const req = reqs?.find((r) => r.next < r.units.length);
      if (!req) continue; // every unit of the project is running: no turn until it queues more
      // Back of the line, if it has more to run after this unit.
      if (req.next + 1 < req.units.length || reqs!.some((r) => r !== req && r.next < r.units.length)) q.turns.push(project);
      return req;
    }
    return undefined;
  }

  private start(req: Request<U, R>, index: number): void {
    this.runningIn[req.lane]++;
    const started = performance.now();
    let run: Promise<R>;
    try {
      run = this.opts.run(req.units[index]!, req.signal, req.lane);
    } catch (e) {
      run = Promise.reject(e);
    }
    run.then(
      (result) => {
        const ms = performance.now() - started;
        for (const lane of this.own ? [req.lane] : LANES) this.unitMs[lane] += UNIT_MS_SMOOTHING * (ms - this.unitMs[lane]);
        this.runningIn[req.lane]--;
        this.lanes[req.lane].unitsDone++;
        if (!req.settled) {
          req.results[index] = result;
          if (++req.done === req.units.length) this.finish(req);
        }
        this.dispatch();
      },
      (e: unknown) => {
        this.runningIn[req.lane]--;
        this.finish(req, e);
        this.dispatch();
      },
    );
  }

  /** Settles a request (all units done, or an error) and drops its queued units. */
  private finish(req: Request<U, R>, error?: unknown): void {
    if (req.settled) return;
    req.settled = true;
    if (req.onAbort) req.signal!.removeEventListener("abort", req.onAbort);
    const q = this.lanes[req.lane];
    q.requests--;
    const reqs = q.projects.get(req.project);
    if (reqs) {
      const at = reqs.indexOf(req);
      if (at >= 0) reqs.splice(at, 1);
      if (reqs.length === 0) {
        q.projects.delete(req.project);
        const turn = q.turns.indexOf(req.project);
        if (turn >= 0) q.turns.splice(turn, 1);
      }
    }
    if (error === undefined) req.resolve(req.results);
    else req.reject(error);
    this.dispatch();
  }
}

function queuedUnits<U, R>(reqs: ReadonlyArray<Request<U, R>>): number {
  let n = 0;
  for (const r of reqs) n += r.units.length - r.next;
  return n;
}

const LIMIT_ENV: Record<Lane, { requests: string; wait: string; defaults: LaneLimits }> = {
  interactive: { requests: "ATRIUM_ENCODER_INTERACTIVE_MAX_REQUESTS", wait: "ATRIUM_ENCODER_INTERACTIVE_MAX_WAIT_MS", defaults: { maxRequests: 256, maxWaitMs: 5000 } },
  bulk: { requests: "ATRIUM_ENCODER_BULK_MAX_REQUESTS", wait: "ATRIUM_ENCODER_BULK_MAX_WAIT_MS", defaults: { maxRequests: 1024, maxWaitMs: 0 } },
};

/** Interactive units in a row before bulk work gets one, by default (about a ninth of the engine for ingestion under full interactive load). */
export const DEFAULT_BULK_EVERY = 8;

/** ATRIUM_ENCODER_BULK_EVERY: interactive units in a row before a waiting bulk unit goes (0: never), else the default. */
export function bulkEveryFromEnv(env: NodeJS.ProcessEnv = process.env): number {
  return integerFromEnv(env, "ATRIUM_ENCODER_BULK_EVERY", DEFAULT_BULK_EVERY, 0, 1_000_000);
}

/** Each lane's bounds from the environment (docs/operations.md), else the defaults. */
export function laneLimitsFromEnv(env: NodeJS.ProcessEnv = process.env): Record<Lane, LaneLimits> {
  const read = (name: string, fallback: number, min: number) => integerFromEnv(env, name, fallback, min, 1e9);
  const limits = {} as Record<Lane, LaneLimits>;
  for (const lane of LANES) {
    const e = LIMIT_ENV[lane];
    limits[lane] = { maxRequests: read(e.requests, e.defaults.maxRequests, 1), maxWaitMs: read(e.wait, e.defaults.maxWaitMs, 0) };
  }
  return limits;
}

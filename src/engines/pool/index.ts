/**
 * A generic worker-thread pool for engines (no HTTP in it). Parent side: WorkerPool and its
 * errors; worker side: serveTasks and callHost; workerScript finds the worker file from dist/ or sources.
 */
export { PoolClosedError, WorkerCrashedError, WorkerPool, WorkerTaskError, livePools, recycleFromEnv, type PoolStats, type RecyclePolicy, type RunOptions, type WorkerPoolOptions } from "./pool.js";
export { callHost, HostCallError, serveTasks, type TaskContext } from "./serve.js";
export { workerScript } from "./script.js";
export { bulkEveryFromEnv, DEFAULT_BULK_EVERY, EngineBusyError, LANES, LaneScheduler, laneLimitsFromEnv, type Lane, type LaneLimits, type LaneSchedulerOptions, type SchedulerStats, type SubmitOptions } from "./lanes.js";

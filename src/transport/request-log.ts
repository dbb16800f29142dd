// The one log line per request. At the default `info` level this runs on every request, so it is
// written without pino's per-call machinery: when the server owns the log destination, one
// compact JSON line (pino's own field names and level numbers, so log tooling reads it alike) is
// appended to the asynchronous destination; otherwise (an injected logger) it goes through pino.
//
// Lines are batched: one write per FLUSH_MS (or per FLUSH_BYTES) rather than one per request.
// Each write to the destination is an fs.write on the thread pool, and its hand-off and context
// switch cost about a fifth of the CPU of a small request (bench/profile.ts, at info). A line
// therefore reaches the log up to FLUSH_MS after its response; close() and process exit write
// what is pending.
import { hostname } from "node:os";
import type { Logger } from "pino";

interface Destination {
  write(line: string): unknown;
  /** sonic-boom's: writes everything pending before returning (used at process exit). */
  flushSync?(): void;
}

const FLUSH_MS = 50;
const FLUSH_BYTES = 64 * 1024;

export class RequestLog {
  readonly enabled: boolean;
  private readonly prefix: string;
  private pending = "";
  private timer: NodeJS.Timeout | undefined;
  private readonly onExit = () => {
    this.flush();
    try {
      this.destination?.flushSync?.();
    } catch {
      // Nothing more can be done for a log at exit (a destination not open yet, or closed).
    }
  };

  constructor(
    private readonly log: Logger,
    private readonly destination?: Destination,
  ) {
    this.enabled = log.isLevelEnabled("info");
    this.prefix = `{"level":30,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
    if (this.enabled && destination) process.once("exit", this.onExit);
  }

  write(reqId: string, clientRequestId: string | undefined, method: string, url: string, status: number, elapsedMs: number) {
    const ms = Math.round(elapsedMs);
    if (!this.destination) {
      this.log.info({ reqId, clientRequestId, method, url, status, ms }, "request");
      return;
    }
    const client = clientRequestId === undefined ? "" : `,"clientRequestId":${JSON.stringify(clientRequestId)}`;
    this.pending += `${this.prefix},"time":${Date.now()},"reqId":"${reqId}"${client},"method":"${method}","url":${JSON.stringify(url)},"status":${status},"ms":${ms},"msg":"request"}\n`;
    if (this.pending.length >= FLUSH_BYTES) this.flush();
    else if (this.timer === undefined) {
      this.timer = setTimeout(this.flush, FLUSH_MS);
      // A pending line does not keep the process alive; exit writes it.
      this.timer.unref();
    }
  }

  /** Writes the pending lines to the destination. */
  readonly flush = () => {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
    if (this.pending === "") return;
    const lines = this.pending;
    this.pending = "";
    this.destination!.write(lines);
  };

  /** Writes what is pending; later lines still go out (the server may answer while it closes). */
  close() {
    this.flush();
    process.removeListener("exit", this.onExit);
  }
}

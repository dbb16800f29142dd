// The one log line per request. At the default `info` level this runs on every request, so it is
// written without pino's per-call machinery: when the server owns the log destination, one
// compact JSON line (pino's own field names and level numbers, so log tooling reads it alike) is
// appended to the asynchronous destination; otherwise (an injected logger) it goes through pino.
import { hostname } from "node:os";
import type { Logger } from "pino";

interface Destination {
  write(line: string): unknown;
}

export class RequestLog {
  readonly enabled: boolean;
  private readonly prefix: string;

  constructor(
    private readonly log: Logger,
    private readonly destination?: Destination,
  ) {
    this.enabled = log.isLevelEnabled("info");
    this.prefix = `{"level":30,"pid":${process.pid},"hostname":${JSON.stringify(hostname())}`;
  }

  write(reqId: string, clientRequestId: string | undefined, method: string, url: string, status: number, elapsedMs: number) {
    const ms = Math.round(elapsedMs);
    if (!this.destination) {
      this.log.info({ reqId, clientRequestId, method, url, status, ms }, "request");
      return;
    }
    const client = clientRequestId === undefined ? "" : `,"clientRequestId":${JSON.stringify(clientRequestId)}`;
    this.destination.write(
      `${this.prefix},"time":${Date.now()},"reqId":"${reqId}"${client},"method":"${method}","url":${JSON.stringify(url)},"status":${status},"ms":${ms},"msg":"request"}\n`,
    );
  }
}

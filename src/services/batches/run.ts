// Running requests into the platform's output lines: the one loop that both the main thread and
// a batch worker thread (worker.ts) run over a chunk of the input. Requests run at most
// `concurrency` at once; each result becomes its output (or error) line at once, and lines go to
// the sinks in input order as soon as those before them are there, so no result objects are kept.
import { randomBytes } from "node:crypto";
import type { Principal } from "../../auth/principal.js";
import type { TurnTaker } from "../../common/yield.js";
import { zeroUsage, type EndpointCall, type Usage } from "./endpoints.js";
import { parseLine, requestTexts, type InputLine, type RequestChunk } from "./input.js";

/** Requests [from, to) of a chunk. */
export interface RequestRange {
  chunk: RequestChunk;
  from: number;
  to: number;
}

/** What a run of requests gave: the first `done` of them, as JSONL bytes. */
export interface RunResult {
  output: Uint8Array;
  errors: Uint8Array;
  completed: number;
  failed: number;
  usage: Usage | null;
  done: number;
}

export interface RunLimits {
  concurrency: number;
  /** No new request is taken after this time (Date.now()), nor … */
  deadline: number;
  /** … once the lines written reach this many bytes. */
  maxBytes: number;
  /** Hands the event loop a turn now and then (on the main thread); null in a worker. */
  turns: TurnTaker | null;
  /** The requests of a run of one whole chunk, already parsed (by checkChunk), by index. */
  parsed?: InputLine[];
}

/** A line that passed validation no longer parses: the stored input changed under the batch. */
export class InputChangedError extends Error {
  override readonly name = "InputChangedError";
}

export function addUsageTo(a: Usage, b: Usage): void {
  a.input_tokens += b.input_tokens;
  a.cached_tokens += b.cached_tokens;
  a.output_tokens += b.output_tokens;
  a.reasoning_tokens += b.reasoning_tokens;
  a.total_tokens += b.total_tokens;
}

/**
 * JSONL text gathered outside the JavaScript heap. A slice's 10,000 output lines kept as strings
 * until its end would outlive the young generation and be copied by every scavenge on the way to
 * the old one (a third of a batch's time in the collector); here each line dies at once.
 */
class LineSink {
  private buf = Buffer.allocUnsafe(64 * 1024);
  private len = 0;
  append(text: string): void {
    const need = this.len + text.length * 3; // UTF-8 takes at most 3 bytes per UTF-16 unit
    if (need > this.buf.length) {
      const next = Buffer.allocUnsafe(Math.max(need, this.buf.length * 2));
      this.buf.copy(next, 0, 0, this.len);
      this.buf = next;
    }
    this.len += this.buf.write(text, this.len, "utf8");
  }
  get length(): number {
    return this.len;
  }
  /** The bytes, in a buffer of their own (which can be moved to another thread). */
  bytes(): Uint8Array {
    return new Uint8Array(this.buf.subarray(0, this.len));
  }
}

/** Ids for output lines and request ids, from one draw of random bytes (16 bytes each). */
function idPool(n: number) {
  const hex = randomBytes(n * 16).toString("hex");
  let at = 0;
  return () => hex.slice(at, (at += 32));
}

/**
 * Runs the requests of `ranges` (validated lines of a batch for `endpoint`) on `call` as
 * `principal`, in order of taking, within `limits`; none is taken once `signal` has fired.
 * Indices are taken in order and every one taken is run, so the first `done` results are all there.
 */
export async function runRequests(
  ranges: RequestRange[],
  endpoint: string,
  call: EndpointCall | undefined,
  principal: Principal,
  signal: AbortSignal,
  limits: RunLimits,
): Promise<RunResult> {
  let total = 0;
  for (const r of ranges) total += r.to - r.from;
  const texts = ranges.map((r) => requestTexts(r.chunk));
  const lines: (string | undefined)[] = new Array(total);
  const ok: boolean[] = new Array(total);
  const out = new LineSink();
  const errs = new LineSink();
  let written = 0;
  let completed = 0;
  const flushInOrder = () => {
    for (let t = lines[written]; t !== undefined; t = lines[written]) {
      if (ok[written]) {
        out.append(t);
        completed++;
      } else errs.append(t);
      lines[written++] = undefined;
    }
  };
  const usage = zeroUsage();
  let hasUsage = false;
  const id = idPool(total * 2);
  // The next request to take: its index, and where it is.
  let next = 0;
  let range = 0;
  let at = ranges[0]?.from ?? 0;
  // One signal for the run, linked to the caller's: each request's context listens on it (a
  // listener per request on the caller's own signal would pile up over a whole batch), and a
  // loop that fails fires it to stop the others.
  const stop = new AbortController();
  const runSignal = AbortSignal.any([signal, stop.signal]);
  const worker = async () => {
    // One context per worker: the services read only its principal and signal.
    const ctx = call?.context(principal, runSignal);
    // The bytes of the lines in the sinks: those still out of order (at most `concurrency`) are not counted yet.
    while (next < total && !runSignal.aborted && (next === 0 || (out.length + errs.length < limits.maxBytes && Date.now() <= limits.deadline))) {
      // Local requests resolve at once: without this a long run would hold the event loop.
      const turn = limits.turns?.check();
      if (turn) {
        await turn;
        continue; // the limits are checked again
      }
      const i = next++;
      while (at >= ranges[range]!.to) at = ranges[++range]!.from;
      const chunk = ranges[range]!.chunk;
      const j = at++;
      const line = limits.parsed?.[j] ?? parseLine(texts[range]!(j), chunk.lines[j]!, endpoint);
      if ("code" in line) throw new InputChangedError(`input line ${line.line} no longer parses (${line.message})`);
      const r = call
        ? await call.call(line.body as never, ctx!)
        : { status: 400, body: { error: { message: `The endpoint ${endpoint} is not available on this server.`, type: "invalid_request_error", param: null, code: "endpoint_unavailable" } }, usage: null };
      // The platform's output line; keys in the order JSON.stringify of the object would give.
      lines[i] = `{"id":"batch_req_${id()}","custom_id":${JSON.stringify(line.customId)},"response":{"status_code":${r.status},"request_id":"req_${id()}","body":${JSON.stringify(r.body)}},"error":null}\n`;
      ok[i] = r.status >= 200 && r.status < 300;
      if (i === written) flushInOrder();
      if (r.usage) {
        addUsageTo(usage, r.usage);
        hasUsage = true;
      }
    }
  };
  // A loop that fails stops the others from taking more, and the run ends only when none is
  // left running (nothing of it goes on behind the caller's back).
  const loops = Array.from({ length: Math.min(limits.concurrency, total) }, () =>
    worker().catch((e) => {
      stop.abort(e);
      throw e;
    }),
  );
  const failed = (await Promise.allSettled(loops)).find((r) => r.status === "rejected");
  if (failed) throw failed.reason;
  flushInOrder(); // every request taken has its line by now
  return { output: out.bytes(), errors: errs.bytes(), completed, failed: written - completed, usage: hasUsage ? usage : null, done: next };
}

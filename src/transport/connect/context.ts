// The HandlerContext of a lean Connect unary call. The stock handler builds, per request, a
// linked AbortController (request signal + deadline + shutdown), copies every request header
// into a WHATWG Headers, formats the full URL, and aborts the controller when the call ends,
// which makes a DOMException each time. Here each of those is made only when a handler asks for
// it: `signal`, `url` and the deadline timer are lazy, request headers are a view over Node's
// parsed headers.
import type { DescMethod, DescService } from "@bufbuild/protobuf";
import { Code, ConnectError, createContextValues, type ContextValues, type HandlerContext } from "@connectrpc/connect";
import type { IncomingHttpHeaders } from "node:http";
import { NodeHeaders } from "../node-headers.js";
import { ResponseHeaders } from "../response-headers.js";

export interface RawRequestLike {
  url?: string;
  headers: IncomingHttpHeaders;
  socket: unknown;
  once(event: "close", cb: () => void): unknown;
}

export interface RawResponseLike {
  writableFinished: boolean;
  once(event: "close", cb: () => void): unknown;
}

export class LeanHandlerContext implements HandlerContext {
  readonly protocolName = "connect";
  readonly requestMethod = "POST";
  readonly requestHeader: Headers;
  readonly responseHeader: Headers = new ResponseHeaders();
  private trailer: Headers | undefined;
  readonly values: ContextValues;
  /** Absolute deadline (ms since epoch) from Connect-Timeout-Ms, if any. */
  readonly deadline: number | undefined;
  private controller: AbortController | undefined;
  private abortReason: unknown;
  private ended = false;

  constructor(
    readonly service: DescService,
    readonly method: DescMethod,
    private readonly rawReq: RawRequestLike,
    private readonly rawRes: RawResponseLike,
    timeoutMs: number | undefined,
    values: ContextValues | undefined,
    private readonly shutdownSignal: AbortSignal | undefined,
  ) {
    this.requestHeader = new NodeHeaders(rawReq.headers) as unknown as Headers;
    this.values = values ?? createContextValues();
    this.deadline = timeoutMs === undefined ? undefined : Date.now() + timeoutMs;
  }

  /** Made when a handler first asks: most calls send no trailers. */
  get responseTrailer(): Headers {
    return (this.trailer ??= new ResponseHeaders());
  }

  /** The trailers a handler set, if it touched them. */
  get trailersSet(): Headers | undefined {
    return this.trailer;
  }

  timeoutMs(): number | undefined {
    return this.deadline === undefined ? undefined : this.deadline - Date.now();
  }

  get url(): string {
    const h = this.rawReq.headers;
    const authority = (h[":authority"] as string | undefined) ?? h.host ?? "localhost";
    const encrypted = !!(this.rawReq.socket as { encrypted?: boolean } | null)?.encrypted;
    return new URL(this.rawReq.url ?? "/", `${encrypted ? "https" : "http"}://${authority}`).toString();
  }

  /** Built on first use: aborted when the client goes away, on shutdown, or when the call ends. */
  get signal(): AbortSignal {
    if (this.controller) return this.controller.signal;
    const c = (this.controller = new AbortController());
    if (this.abortReason !== undefined || this.ended) {
      c.abort(this.abortReason);
      return c.signal;
    }
    this.rawRes.once("close", () => {
      if (!this.rawRes.writableFinished) this.abort(new ConnectError("the client closed the request", Code.Canceled));
    });
    const s = this.shutdownSignal;
    if (s) {
      if (s.aborted) this.abort(s.reason);
      else s.addEventListener("abort", () => this.abort(s.reason), { once: true });
    }
    return c.signal;
  }

  /** Records why the call ended early; aborts the signal if a handler holds it. */
  abort(reason?: unknown) {
    if (this.abortReason === undefined) this.abortReason = reason ?? new ConnectError("the call has ended", Code.Canceled);
    if (this.controller && !this.controller.signal.aborted) this.controller.abort(reason);
  }

  /** Called once the response is decided: ends the signal for anything still linked to it. */
  finish() {
    this.ended = true;
    if (this.controller && !this.controller.signal.aborted) this.controller.abort();
  }
}

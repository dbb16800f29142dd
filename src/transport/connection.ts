// Facts about the connection a request came on — which listener, the peer address, the client
// certificate on a mutual-TLS listener — put into every handler's context (REST, Connect,
// gRPC-Web and gRPC alike), so a handler never reaches for the raw socket. Read lazily: most
// requests never ask.
import type { IncomingMessage } from "node:http";
import type { Http2ServerRequest } from "node:http2";
import type { Socket } from "node:net";
import type { DetailedPeerCertificate, TLSSocket } from "node:tls";
import { createContextKey, createContextValues, type ContextValues, type HandlerContext } from "@connectrpc/connect";

export interface ConnectionFacts {
  /** The listener's name: "main", or the name given to an extra listener ("mtls"). */
  readonly listener: string;
  readonly remoteAddress: string | undefined;
  readonly tls: boolean;
  /** The client certificate with its issuer chain as the client sent it; undefined when none. */
  peerCertificate(): DetailedPeerCertificate | undefined;
}

const LISTENER = Symbol("atrium.listener");

/** Marks a socket as accepted by the named listener (called by the listener itself). */
export function tagSocket(socket: Socket, listener: string) {
  (socket as any)[LISTENER] = listener;
}

export const connectionKey = createContextKey<ConnectionFacts | undefined>(undefined, { description: "atrium connection facts" });

/** The listener a request came on, without building its facts (an onRequest hook asks on every request). */
export function listenerOf(req: IncomingMessage | Http2ServerRequest): string {
  return (req.socket as any)[LISTENER] ?? "main";
}

export function connectionFacts(req: IncomingMessage | Http2ServerRequest): ConnectionFacts {
  // For HTTP/2 `req.socket` is a proxy of the session's socket; the tag and TLS state are there.
  const socket = req.socket as Socket & Partial<TLSSocket>;
  return {
    listener: (socket as any)[LISTENER] ?? "main",
    remoteAddress: socket.remoteAddress,
    tls: !!socket.encrypted,
    peerCertificate() {
      if (!socket.encrypted || typeof socket.getPeerCertificate !== "function") return undefined;
      const cert = socket.getPeerCertificate(true);
      return cert && Object.keys(cert).length ? cert : undefined;
    },
  };
}

/** Context values for one request: what both the transcoder and the Connect plugin install. */
export function requestContextValues(req: { raw: IncomingMessage | Http2ServerRequest }): ContextValues {
  const values = createContextValues();
  values.set(connectionKey, connectionFacts(req.raw));
  return values;
}

export function connectionOf(ctx: HandlerContext): ConnectionFacts | undefined {
  return ctx.values.get(connectionKey);
}

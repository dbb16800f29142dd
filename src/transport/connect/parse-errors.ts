// A request message that is not valid binary protobuf, or an envelope flagged compressed when the
// request named no compression, is the caller's mistake: invalid_argument (HTTP 400, grpc-status
// 3), as a malformed JSON message or a truncated envelope already is. @connectrpc/connect reports
// both as internal ("parse binary: …", "received compressed envelope, …"; grpc-status 13) from
// inside its serialization, which no option reaches, so each universal handler's answer is mapped
// on its way out: the Connect unary error body, the Connect streaming end-stream message, the gRPC
// trailers, the gRPC-Web trailer frame. Each such request is logged once, at info (it is not a
// server fault).
import { Code } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import type { FastifyBaseLogger } from "fastify";

const PARSE_BINARY = "parse binary: ";
const COMPRESSED_UNNEGOTIATED = "received compressed envelope, but do not know how to decompress";
/** Connect streaming marks its end-stream message with this flag (and compression with 0x01). */
const END_STREAM_FLAG = 0x02;

/** Whether an internal error's message is one of the request's own faults the library mislabels. */
function isRequestFault(message: string | undefined): boolean {
  return message !== undefined && (message.startsWith(PARSE_BINARY) || message === COMPRESSED_UNNEGOTIATED);
}

/** One envelope: flags, a 4-byte big-endian length, the data. */
function envelope(flags: number, data: Buffer): Buffer {
  const frame = Buffer.alloc(5 + data.byteLength);
  frame[0] = flags;
  frame.writeUInt32BE(data.byteLength, 1);
  data.copy(frame, 5);
  return frame;
}
const GRPC_INVALID_ARGUMENT = String(Code.InvalidArgument);
const GRPC_INTERNAL = String(Code.Internal);
/** gRPC-Web marks its trailer frame with this flag (and compression with 0x01). */
const TRAILER_FLAG = 0x80;

async function allBytes(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const c of body) chunks.push(c);
  return Buffer.concat(chunks);
}

function grpcMessage(raw: string | null): string {
  if (raw === null) return "";
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

/** A Connect unary error: status 500 and `{"code":"internal","message":"parse binary: …"}`. */
async function remapConnectUnary(res: UniversalServerResponse, report: (m: string) => void): Promise<UniversalServerResponse> {
  const bytes = await allBytes(res.body!);
  let error: { code?: string; message?: string } | undefined;
  try {
    error = JSON.parse(bytes.toString("utf8"));
  } catch {
    error = undefined;
  }
  if (error?.code !== "internal" || !isRequestFault(error.message)) return { ...res, body: (async function* () { yield bytes; })() };
  report(error.message!);
  const body = Buffer.from(JSON.stringify({ ...error, code: "invalid_argument" }));
  res.header?.set("content-length", String(body.byteLength));
  return { ...res, status: codeToHttpStatus(Code.InvalidArgument), body: (async function* () { yield body; })() };
}

/** gRPC: the status is in the trailers, filled once the body has run. */
function remapGrpc(res: UniversalServerResponse, report: (m: string) => void): UniversalServerResponse {
  const body = res.body!;
  const trailer = res.trailer!;
  return {
    ...res,
    body: (async function* () {
      yield* body;
      const message = grpcMessage(trailer.get("grpc-message"));
      if (trailer.get("grpc-status") === GRPC_INTERNAL && isRequestFault(message)) {
        report(message);
        trailer.set("grpc-status", GRPC_INVALID_ARGUMENT);
      }
    })(),
  };
}

/** gRPC-Web: the status is in the last frame of the body, an uncompressed trailer frame. */
function remapGrpcWeb(res: UniversalServerResponse, report: (m: string) => void): UniversalServerResponse {
  const body = res.body!;
  return {
    ...res,
    body: (async function* () {
      for await (const chunk of body) {
        if (chunk.byteLength < 5 || chunk[0] !== TRAILER_FLAG) {
          yield chunk;
          continue;
        }
        const text = Buffer.from(chunk.buffer, chunk.byteOffset + 5, chunk.byteLength - 5).toString("latin1");
        const status = /^grpc-status:\s*(\d+)\s*$/im.exec(text)?.[1];
        const message = grpcMessage(/^grpc-message:\s*(.*?)\s*$/im.exec(text)?.[1] ?? null);
        if (status !== GRPC_INTERNAL || !isRequestFault(message)) {
          yield chunk;
          continue;
        }
        report(message);
        yield envelope(TRAILER_FLAG, Buffer.from(text.replace(/^grpc-status:\s*\d+\s*$/im, `grpc-status: ${GRPC_INVALID_ARGUMENT}`), "latin1"));
      }
    })(),
  };
}

/**
 * Connect streaming: the status is the JSON end-stream message, the last envelope of the body
 * (flag 0x02; the library writes each envelope as one chunk). A compressed one (0x03) never
 * carries these errors: they come before the response's compression is set up.
 */
function remapConnectStream(res: UniversalServerResponse, report: (m: string) => void): UniversalServerResponse {
  const body = res.body!;
  return {
    ...res,
    body: (async function* () {
      for await (const chunk of body) {
        if (chunk.byteLength < 5 || chunk[0] !== END_STREAM_FLAG) {
          yield chunk;
          continue;
        }
        let end: { error?: { code?: string; message?: string } } | undefined;
        try {
          end = JSON.parse(Buffer.from(chunk.buffer, chunk.byteOffset + 5, chunk.byteLength - 5).toString("utf8"));
        } catch {
          end = undefined;
        }
        if (end?.error?.code !== "internal" || !isRequestFault(end.error.message)) {
          yield chunk;
          continue;
        }
        report(end.error.message!);
        yield envelope(END_STREAM_FLAG, Buffer.from(JSON.stringify({ ...end, error: { ...end.error, code: "invalid_argument" } })));
      }
    })(),
  };
}

export function parseErrorsAsInvalidArgument(handler: UniversalHandler, log: FastifyBaseLogger): UniversalHandler {
  const rpc = `${handler.service.typeName}/${handler.method.name}`;
  const report = (message: string) => log.info({ rpc, reason: message }, "rpc request is not a valid protobuf message");
  const wrapped = async (req: Parameters<UniversalHandler>[0]): Promise<UniversalServerResponse> => {
    const res = await handler(req);
    const contentType = res.header?.get("content-type") ?? "";
    if (!res.body) return res;
    if (contentType.startsWith("application/grpc-web")) return remapGrpcWeb(res, report);
    if (contentType.startsWith("application/grpc") && res.trailer) return remapGrpc(res, report);
    if (contentType.startsWith("application/connect+")) return remapConnectStream(res, report);
    if (res.status === 500 && contentType.startsWith("application/json")) return remapConnectUnary(res, report);
    return res;
  };
  return Object.assign(wrapped, handler);
}

// A request message that is not valid binary protobuf is the caller's mistake: invalid_argument
// (HTTP 400, grpc-status 3), as connect-go and grpc-go answer it, and as a malformed JSON message
// already is. @connectrpc/connect reports it as internal ("parse binary: …", grpc-status 13) from
// inside its serialization, which no option reaches, so each universal handler's answer is
// mapped on its way out: the Connect unary error body, the gRPC trailers, the gRPC-Web trailer
// frame. Each such request is logged once, at info (it is not a server fault).
import { Code } from "@connectrpc/connect";
import type { UniversalHandler, UniversalServerResponse } from "@connectrpc/connect/protocol";
import { codeToHttpStatus } from "@connectrpc/connect/protocol-connect";
import type { FastifyBaseLogger } from "fastify";

const PARSE_BINARY = "parse binary: ";
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
  if (error?.code !== "internal" || !error.message?.startsWith(PARSE_BINARY)) return { ...res, body: (async function* () { yield bytes; })() };
  report(error.message);
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
      if (trailer.get("grpc-status") === GRPC_INTERNAL && message.startsWith(PARSE_BINARY)) {
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
        if (status !== GRPC_INTERNAL || !message.startsWith(PARSE_BINARY)) {
          yield chunk;
          continue;
        }
        report(message);
        const data = Buffer.from(text.replace(/^grpc-status:\s*\d+\s*$/im, `grpc-status: ${GRPC_INVALID_ARGUMENT}`), "latin1");
        const frame = Buffer.alloc(5 + data.byteLength);
        frame[0] = TRAILER_FLAG;
        frame.writeUInt32BE(data.byteLength, 1);
        data.copy(frame, 5);
        yield frame;
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
    if (res.status === 500 && contentType.startsWith("application/json")) return remapConnectUnary(res, report);
    return res;
  };
  return Object.assign(wrapped, handler);
}

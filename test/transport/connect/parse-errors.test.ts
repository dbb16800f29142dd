// Issue 22, defect 6: a request message that is not valid binary protobuf, or an envelope flagged
// compressed without a negotiated compression, is invalid_argument on every protocol (not
// internal), unary and streaming, and is logged.
import http2 from "node:http2";
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY, startTestServer, type TestServer } from "../../shared/server.js";

const MALFORMED = Buffer.from([0x0a, 0xff, 0xff]); // field 1, length-delimited, a length past the end
const PATH = "/atrium.v1.ModelsService/GetModel";
/** One gRPC / gRPC-Web frame: flags, a 4-byte big-endian length, the message. */
function envelope(flags: number, data: Buffer): Buffer {
  const frame = Buffer.alloc(5 + data.length);
  frame[0] = flags;
  frame.writeUInt32BE(data.length, 1);
  data.copy(frame, 5);
  return frame;
}

let s: TestServer;
const logged: Array<{ msg?: string; rpc?: string; reason?: string }> = [];
beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split("\n")) if (line) logged.push(JSON.parse(line));
      cb();
    },
  });
  s = await startTestServer({ logger: pino({ level: "info" }, sink) });
});
afterAll(async () => s?.stop());

function grpcCall(contentType: string, message = MALFORMED, flags = 0): Promise<{ headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const session = http2.connect(s.url);
    session.on("error", reject);
    const req = session.request({ ":method": "POST", ":path": PATH, "content-type": contentType, te: "trailers", authorization: `Bearer ${API_KEY}` });
    let headers: http2.IncomingHttpHeaders = {};
    let trailers: http2.IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    req.on("response", (h) => (headers = h));
    req.on("trailers", (t) => (trailers = t));
    req.on("data", (d: Buffer) => chunks.push(d));
    req.on("error", reject);
    req.on("end", () => {
      session.close();
      resolve({ headers, trailers, body: Buffer.concat(chunks) });
    });
    req.end(envelope(flags, message));
  });
}

describe("malformed binary protobuf (issue 22, defect 6)", () => {
  it("Connect unary: 400 invalid_argument, logged", async () => {
    const before = logged.length;
    const res = await fetch(`${s.url}${PATH}`, { method: "POST", headers: { "content-type": "application/proto", authorization: `Bearer ${API_KEY}` }, body: MALFORMED });
    expect(res.status).toBe(400);
    const body = (await res.json()) as { code: string; message: string };
    expect(body.code).toBe("invalid_argument");
    expect(body.message).toMatch(/^parse binary: /);
    expect(logged.slice(before).some((l) => l.msg === "rpc request is not a valid protobuf message" && l.rpc === "atrium.v1.ModelsService/GetModel")).toBe(true);
  });

  it("gRPC: grpc-status 3, logged", async () => {
    const before = logged.length;
    const { headers, trailers } = await grpcCall("application/grpc");
    const status = trailers["grpc-status"] ?? headers["grpc-status"];
    expect(status).toBe("3");
    expect(decodeURIComponent(String(trailers["grpc-message"] ?? headers["grpc-message"]))).toMatch(/^parse binary: /);
    expect(logged.slice(before).some((l) => l.msg === "rpc request is not a valid protobuf message")).toBe(true);
  });

  it("gRPC-Web: the trailer frame says grpc-status 3", async () => {
    const { body } = await grpcCall("application/grpc-web+proto");
    // The last frame is the trailer frame (flag 0x80), its length in bytes 1-4.
    let at = 0;
    let trailer = "";
    while (at + 5 <= body.length) {
      const length = body.readUInt32BE(at + 1);
      if (body[at] === 0x80) trailer = body.subarray(at + 5, at + 5 + length).toString();
      at += 5 + length;
    }
    expect(at).toBe(body.length);
    expect(trailer).toMatch(/^grpc-status: ?3\r?$/m);
    expect(trailer).toMatch(/grpc-message: ?parse%20binary/);
  });

  it("Connect streaming: a malformed message or an unnegotiated compressed envelope ends with invalid_argument, logged", async () => {
    const STREAM = "/atrium.v1.FilesService/CreateFile"; // client streaming
    for (const body of [envelope(0, MALFORMED), envelope(1, Buffer.from([1, 2, 3]))]) {
      const before = logged.length;
      const res = await fetch(`${s.url}${STREAM}`, { method: "POST", headers: { "content-type": "application/connect+proto", authorization: `Bearer ${API_KEY}` }, body: new Uint8Array(body) });
      expect(res.status).toBe(200); // Connect streaming reports errors in its end-stream message
      const bytes = Buffer.from(await res.arrayBuffer());
      // One envelope: the end-stream message (flag 0x02), its length in bytes 1-4.
      expect(bytes[0]).toBe(0x02);
      expect(bytes.readUInt32BE(1)).toBe(bytes.length - 5);
      const end = JSON.parse(bytes.subarray(5).toString()) as { error: { code: string; message: string } };
      expect(end.error.code).toBe("invalid_argument");
      expect(end.error.message).toMatch(/^parse binary: |compressed envelope/);
      expect(logged.slice(before).some((l) => l.msg === "rpc request is not a valid protobuf message" && l.rpc === "atrium.v1.FilesService/CreateFile")).toBe(true);
    }
  });

  it("gRPC: an unnegotiated compressed envelope is grpc-status 3", async () => {
    const { headers, trailers } = await grpcCall("application/grpc", MALFORMED, 1);
    expect(trailers["grpc-status"] ?? headers["grpc-status"]).toBe("3");
  });

  it("a valid message still succeeds over Connect and gRPC", async () => {
    const valid = Buffer.from([0x0a, 0x06, ...Buffer.from("gpt-4o")]); // GetModelRequest{model: "gpt-4o"}
    const res = await fetch(`${s.url}${PATH}`, { method: "POST", headers: { "content-type": "application/proto", authorization: `Bearer ${API_KEY}` }, body: valid });
    expect(res.status).toBe(200);
    const { headers, trailers } = await grpcCall("application/grpc", valid);
    expect(trailers["grpc-status"] ?? headers["grpc-status"]).toBe("0");
  });
});

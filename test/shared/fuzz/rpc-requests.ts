// fast-check arbitraries for malformed RPC calls on one method: Connect unary with garbage
// protobuf or JSON, and enveloped messages (Connect streaming, gRPC-Web, gRPC over h2c) with bad
// lengths, bad flags, truncated frames and garbage protobuf inside.
import fc from "fast-check";
import type { FuzzRequest } from "./request.js";

/** A 5-byte envelope prefix (flags, big-endian length) and the message; `declared` may lie. */
export function envelope(flags: number, data: Buffer, declared = data.length): Buffer {
  const head = Buffer.alloc(5);
  head[0] = flags;
  head.writeUInt32BE(declared >>> 0, 1);
  return Buffer.concat([head, data]);
}

/** Garbage protobuf: random bytes, and a few classic breakages (overlong varint, length past the end, group tags). */
const garbage: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b)),
  fc.constantFrom(
    Buffer.from([0x0a, 0xff, 0xff]),
    Buffer.from([0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
    Buffer.from([0x0b, 0x0c]),
    Buffer.from([0x0f]),
    Buffer.from([0x0a, 0x05, 0xff, 0xfe, 0xfd, 0xfc, 0xfb]),
    Buffer.from([0x00]),
    Buffer.alloc(0),
  ),
);

/** Envelopes broken in each way a reader must survive, keyed by kind. */
const frames: Record<string, fc.Arbitrary<Buffer>> = {
  garbage: garbage.map((g) => envelope(0, g)),
  "bad-length": fc.tuple(garbage, fc.integer({ min: -64, max: 64 }).filter((d) => d !== 0)).map(([g, d]) => envelope(0, g, Math.max(0, g.length + d))),
  "huge-length": fc.tuple(garbage, fc.constantFrom(0xffffffff, 0x7fffffff, 2 ** 24)).map(([g, n]) => envelope(0, g, n)),
  "bad-flags": fc.tuple(fc.constantFrom(0x01, 0x02, 0x03, 0x04, 0x80, 0x81, 0xff), garbage).map(([f, g]) => envelope(f, g)),
  truncated: fc.tuple(garbage, fc.nat()).map(([g, n]) => {
    const e = envelope(0, g);
    return e.subarray(0, n % e.length);
  }),
  "two-frames": fc.tuple(garbage, garbage).map(([a, b]) => Buffer.concat([envelope(0, a), envelope(0, b)])),
};

export function rpcVariants(rpcPath: string, apiKey: string): Record<string, fc.Arbitrary<FuzzRequest>> {
  const auth = { authorization: `Bearer ${apiKey}` };
  const req = (kind: string, protocol: FuzzRequest["protocol"], headers: Record<string, string>, body: fc.Arbitrary<Buffer>) =>
    body.map((b): FuzzRequest => ({ op: rpcPath, kind, protocol, method: "POST", target: rpcPath, headers: { ...auth, ...headers }, body: b }));
  const out: Record<string, fc.Arbitrary<FuzzRequest>> = {
    "connect:garbage-proto": req("connect:garbage-proto", "http1", { "content-type": "application/proto", "connect-protocol-version": "1" }, garbage),
    "connect:garbage-json": req(
      "connect:garbage-json",
      "http1",
      { "content-type": "application/json", "connect-protocol-version": "1" },
      fc.constantFrom("", "{", "[]", "null", '{"model":1e400}', '{"unknown":1}', "\u0000", '{"a":' + "[".repeat(3000) + "]".repeat(3000) + "}").map((s) => Buffer.from(s)),
    ),
  };
  for (const [kind, body] of Object.entries(frames)) {
    out[`connect-stream:${kind}`] = req(`connect-stream:${kind}`, "http1", { "content-type": "application/connect+proto", "connect-protocol-version": "1" }, body);
    out[`grpc-web:${kind}`] = req(`grpc-web:${kind}`, "http1", { "content-type": "application/grpc-web+proto", "x-grpc-web": "1" }, body);
    out[`grpc:${kind}`] = req(`grpc:${kind}`, "h2", { "content-type": "application/grpc", te: "trailers" }, body);
  }
  return out;
}

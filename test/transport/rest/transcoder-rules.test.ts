// The transcoder reads google.api.http from descriptors at start-up; a rule it cannot serve must
// fail there (bindRoute / registerRestRoutes throw InvalidHttpRule), never at request time.
import { describe, expect, it } from "vitest";
import Fastify from "fastify";
import { create, createFileRegistry, setExtension, type DescService } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  FileDescriptorProtoSchema,
  MethodOptionsSchema,
  file_google_protobuf_descriptor,
} from "@bufbuild/protobuf/wkt";
import { http } from "../../../gen/google/api/annotations_pb.js";
import { HttpRuleSchema, file_google_api_http } from "../../../gen/google/api/http_pb.js";
import { file_google_api_annotations } from "../../../gen/google/api/annotations_pb.js";
import { file_google_api_httpbody } from "../../../gen/google/api/httpbody_pb.js";
import { InvalidHttpRule, bindRoute, registerRestRoutes } from "../../../src/transport/rest/transcoder.js";
import { FilesService } from "../../../gen/atrium/v1/files_pb.js";
import { filesArea } from "../../../src/services/files/index.js";
import { MissingAccessRule, requireAccessRules } from "../../../src/auth/access.js";
import { buildServer } from "../../../src/server.js";
import { configFromEnv } from "../../../src/config.js";
import { areas } from "../../../src/services/index.js";
import { tempDir } from "../../shared/server.js";
import pino from "pino";
import { rmSync } from "node:fs";

const imports = [file_google_protobuf_descriptor, file_google_api_http, file_google_api_annotations, file_google_api_httpbody];

/** A one-method service `t.v1.S` whose method `M(Req) returns (Res)` carries `rule`. */
function serviceWith(rule: Parameters<typeof create<typeof HttpRuleSchema>>[1], opts: { serverStreaming?: boolean; clientStreaming?: boolean; withMessageField?: boolean } = {}): DescService {
  const options = create(MethodOptionsSchema);
  setExtension(options, http, create(HttpRuleSchema, rule));
  const str = (name: string, number: number) => ({ name, number, type: FieldDescriptorProto_Type.STRING, label: FieldDescriptorProto_Label.OPTIONAL, jsonName: name });
  const file = create(FileDescriptorProtoSchema, {
    name: "t/v1/t.proto",
    package: "t.v1",
    syntax: "proto3",
    dependency: ["google/api/annotations.proto"],
    messageType: [
      {
        name: "Req",
        field: [
          str("id", 1),
          str("q", 2),
          ...(opts.withMessageField
            ? [{ name: "sub", number: 3, type: FieldDescriptorProto_Type.MESSAGE, typeName: ".t.v1.Res", label: FieldDescriptorProto_Label.OPTIONAL, jsonName: "sub" }]
            : []),
        ],
      },
      { name: "Res", field: [str("id", 1)] },
    ],
    service: [
      {
        name: "S",
        method: [
          {
            name: "M",
            inputType: ".t.v1.Req",
            outputType: ".t.v1.Res",
            options,
            serverStreaming: opts.serverStreaming ?? false,
            clientStreaming: opts.clientStreaming ?? false,
          },
        ],
      },
    ],
  });
  const registry = createFileRegistry(file, (name) => imports.find((f) => f.name + ".proto" === name || f.proto.name === name));
  return registry.getService("t.v1.S")!;
}

const bind = (s: DescService) => bindRoute(s, s.methods[0]);

describe("google.api.http rules are validated at start-up", () => {
  it("accepts a valid rule and derives path, query and body bindings", () => {
    const b = bind(serviceWith({ pattern: { case: "get", value: "/v1/things/{id}" } }))!;
    expect(b.fastifyPath).toBe("/v1/things/:id");
    expect([...b.queryFields.keys()]).toEqual(["q"]);
    expect(b.pattern.test("/v1/things/abc")).toBe(true);
    expect(b.pattern.test("/v1/things/a/b")).toBe(false);
  });

  const bad: Array<[string, DescService]> = [
    ["a path variable that is not a field", serviceWith({ pattern: { case: "get", value: "/v1/things/{nope}" } })],
    ["a path variable bound to a message field", serviceWith({ pattern: { case: "post", value: "/v1/things/{sub}" }, body: "*" }, { withMessageField: true })],
    ["a multi-segment variable", serviceWith({ pattern: { case: "get", value: "/v1/{id=things/*}" } })],
    ["a custom verb suffix", serviceWith({ pattern: { case: "post", value: "/v1/things:run" }, body: "*" })],
    ["a relative path", serviceWith({ pattern: { case: "get", value: "v1/things" } })],
    ["a body on GET", serviceWith({ pattern: { case: "get", value: "/v1/things" }, body: "*" })],
    ["a body field that does not exist", serviceWith({ pattern: { case: "post", value: "/v1/things" }, body: "missing" })],
    ["a message field left for the query string", serviceWith({ pattern: { case: "get", value: "/v1/things" } }, { withMessageField: true })],
    ["response_body", serviceWith({ pattern: { case: "post", value: "/v1/things" }, body: "*", responseBody: "id" })],
    ["additional_bindings", serviceWith({ pattern: { case: "post", value: "/v1/things" }, body: "*", additionalBindings: [{ pattern: { case: "post", value: "/v1/others" }, body: "*" }] })],
    ["a custom pattern", serviceWith({ pattern: { case: "custom", value: { kind: "HEAD", path: "/v1/things" } } })],
    ["server streaming of something other than HttpBody", serviceWith({ pattern: { case: "get", value: "/v1/things/{id}" } }, { serverStreaming: true })],
    ["client streaming with no declared multipart shape", serviceWith({ pattern: { case: "post", value: "/v1/things" }, body: "*" }, { clientStreaming: true })],
  ];
  for (const [what, svc] of bad) {
    it(`rejects ${what}`, () => {
      expect(() => bind(svc)).toThrow(InvalidHttpRule);
    });
  }

  it("fails registration (start-up) on a bad rule and on two RPCs claiming one route", async () => {
    const app = Fastify();
    const impl = { m: async () => ({}) };
    expect(() => registerRestRoutes(app, { services: [{ desc: serviceWith({ pattern: { case: "get", value: "/v1/{nope}" } }), impl }] })).toThrow(
      /path variable \{nope\}/,
    );
    const a = serviceWith({ pattern: { case: "get", value: "/v1/files/{id}" } });
    const files = { desc: FilesService, impl: Object.fromEntries(FilesService.methods.map((m) => [m.localName, async () => ({})])) };
    expect(() => registerRestRoutes(Fastify(), { services: [files, { desc: a, impl }], multipart: filesArea.multipart })).toThrow(/clashes with atrium\.v1\.FilesService\.GetFile/);
    await app.close();
  });

  it("fails registration when a method has no implementation", () => {
    expect(() => registerRestRoutes(Fastify(), { services: [{ desc: FilesService, impl: {} }], multipart: filesArea.multipart })).toThrow(/no implementation/);
  });
});

describe("atrium.v1.access is mandatory", () => {
  const open = serviceWith({ pattern: { case: "get", value: "/v1/things/{id}" } });

  it("every RPC the server serves has an access rule", () => {
    expect(() => requireAccessRules([{ desc: FilesService, impl: {} }])).not.toThrow();
  });

  it("a method without (atrium.v1.access) is named and refused", () => {
    expect(() => requireAccessRules([{ desc: FilesService, impl: {} }, { desc: open, impl: {} }])).toThrow(MissingAccessRule);
    expect(() => requireAccessRules([{ desc: open, impl: {} }])).toThrow(/missing on: t\.v1\.S\.M/);
  });

  it("the server refuses to start with an area serving such a method", async () => {
    const dir = tempDir();
    try {
      const cfg = configFromEnv({ ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dir, ATRIUM_API_KEY: "sk-access-rule-test-0001" });
      const extra = { name: "open", setup: () => ({ services: [{ desc: open, impl: { m: async () => ({}) } }] }) };
      await expect(buildServer(cfg, { logger: pino({ level: "silent" }), areas: [...areas, extra] })).rejects.toThrow(MissingAccessRule);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

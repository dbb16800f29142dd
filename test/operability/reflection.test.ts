// gRPC server reflection (v1 and v1alpha) on the main port: `buf curl --reflect` lists and calls
// the services with no proto files, over each reflection protocol; and a Python client built on
// Debian's grpcio (reflection stubs generated from the vendored reflection.proto with protoc)
// discovers a method, rebuilds its messages from the returned descriptors and calls it.
import { execFile, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY, startTestServer, type TestServer } from "../shared/server.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PYTHON_HINT = "install the Debian packages python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

/** Runs a command without blocking the event loop (the server under test runs in this process). */
function run(cmd: string, args: string[], cwd?: string): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd, encoding: "utf8", timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ status: err ? ((err as { code?: unknown }).code as number | null) ?? 1 : 0, stdout, stderr: stderr || (err?.message ?? "") }),
    );
  });
}

const bufCurl = (args: string[]) => run(join(ROOT, "node_modules/.bin/buf"), ["curl", "--http2-prior-knowledge", ...args]);

describe("buf curl --reflect", () => {
  for (const reflect of ["grpc-v1", "grpc-v1alpha"]) {
    it(`lists services and methods (${reflect})`, async () => {
      const services = await bufCurl(["--reflect-protocol", reflect, "--list-services", s.url]);
      expect(services.status, services.stderr).toBe(0);
      const listed = services.stdout.trim().split("\n");
      for (const name of ["atrium.v1.FilesService", "atrium.v1.ModelsService", "atrium.v1.UploadsService", "atrium.v1.ResponsesService", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"])
        expect(listed).toContain(name);
      const methods = await bufCurl(["--reflect-protocol", reflect, "--list-methods", s.url]);
      expect(methods.status, methods.stderr).toBe(0);
      expect(methods.stdout.trim().split("\n").filter((m) => m.startsWith("atrium.v1.ModelsService/")).sort()).toEqual(["atrium.v1.ModelsService/DeleteModel", "atrium.v1.ModelsService/GetModel", "atrium.v1.ModelsService/ListModels"]);
    });

    for (const protocol of ["grpc", "grpcweb", "connect"])
      it(`calls GetModel over ${protocol}, schema from reflection (${reflect})`, async () => {
        const r = await bufCurl([
          "--protocol",
          protocol,
          "--reflect-protocol",
          reflect,
          "-H",
          `Authorization: Bearer ${API_KEY}`,
          "-d",
          '{"model": "gpt-4o"}',
          `${s.url}/atrium.v1.ModelsService/GetModel`,
        ]);
        expect(r.status, r.stderr).toBe(0);
        expect(JSON.parse(r.stdout)).toMatchObject({ id: "gpt-4o", object: "model", ownedBy: "system" });
      });
  }

  it("reflection needs no key; the call itself still does", async () => {
    const r = await bufCurl(["--protocol", "grpc", "-d", '{"model": "gpt-4o"}', `${s.url}/atrium.v1.ModelsService/GetModel`]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/unauthenticated/);
  });
});

/** python3 with grpc and google.protobuf (pyenv's python3 usually lacks Debian's modules). */
function findPython(): string | undefined {
  for (const p of process.env.ATRIUM_TEST_PYTHON ? [process.env.ATRIUM_TEST_PYTHON] : ["python3", "/usr/bin/python3"]) {
    const r = spawnSync(p, ["-c", "import grpc, google.protobuf"], { encoding: "utf8" });
    if (r.status === 0) return p;
  }
  return undefined;
}

const PY_CLIENT = String.raw`
import json, sys
import grpc
from google.protobuf import descriptor_pb2, descriptor_pool, json_format
try:
    from google.protobuf import message_factory
    get_class = message_factory.GetMessageClass
except AttributeError:  # protobuf < 4.21
    get_class = lambda d: message_factory.MessageFactory().GetPrototype(d)
import importlib
version, target, key = sys.argv[1], sys.argv[2], sys.argv[3]
pb = importlib.import_module(f"grpc.reflection.{version}.reflection_pb2".replace("grpc.", "grpcreflection."))
stubs = importlib.import_module(f"grpc.reflection.{version}.reflection_pb2_grpc".replace("grpc.", "grpcreflection."))
channel = grpc.insecure_channel(target)
stub = stubs.ServerReflectionStub(channel)

def ask(**kw):
    return next(iter(stub.ServerReflectionInfo(iter([pb.ServerReflectionRequest(**kw)]))))

services = [s.name for s in ask(list_services="").list_services_response.service]
pool = descriptor_pool.DescriptorPool()
pending = list(ask(file_containing_symbol="atrium.v1.ModelsService").file_descriptor_response.file_descriptor_proto)
protos = {}
for raw in pending:
    fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
    protos[fd.name] = fd
added = set()
def add(name):
    if name in added: return
    if name not in protos:
        r = ask(file_by_filename=name)
        for raw in r.file_descriptor_response.file_descriptor_proto:
            fd = descriptor_pb2.FileDescriptorProto.FromString(raw)
            protos.setdefault(fd.name, fd)
    for dep in protos[name].dependency: add(dep)
    pool.Add(protos[name]); added.add(name)
for name in list(protos): add(name)
service = pool.FindServiceByName("atrium.v1.ModelsService")
method = service.methods_by_name["GetModel"]
Req, Res = get_class(method.input_type), get_class(method.output_type)
call = channel.unary_unary("/atrium.v1.ModelsService/GetModel", request_serializer=Req.SerializeToString, response_deserializer=Res.FromString)
res = call(Req(model="gpt-4o"), metadata=[("authorization", "Bearer " + key)], timeout=20)
missing = ask(file_containing_symbol="atrium.v1.NoSuchThing").error_response
print(json.dumps({"services": services, "model": json_format.MessageToDict(res, preserving_proto_field_name=True), "missing": [missing.error_code, missing.error_message]}))
`;

describe("Python grpcio reflection client", () => {
  const python = findPython();
  let out: string;
  beforeAll(() => {
    out = mkdtempSync(join(tmpdir(), "atrium-reflection-py-"));
  });
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it("has python3 with grpcio, protoc and grpc_python_plugin", () => {
    expect(python, PYTHON_HINT).toBeDefined();
    for (const tool of ["protoc", "grpc_python_plugin"]) expect(spawnSync("which", [tool]).status, `${tool}: ${PYTHON_HINT}`).toBe(0);
  });

  for (const version of ["v1", "v1alpha"])
    it(`discovers and calls GetModel through reflection ${version}`, async () => {
      if (!python) throw new Error(PYTHON_HINT);
      // The stubs go under a package named grpcreflection so they do not shadow grpcio's `grpc`.
      const gen = spawnSync(
        "protoc",
        [`-I${join(ROOT, "proto")}`, `--python_out=${out}`, `--grpc_python_out=${out}`, `--plugin=protoc-gen-grpc_python=${spawnSync("which", ["grpc_python_plugin"], { encoding: "utf8" }).stdout.trim()}`, `grpc/reflection/${version}/reflection.proto`],
        { encoding: "utf8" },
      );
      expect(gen.status, gen.stderr).toBe(0);
      // Rename the generated package: grpc/reflection/... → grpcreflection/reflection/...
      const fix = spawnSync("sh", ["-c", `mkdir -p grpcreflection && cp -r grpc/reflection grpcreflection/ && sed -i 's/^from grpc\\.reflection/from grpcreflection.reflection/' grpcreflection/reflection/${version}/*_grpc.py`], { cwd: out, encoding: "utf8" });
      expect(fix.status, fix.stderr).toBe(0);
      writeFileSync(join(out, "client.py"), PY_CLIENT);
      const host = new URL(s.url).host;
      const r = await run(python!, ["client.py", version, host, API_KEY], out);
      expect(r.status, r.stderr).toBe(0);
      const result = JSON.parse(r.stdout);
      expect(result.services).toContain("atrium.v1.ModelsService");
      expect(result.model).toMatchObject({ id: "gpt-4o", object: "model", owned_by: "system" });
      expect(result.missing[0]).toBe(5);
    });
});

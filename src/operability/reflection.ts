// gRPC server reflection, v1 and v1alpha (grpc.reflection.v1[alpha].ServerReflection), so grpcurl
// and `buf curl --reflect` can call every service on the main port with no proto files. It
// answers from the same descriptors the server is built from: each served service's file and
// its imports, as serialized FileDescriptorProtos. Reflection needs no credential (it reveals
// the schema, which /openapi.json publishes too), so it is served beside the wrapped services,
// not through the auth wrapper.
import { createRegistry, toBinary, type DescFile, type DescService, type Registry } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import type { ServiceBinding } from "../common/service.js";

const NOT_FOUND = 5; // grpc::StatusCode
const INVALID_ARGUMENT = 3;

type Request = v1.ServerReflectionRequest | v1alpha.ServerReflectionRequest;
type ResponseInit = {
  validHost: string;
  originalRequest: Request;
  messageResponse:
    | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
    | { case: "allExtensionNumbersResponse"; value: { baseTypeName: string; extensionNumber: number[] } }
    | { case: "listServicesResponse"; value: { service: Array<{ name: string }> } }
    | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };
};

/** What the reflection services know: the served services and every file they need. */
class Index {
  readonly services: string[];
  private readonly files = new Map<string, DescFile>();
  private readonly bytes = new Map<DescFile, Uint8Array>();
  private readonly registry: Registry;

  constructor(services: DescService[]) {
    const add = (f: DescFile) => {
      if (this.files.has(f.name)) return;
      this.files.set(f.name, f);
      for (const d of f.dependencies) add(d);
    };
    for (const s of services) add(s.file);
    this.services = [...new Set(services.map((s) => s.typeName))].sort();
    this.registry = createRegistry(...this.files.values());
  }

  file(name: string): DescFile | undefined {
    return this.files.get(name);
  }

  /** The file declaring a message, enum, service, method, field or extension. */
  fileOfSymbol(symbol: string): DescFile | undefined {
    const t = this.registry.get(symbol);
    if (t) return t.file;
    // A method or a field: its parent's file.
    const dot = symbol.lastIndexOf(".");
    if (dot <= 0) return undefined;
    const parent = this.registry.get(symbol.slice(0, dot));
    if (parent?.kind === "service") return parent.methods.some((m) => m.name === symbol.slice(dot + 1)) ? parent.file : undefined;
    if (parent?.kind === "message") return parent.fields.some((f) => f.name === symbol.slice(dot + 1)) ? parent.file : undefined;
    return undefined;
  }

  fileOfExtension(typeName: string, no: number): DescFile | undefined {
    const m = this.registry.getMessage(typeName);
    return m && this.registry.getExtensionFor(m, no)?.file;
  }

  extensionNumbers(typeName: string): number[] | undefined {
    if (!this.registry.getMessage(typeName)) return undefined;
    const out: number[] = [];
    for (const t of this.registry) if (t.kind === "extension" && t.extendee.typeName === typeName) out.push(t.number);
    return out.sort((a, b) => a - b);
  }

  /** The file and its imports (transitively), each once per stream: the client keeps what it got. */
  encode(f: DescFile, sent: Set<DescFile>): Uint8Array[] {
    const out: Uint8Array[] = [];
    const visit = (x: DescFile, requested: boolean) => {
      if (sent.has(x) && !requested) return;
      sent.add(x);
      let b = this.bytes.get(x);
      if (!b) this.bytes.set(x, (b = toBinary(FileDescriptorProtoSchema, x.proto)));
      out.push(b);
      for (const d of x.dependencies) visit(d, false);
    };
    visit(f, true);
    return out;
  }
}

function answer(index: Index, req: Request, sent: Set<DescFile>): ResponseInit {
  const base = { validHost: req.host, originalRequest: req };
  const files = (f: DescFile | undefined, what: string): ResponseInit =>
    f
      ? { ...base, messageResponse: { case: "fileDescriptorResponse", value: { fileDescriptorProto: index.encode(f, sent) } } }
      : { ...base, messageResponse: { case: "errorResponse", value: { errorCode: NOT_FOUND, errorMessage: `${what} not found` } } };
  const r = req.messageRequest;
  switch (r.case) {
    case "listServices":
      return { ...base, messageResponse: { case: "listServicesResponse", value: { service: index.services.map((name) => ({ name })) } } };
    case "fileByFilename":
      return files(index.file(r.value), `file ${r.value}`);
    case "fileContainingSymbol":
      return files(index.fileOfSymbol(r.value), `symbol ${r.value}`);
    case "fileContainingExtension":
      return files(index.fileOfExtension(r.value.containingType, r.value.extensionNumber), `extension ${r.value.extensionNumber} of ${r.value.containingType}`);
    case "allExtensionNumbersOfType": {
      const numbers = index.extensionNumbers(r.value);
      if (!numbers) return { ...base, messageResponse: { case: "errorResponse", value: { errorCode: NOT_FOUND, errorMessage: `type ${r.value} not found` } } };
      return { ...base, messageResponse: { case: "allExtensionNumbersResponse", value: { baseTypeName: r.value, extensionNumber: numbers } } };
    }
    default:
      return { ...base, messageResponse: { case: "errorResponse", value: { errorCode: INVALID_ARGUMENT, errorMessage: "no message_request set" } } };
  }
}

/** The v1 and v1alpha reflection services for `services` (and themselves). */
export function reflectionServices(services: DescService[]): ServiceBinding[] {
  const index = new Index([...services, v1.ServerReflection, v1alpha.ServerReflection]);
  const impl = {
    async *serverReflectionInfo(requests: AsyncIterable<Request>) {
      const sent = new Set<DescFile>();
      for await (const req of requests) yield answer(index, req, sent);
    },
  };
  return [
    { desc: v1.ServerReflection, impl },
    { desc: v1alpha.ServerReflection, impl },
  ];
}

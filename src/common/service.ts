// The one shape a service takes on its way to the wire: its descriptor and an implementation
// keyed by method local name. The area modules produce it, the auth wrapper returns it, and the
// REST transcoder and the Connect plugin consume it.
import type { DescService } from "@bufbuild/protobuf";

export interface ServiceBinding {
  desc: DescService;
  impl: Record<string, (...args: any[]) => any>;
}

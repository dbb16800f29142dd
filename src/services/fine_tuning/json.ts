// google.protobuf.Value fields ↔ plain JSON (graders, hyperparameter unions, metadata).
import { fromJson, toJson, type JsonValue } from "@bufbuild/protobuf";
import { ValueSchema, type Value } from "@bufbuild/protobuf/wkt";

export const jsonOf = (v: Value | undefined): JsonValue | undefined => (v === undefined ? undefined : toJson(ValueSchema, v));
export const valueOf = (j: unknown): Value | undefined => (j === undefined ? undefined : fromJson(ValueSchema, j as JsonValue));

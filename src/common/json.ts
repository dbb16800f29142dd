// A parsed JSON value, as JSON.parse and protobuf's toJson return it.
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

// Permissions a service-account mapping may list to narrow a minted token. Each one is the `scope`
// of the RPCs it opens, as declared on every RPC by its (atrium.v1.access) option, so one table —
// the proto — says which endpoints a permission opens, for REST, Connect and gRPC alike.
// test/auth/identity/config.test.ts checks that every scope an RPC declares is listed here.
//
// As for the platform's restricted keys, a write permission includes the matching read one
// (a token that may create files may also read them back); `request` (calling a model) stands alone.

export const PERMISSIONS = [
  "api.model.read", //          GET /v1/models, GET /v1/models/{model}
  "api.model.request", //       POST /v1/responses/input_tokens, /v1/embeddings, /v1/moderations
  "api.model.write", //         DELETE /v1/models/{model} (never granted to workload tokens)
  "api.files.read", //          GET /v1/files, /v1/files/{id}, /v1/files/{id}/content
  "api.files.write", //         POST /v1/files, DELETE /v1/files/{id}, /v1/uploads/*
  "api.vector_stores.read", //  GET /v1/vector_stores/**, POST /v1/vector_stores/{id}/search
  "api.vector_stores.write", // POST/DELETE /v1/vector_stores/** (stores, files, file batches)
  "api.containers.read", //     GET /v1/containers/**
  "api.containers.write", //    POST/DELETE /v1/containers/**
  "api.videos.read", //         GET /v1/videos/**
  "api.videos.write", //        POST/DELETE /v1/videos/** (create, remix, edits, extensions, characters)
  "api.fine_tuning.read", //    GET /v1/fine_tuning/jobs/**, /v1/fine_tuning/model_limits
  "api.fine_tuning.write", //   POST /v1/fine_tuning/jobs/** (create, cancel, pause, resume), graders
  "api.batch.read", //          GET /v1/batches/**
  "api.batch.write", //         POST /v1/batches, /v1/batches/{id}/cancel
] as const;

export type Permission = (typeof PERMISSIONS)[number];

/** The scopes a token holds for `permissions`: each one, plus the read of every write. */
export function grantedScopes(permissions: readonly string[]): string[] {
  const out = new Set<string>();
  for (const p of permissions) {
    out.add(p);
    if (p.endsWith(".write")) out.add(p.slice(0, -".write".length) + ".read");
  }
  return [...out];
}

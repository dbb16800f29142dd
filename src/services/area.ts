// An API area (files, uploads, vector stores, ...) is one module exporting one ApiArea. The server
// registers the list in services/index.ts and does the rest: migrations go to the store before
// it opens, services are wrapped by auth and served on every protocol, multipart shapes reach the
// transcoder, expiry handlers the sweeper, and job handlers the runner. Adding an area touches its
// own folder and one line in that list (docs/architecture.md, "The area shape").
import type { AtriumConfig } from "../config.js";
import type { Providers } from "../providers/registry.js";
import type { ServiceBinding } from "../common/service.js";
import type { Migration } from "../storage/index.js";
import type { Scope } from "../storage/types.js";
import type { MultipartShape } from "../transport/rest/multipart.js";
import type { ExpiryHandler } from "../jobs/expiry.js";
import type { FinishedListener } from "../jobs/finished-listeners.js";
import type { JobHandler, KindOptions } from "../jobs/handler.js";
import type { JobRunner } from "../jobs/runner.js";
import type { BlobOwner } from "../jobs/orphan-blobs.js";
import type { ServiceDeps } from "./deps.js";
import type { RateLimits } from "../limits/index.js";

/** What an area is built from at start-up. */
export interface AreaContext {
  deps: ServiceDeps;
  config: AtriumConfig;
  /**
   * Model-backed engines, local or upstream as ATRIUM_CONFIG's `providers` says. An area that owns
   * a local engine registers it here in setup(); others ask for a provider when they need one.
   */
  providers: Providers;
  /** The durable job runner: areas enqueue their background work on it. */
  jobs: JobRunner;
  /**
   * The rate limiter, for limits an area enforces itself (`enforceAll`, `organizationRule`: the
   * vector stores' per-store and attached-files rates). Undefined with ATRIUM_RATE_LIMITS=off.
   */
  limits?: RateLimits;
}

/** What an area contributes once built. */
export interface AreaRuntime {
  services: ServiceBinding[];
  /** Called for each expired record of a kind (a record kind, or timerKind(name) for a timer). */
  expiry?: Record<string, ExpiryHandler>;
  /**
   * The job kinds the area enqueues (names `<area>.<verb>`). `settle` is how a job's end reaches
   * the resource it works for: the runner calls it, at least once and after a restart too, for
   * every job that ends `failed` or `cancelled` (and `succeeded`, for kinds that care), so no
   * resource is left `in_progress` by a job that gave up. It must be idempotent.
   */
  jobs?: Record<string, { handler: JobHandler<any, any, any>; options?: Partial<KindOptions>; settle: FinishedListener }>;
  /**
   * The blobs the area stores, by key prefix, and which of them its records still hold: the
   * orphan sweeper (storage.sweep-orphans) removes the others once they are past its grace period.
   * Every blob an area writes must fall under one of its owners, or an orphan of it stays forever.
   */
  blobOwners?: BlobOwner[];
  /** A File was deleted or has expired (deps.events.fileDeleted): drop what refers to it. */
  onFileDeleted?(scope: Scope, fileId: string): Promise<void>;
  /** Called when the server stops, after it stopped taking requests. */
  stop?(): Promise<void>;
}

export interface ApiArea {
  /** Short, unique: "files", "vector_stores". */
  name: string;
  /**
   * Migrations for tables the area keeps beside the records (ids must be stable forever): SQLite,
   * with a `postgres` form where the change applies to a PostgreSQL database too.
   */
  migrations?: Migration[];
  /** Multipart shapes of its client-streaming RPCs, keyed by "package.Service.Method". */
  multipart?: Record<string, MultipartShape>;
  /** A top-level section of ATRIUM_CONFIG the area reads, with its JSON schema. */
  configSection?: { name: string; schema: object };
  setup(ctx: AreaContext): AreaRuntime | Promise<AreaRuntime>;
}

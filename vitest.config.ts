import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// The official-SDK suite of every area, run a second time on the scaled set-up (docs/scale-out.md,
// "Tests"): two instances on PostgreSQL, Swift (S3) and Redis behind a per-request round-robin
// proxy. Left out: the restart and crash tests (they restart one server on its data dir or kill a
// child process; the scale-out kill tests cover that), and the suites with no SDK calls.
export const SCALED_SUITES = [
  "test/services/files/rest.test.ts",
  "test/services/uploads/rest.test.ts",
  "test/services/models/rest.test.ts",
  "test/services/responses/input-tokens.test.ts",
  "test/services/embeddings/rest.test.ts",
  "test/services/moderations/rest.test.ts",
  "test/services/vector_stores/rest.test.ts",
  "test/services/containers/rest.test.ts",
  "test/services/videos/rest.test.ts",
  "test/services/fine_tuning/rest.test.ts",
  "test/services/fine_tuning/graders.test.ts",
  "test/services/batches/rest.test.ts",
];

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // One test file per core, at most four (vitest's default is cores - 1: one at a time on two
    // cores). Most suites wait on child servers, engines and timers, so a second file at a time on
    // two cores nearly halves the whole suite; four at a time overloads such a machine.
    maxWorkers: Math.min(4, availableParallelism()),
    reporters: ["default", "./test/shared/summary-reporter.ts"],
    projects: [
      { extends: true, test: { name: "embedded", include: ["test/**/*.test.ts"] } },
      // The first server of a scaled suite starts PostgreSQL and Swift: under load Swift alone can take most of a minute.
      { extends: true, test: { name: "scaled", include: SCALED_SUITES, hookTimeout: 150_000, env: { ATRIUM_TEST_ENGINES: "scaled" } } },
    ],
  },
});

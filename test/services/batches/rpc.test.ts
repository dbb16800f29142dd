// Batches over the typed protocols (a Connect client and a gRPC client on the same port), the
// calls the SDK tests make over REST: an input file uploaded through FilesService, CreateBatch of
// embeddings to completed with its output downloaded through GetFileContent (lines matching the
// inputs, the failing one in the error file), an invalid input file failing with errors naming
// the lines, CancelBatch mid-way keeping the results so far, ListBatches with after/limit — and
// errors as typed codes with the REST ErrorInfo.
import { readFileSync, writeFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fromJson, toJson } from "@bufbuild/protobuf";
import { ValueSchema } from "@bufbuild/protobuf/wkt";
import { Code, createClient, type Client, type Transport } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { BatchesService, type Batch } from "../../../gen/atrium/v1/batches_pb.js";
import { FilesService } from "../../../gen/atrium/v1/files_pb.js";
import { API_KEY, KEYS, startTestServer, tempDir, testConfig, type TestServer } from "../../shared/server.js";
import { as, download, expectRpcError, fileMessages } from "../../shared/rpc.js";
import { pollUntil } from "../../shared/poll.js";
import { jsonl } from "../../shared/jsonl.js";

let s: TestServer;
/** Slow slices (2 requests, at least 60 ms each), so that a batch can be cancelled half-way. */
let slow: TestServer;

beforeAll(async () => {
  s = await startTestServer();
  const dir = tempDir();
  const path = testConfig(dir);
  writeFileSync(path, JSON.stringify({ ...JSON.parse(readFileSync(path, "utf8")), batches: { slice_lines: 2, slice_interval_ms: 60 } }));
  slow = await startTestServer({ env: { ATRIUM_CONFIG: path } });
});
afterAll(async () => {
  await s?.stop();
  await slow?.stop();
});

const me = as(API_KEY);
const line = (custom_id: string, url: string, body: unknown) => ({ custom_id, method: "POST", url, body });

for (const [name, make] of [
  ["Connect", (server: TestServer): Transport => createConnectTransport({ baseUrl: server.url, httpVersion: "1.1" })],
  ["gRPC", (server: TestServer): Transport => createGrpcTransport({ baseUrl: server.url })],
] as const) {
  describe(name, () => {
    const clients = (server: TestServer) => {
      const t = make(server);
      return { batches: createClient(BatchesService, t), files: createClient(FilesService, t) };
    };
    const upload = async (files: Client<typeof FilesService>, rows: unknown[]) =>
      (await files.createFile(fileMessages({ purpose: "batch", filename: "batch.jsonl" }, Buffer.from(jsonl(rows))), me)).id;
    const waitFor = (batches: Client<typeof BatchesService>, id: string, until: (b: Batch) => boolean = (b) => ["completed", "failed", "cancelled", "expired"].includes(b.status)) =>
      pollUntil(() => batches.getBatch({ batchId: id }, me), until, `batch ${id}`, { intervalMs: 25 });
    const outputLines = async (files: Client<typeof FilesService>, id: string | undefined) =>
      id
        ? Buffer.from((await download(files, id, me)).data)
            .toString("utf8")
            .trim()
            .split("\n")
            .map((l) => JSON.parse(l))
        : [];

    it("an embeddings batch from CreateBatch to completed; the output file, downloaded, matches the inputs", async () => {
      const { batches, files } = clients(s);
      const texts = ["How do I reset my password?", "The weather in Paris is sunny", "Batches run in the background"];
      const rows = texts.map((t, i) => line(`req-${i}`, "/v1/embeddings", { model: "atrium-embed-use-lite", input: t }));
      rows.push(line("bad-model", "/v1/embeddings", { model: "no-such-model", input: "x" }));
      const inputFileId = await upload(files, rows);
      const created = await batches.createBatch({ inputFileId, endpoint: "/v1/embeddings", completionWindow: "24h", metadata: fromJson(ValueSchema, { via: name }) }, me);
      expect(created).toMatchObject({ object: "batch", status: "validating", endpoint: "/v1/embeddings", inputFileId, completionWindow: "24h" });
      expect(created.expiresAt).toBe(created.createdAt + 24n * 3600n);
      expect(toJson(ValueSchema, created.metadata!)).toEqual({ via: name });

      const done = await waitFor(batches, created.id);
      expect(done.status).toBe("completed");
      expect(done.requestCounts).toMatchObject({ total: 4n, completed: 3n, failed: 1n });
      expect(done.usage!.inputTokens).toBeGreaterThan(0n);
      for (const t of ["inProgressAt", "finalizingAt", "completedAt"] as const) expect(done[t]).toBeGreaterThanOrEqual(done.createdAt);
      const out = await outputLines(files, done.outputFileId);
      expect(out.map((l) => l.custom_id)).toEqual(texts.map((_, i) => `req-${i}`));
      for (const l of out) {
        expect(l.response.status_code).toBe(200);
        expect(l.response.body.data[0].embedding).toHaveLength(512);
      }
      const errs = await outputLines(files, done.errorFileId);
      expect(errs.map((l) => [l.custom_id, l.response.status_code, l.response.body.error.code])).toEqual([["bad-model", 404, "model_not_found"]]);
      expect((await files.getFile({ fileId: done.outputFileId! }, me)).purpose).toBe("batch_output");
    });

    it("an invalid input file fails the batch with errors naming the lines", async () => {
      const { batches, files } = clients(s);
      const ok = (id: string) => line(id, "/v1/embeddings", { model: "atrium-embed-use-lite", input: "x" });
      const inputFileId = await upload(files, [ok("a"), "{not json", line("b", "/v1/chat/completions", {}), ok("a")]);
      const done = await waitFor(batches, (await batches.createBatch({ inputFileId, endpoint: "/v1/embeddings", completionWindow: "24h" }, me)).id);
      expect(done.status).toBe("failed");
      expect(done.errors!.data.map((e) => [Number(e.line), e.code])).toEqual([
        [2, "invalid_json_line"],
        [3, "invalid_url"],
        [4, "duplicate_custom_id"],
      ]);
      expect(done.outputFileId).toBeUndefined();
    });

    it("CancelBatch mid-way: cancelling → cancelled, the results so far kept in the output; a finished batch cannot be cancelled", async () => {
      const { batches, files } = clients(slow);
      const rows = Array.from({ length: 60 }, (_, i) => line(`r${i}`, "/v1/responses/input_tokens", { model: "gpt-4o", input: `request ${i}` }));
      const batch = await batches.createBatch({ inputFileId: await upload(files, rows), endpoint: "/v1/responses/input_tokens", completionWindow: "24h" }, me);
      await waitFor(batches, batch.id, (b) => (b.requestCounts?.completed ?? 0n) >= 4n);
      const cancelling = await batches.cancelBatch({ batchId: batch.id }, me);
      expect(cancelling.status).toBe("cancelling");
      const done = await waitFor(batches, batch.id);
      expect(done.status).toBe("cancelled");
      expect(done.cancelledAt).toBeGreaterThanOrEqual(done.cancellingAt!);
      const completed = Number(done.requestCounts!.completed);
      expect(completed).toBeGreaterThanOrEqual(4);
      expect(completed).toBeLessThan(60);
      expect((await outputLines(files, done.outputFileId)).map((l) => l.custom_id)).toEqual(Array.from({ length: completed }, (_, i) => `r${i}`));
      expect((await batches.cancelBatch({ batchId: batch.id }, me)).status).toBe("cancelled");
      const finished = await waitFor(batches, (await batches.createBatch({ inputFileId: await upload(files, rows.slice(0, 1)), endpoint: "/v1/responses/input_tokens", completionWindow: "24h" }, me)).id);
      await expectRpcError(() => batches.cancelBatch({ batchId: finished.id }, me), Code.InvalidArgument, { httpStatus: 400, code: "invalid_batch_state" });
    });

    it("ListBatches pages with after/limit; another project sees none of them; errors are typed", async () => {
      const { batches } = clients(s);
      const all = await batches.listBatches({ limit: 100 }, me);
      expect(all.data.length).toBeGreaterThanOrEqual(2);
      const first = await batches.listBatches({ limit: 1 }, me);
      expect(first.data.map((b) => b.id)).toEqual([all.data[0]!.id]);
      expect(first.hasMore).toBe(true);
      const next = await batches.listBatches({ limit: 1, after: first.data[0]!.id }, me);
      expect(next.data.map((b) => b.id)).toEqual([all.data[1]!.id]);
      expect((await batches.listBatches({ limit: 100 }, as(KEYS.projectB))).data).toEqual([]);
      await expectRpcError(() => batches.getBatch({ batchId: all.data[0]!.id }, as(KEYS.projectB)), Code.NotFound, { httpStatus: 404, param: "batch_id" });
      await expectRpcError(() => batches.createBatch({ inputFileId: "file-nope", endpoint: "/v1/embeddings", completionWindow: "24h" }, me), Code.NotFound, { httpStatus: 404, param: "input_file_id" });
      await expectRpcError(() => batches.createBatch({ inputFileId: "file-nope", endpoint: "/v1/images", completionWindow: "24h" }, me), Code.InvalidArgument, { httpStatus: 400, param: "endpoint" });
    });
  });
}

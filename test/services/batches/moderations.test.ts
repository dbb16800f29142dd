// A /v1/moderations batch runs on the moderation area's service and local provider (apart from
// rest.test.ts: the local classifier's first use embeds its reference bank, ~30 s here).
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { startTestServer, type TestServer } from "../../shared/server.js";
import { api, fileLines, sdk, toFile } from "../../shared/rest.js";
import { pollUntil } from "../../shared/poll.js";

let s: TestServer;
let client: OpenAI;

beforeAll(async () => {
  s = await startTestServer();
  client = sdk(s.baseURL, undefined, { timeout: 120_000 });
});
afterAll(async () => s?.stop());

describe("a moderations batch", () => {
  it("each line's body is what POST /v1/moderations answers for it", { timeout: 180_000 }, async () => {
    const inputs = ["I will hurt you", "What a lovely day for a picnic"];
    const rows = inputs.map((input, i) => ({ custom_id: `m${i}`, method: "POST", url: "/v1/moderations", body: { model: "omni-moderation-latest", input } }));
    const file = await client.files.create({ file: await toFile(Buffer.from(rows.map((r) => JSON.stringify(r)).join("\n")), "mod.jsonl"), purpose: "batch" });
    const batch = await client.batches.create({ input_file_id: file.id, endpoint: "/v1/moderations", completion_window: "24h" });
    const done = await pollUntil(() => client.batches.retrieve(batch.id), (b) => ["completed", "failed", "cancelled"].includes(b.status), `batch ${batch.id}`, {
      ms: 170_000,
      intervalMs: 200,
    });
    expect(done.status).toBe("completed");
    expect(done.request_counts).toEqual({ total: 2, completed: 2, failed: 0 });
    const out = await fileLines(client, done.output_file_id);
    for (const [i, input] of inputs.entries()) {
      const direct = (await (await api(s.baseURL, "/moderations", { method: "POST", json: { model: "omni-moderation-latest", input } })).json()) as any;
      expect(out[i].custom_id).toBe(`m${i}`);
      expect(out[i].response.status_code).toBe(200);
      expect(out[i].response.body.model).toBe(direct.model);
      expect(out[i].response.body.results).toEqual(direct.results);
    }
    expect(out[0].response.body.results[0].flagged).toBe(true);
  });
});

// Issue 22, defect 9: `metadata` is a map of strings wherever it is taken; a scalar or an array is
// refused as what it is, and a wrong value type is named as what it is.
import { afterAll, beforeAll, describe, it } from "vitest";
import { startTestServer, type TestServer } from "../shared/server.js";
import { api, expectError } from "../shared/rest.js";

let s: TestServer;
let fileId: string;
let fineTuneFileId: string;
beforeAll(async () => {
  s = await startTestServer();
  const form = new FormData();
  form.set("purpose", "batch");
  form.set("file", new Blob(['{"custom_id":"a","method":"POST","url":"/v1/embeddings","body":{"model":"atrium-embed-use-lite","input":"hi"}}\n']), "in.jsonl");
  fileId = ((await (await api(s.baseURL, "/files", { method: "POST", body: form })).json()) as { id: string }).id;
  const training = new FormData();
  training.set("purpose", "fine-tune");
  training.set("file", new Blob(['{"messages":[{"role":"user","content":"1+1"},{"role":"assistant","content":"2"}]}\n']), "train.jsonl");
  fineTuneFileId = ((await (await api(s.baseURL, "/files", { method: "POST", body: training })).json()) as { id: string }).id;
});
afterAll(async () => s?.stop());

const batch = (metadata: unknown) =>
  api(s.baseURL, "/batches", { method: "POST", json: { input_file_id: fileId, endpoint: "/v1/embeddings", completion_window: "24h", metadata } });
const fineTune = (metadata: unknown) => api(s.baseURL, "/fine_tuning/jobs", { method: "POST", json: { model: "gpt-4o-mini", training_file: fineTuneFileId, metadata } });

describe("metadata's type (issue 22, defect 9)", () => {
  for (const [name, create] of [["batches", batch], ["fine-tuning jobs", fineTune]] as const) {
    it(`${name}: a number, a string or a boolean is not a map`, async () => {
      for (const [value, kind] of [[1.5, "a decimal"], ["str", "a string"], [true, "a boolean"]] as const)
        await expectError(await create(value), 400, { param: "metadata", code: "invalid_type", message: `expected an object, but got ${kind} instead` });
    });

    it(`${name}: an array is not a map, and a number inside one is named as a number`, async () => {
      await expectError(await create([1, 2]), 400, { param: "metadata", code: "invalid_type", message: "expected an object, but got an array instead" });
      await expectError(await create({ a: 1 }), 400, { param: "metadata.a", code: "invalid_type", message: "expected a string, but got an integer instead" });
      await expectError(await create({ a: 2.5 }), 400, { param: "metadata.a", code: "invalid_type", message: "expected a string, but got a decimal instead" });
    });
  }
});

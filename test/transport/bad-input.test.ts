// Issue 22, defect 6: input JSON.parse accepts but a google.protobuf.Value cannot hold, and a
// multipart part without a name, are 400s naming the field — never a 500.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../shared/server.js";
import { api, expectError } from "../shared/rest.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

/** A JSON body with `raw` spliced in verbatim (JSON.stringify cannot write 1e400). */
const post = (path: string, body: string) => api(s.baseURL, path, { method: "POST", headers: { "content-type": "application/json" }, body });
const nested = (levels: number, leaf = "1") => "[".repeat(levels) + leaf + "]".repeat(levels);

describe("google.protobuf.Value fields (issue 22, defect 6)", () => {
  it("a number that overflows to Infinity (1e400) is a 400 naming where it is", async () => {
    await expectError(await post("/embeddings", '{"model":"atrium-embed-use-lite","input":1e400}'), 400, { param: "input", code: "invalid_value" });
    await expectError(await post("/embeddings", '{"model":"atrium-embed-use-lite","input":[[1,2,-1e400]]}'), 400, { param: "input[0][2]", code: "invalid_value" });
    await expectError(await post("/batches", '{"input_file_id":"file-x","endpoint":"/v1/embeddings","completion_window":"24h","metadata":{"a":1e400}}'), 400, {
      param: "metadata.a",
      code: "invalid_value",
    });
  });

  it("arrays or objects nested past the limit are a 400; the limit itself is accepted", async () => {
    const e = await expectError(await post("/embeddings", `{"model":"atrium-embed-use-lite","input":${nested(120)}}`), 400, { code: "invalid_value" });
    expect(e.param).toMatch(/^input(\[0\])+$/);
    expect(e.message).toContain("32 levels");
    await expectError(await post("/embeddings", `{"model":"atrium-embed-use-lite","input":${nested(5000)}}`), 400, { code: "invalid_value" });
    let deepObject = "1";
    for (let i = 0; i < 200; i++) deepObject = `{"k":${deepObject}}`;
    await expectError(await post("/fine_tuning/alpha/graders/validate", `{"grader":${deepObject}}`), 400, { code: "invalid_value" });
    // 32 levels pass the check and reach the endpoint's own rules (embeddings wants tokens or strings).
    const atLimit = await post("/embeddings", `{"model":"atrium-embed-use-lite","input":${nested(32)}}`);
    expect(atLimit.status).toBe(400);
    expect(((await atLimit.json()) as { error: { message: string } }).error.message).not.toContain("levels");
  });
});

describe("multipart forms (issue 22, defects 6 and 9)", () => {
  const boundary = "----atrium-noname";
  const form = (parts: string[]) => parts.map((p) => `--${boundary}\r\n${p}`).join("") + `--${boundary}--\r\n`;
  const send = (path: string, body: string) =>
    api(s.baseURL, path, { method: "POST", headers: { "content-type": `multipart/form-data; boundary=${boundary}` }, body });

  it('a text field with name="" is a 400', async () => {
    const body = form([
      'content-disposition: form-data; name=""\r\n\r\nassistants\r\n',
      'content-disposition: form-data; name="file"; filename="a.txt"\r\ncontent-type: text/plain\r\n\r\nhello\r\n',
    ]);
    await expectError(await send("/files", body), 400, { code: "invalid_multipart" });
  });

  it("a text field with no name at all, and a file part with an empty name, are 400s", async () => {
    await expectError(await send("/files", form(["content-disposition: form-data\r\n\r\nassistants\r\n"])), 400, { code: "invalid_multipart" });
    const res = await send("/files", form(['content-disposition: form-data; name="purpose"\r\n\r\nassistants\r\n', 'content-disposition: form-data; name=""; filename="a.txt"\r\n\r\nhello\r\n']));
    await expectError(res, 400, { code: "unknown_parameter" });
  });

  it("a form with more fields than the limit is refused, not read in part (defect 9)", async () => {
    // The last field is the one that would be dropped: the file must not be stored as 'assistants'.
    const fields = Array.from({ length: 64 }, () => 'content-disposition: form-data; name="purpose"\r\n\r\nassistants\r\n');
    fields.push('content-disposition: form-data; name="purpose"\r\n\r\nnot-a-purpose\r\n');
    fields.push('content-disposition: form-data; name="file"; filename="a.txt"\r\ncontent-type: text/plain\r\n\r\nhello\r\n');
    const e = await expectError(await send("/files", form(fields)), 400, { code: "invalid_multipart" });
    expect(e.message).toContain("more than 64 fields");
    // 64 fields are still fine.
    const ok = await send("/files", form([...fields.slice(0, 64), fields[65]]));
    expect(ok.status).toBe(200);
  });
});

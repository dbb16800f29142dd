// Limits of spec 8 that no other test showed end to end (README, "Rate limits", lists where each
// limit of spec 8 and 5.8-5.9 is enforced and tested): the file upload rate per authenticated user
// through the official SDK, the 200 MB batch input limit on a declared upload, metadata's 16 pairs /
// 64-character keys / 512-character values (the bounds accepted, one past them refused), and the
// default list page of 20 with its 1-100 bounds.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TestServer } from "../shared/server.js";
import { api, expectError, sdk, sdkError, toFile } from "../shared/rest.js";
import { startConfiguredServer } from "../shared/operability.js";

const UPLOADER = "sk-atrium-test-audit-uploader-001";
const UPLOADER_2 = "sk-atrium-test-audit-uploader-002";
const MIB = 1024 * 1024;

let s: TestServer;
beforeAll(async () => {
  s = await startConfiguredServer({
    organizations: [
      // 2 uploads per minute per credential: one comes back every 30 s.
      { id: "org-audit", rate_limits: { uploads_per_minute: 2 }, projects: [{ id: "proj_audit" }] },
      { id: "org-default", projects: [{ id: "proj_default" }] },
    ],
    keys: [
      { key: UPLOADER, organization: "org-audit", projects: ["proj_audit"], role: "member" },
      { key: UPLOADER_2, organization: "org-audit", projects: ["proj_audit"], role: "member" },
    ],
  });
});
afterAll(async () => s?.stop());

describe("file upload rate per authenticated user (spec 8)", () => {
  it("the credential's third upload in a minute is a 429 naming the limit; another credential of the organization still uploads", async () => {
    const client = sdk(s.baseURL, UPLOADER);
    const file = async (n: number) => toFile(Buffer.from(`upload ${n}`), `u${n}.txt`);
    await client.files.create({ file: await file(1), purpose: "user_data" });
    await client.files.create({ file: await file(2), purpose: "user_data" });
    const e = await sdkError(client.files.create({ file: await file(3), purpose: "user_data" }), 429);
    expect(e.code).toBe("rate_limit_exceeded");
    expect(e.type).toBe("requests");
    expect(e.message).toMatch(/Rate limit reached for requests per min \(RPM\) in file uploads of this credential \(\S+\): Limit 2, Used 2, Requested 1\./);
    expect(Number(e.headers?.get("retry-after"))).toBeGreaterThan(20);
    // The refused upload stored nothing.
    expect((await client.files.list()).data.map((f) => f.filename).sort()).toEqual(["u1.txt", "u2.txt"]);
    // Uploads in parts count too; other calls of the same credential do not.
    const upload = await api(s.baseURL, "/uploads", { key: UPLOADER, method: "POST", json: { bytes: 10, filename: "p.txt", mime_type: "text/plain", purpose: "user_data" } });
    expect(upload.status).toBe(429);
    expect((await client.files.list()).data).toHaveLength(2);
    expect((await sdk(s.baseURL, UPLOADER_2).files.create({ file: await file(4), purpose: "user_data" })).filename).toBe("u4.txt");
  });
});

describe("batch input files: .jsonl, at most 200 MB (spec 8)", () => {
  const create = (bytes: number, filename = "in.jsonl") =>
    api(s.baseURL, "/uploads", { method: "POST", json: { bytes, filename, mime_type: "application/jsonl", purpose: "batch" } });

  it("an upload declaring more than 200 MiB for purpose batch is a 413 before any byte is sent; exactly 200 MiB is accepted", async () => {
    await expectError(await create(200 * MIB + 1), 413, { code: "file_too_large", param: "filename" });
    const ok = await create(200 * MIB);
    expect(ok.status).toBe(200);
    expect((await ok.json()).bytes).toBe(200 * MIB);
    // The same size is fine for another purpose (the general limit is 512 MB per file, 8 GB per upload).
    const other = await api(s.baseURL, "/uploads", { method: "POST", json: { bytes: 200 * MIB + 1, filename: "big.bin", mime_type: "application/octet-stream", purpose: "user_data" } });
    expect(other.status).toBe(200);
  });

  it("a batch upload that is not .jsonl is refused", async () => {
    await expectError(await create(100, "in.csv"), 400, { param: "filename", code: "invalid_file_format" });
  });
});

describe("metadata: 16 pairs, keys up to 64 characters, values up to 512 (spec 8)", () => {
  const post = (metadata: unknown) => api(s.baseURL, "/vector_stores", { method: "POST", json: { name: "m", metadata } });

  it("the bounds are accepted", async () => {
    const sixteen = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [`k${i}`.padEnd(64, "k"), "v".repeat(512)]));
    const res = await post(sixteen);
    expect(res.status).toBe(200);
    expect((await res.json()).metadata).toEqual(sixteen);
  });

  it.each([
    ["17 pairs", Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])), "metadata", "object_above_max_properties"],
    ["a 65-character key", { ["k".repeat(65)]: "v" }, "metadata", "key_too_long"],
    ["a 513-character value", { k: "v".repeat(513) }, "metadata.k", "string_above_max_length"],
  ])("%s is a 400 naming the parameter", async (_what, metadata, param, code) => {
    await expectError(await post(metadata), 400, { param, code });
  });
});

describe("list limit: 1 to 100, default 20 (spec 8)", () => {
  it("a list without limit returns 20 and has_more; 100 is accepted, 0 and 101 are not", async () => {
    const client = sdk(s.baseURL);
    for (let i = 0; i < 21; i++) await client.vectorStores.create({ name: `l${i}` });
    const page = await (await api(s.baseURL, "/vector_stores")).json();
    expect(page.data).toHaveLength(20);
    expect(page.has_more).toBe(true);
    expect((await api(s.baseURL, "/vector_stores?limit=100")).status).toBe(200);
    await expectError(await api(s.baseURL, "/vector_stores?limit=0"), 400, { param: "limit", code: "integer_out_of_range" });
    await expectError(await api(s.baseURL, "/vector_stores?limit=101"), 400, { param: "limit", code: "integer_out_of_range" });
  });
});

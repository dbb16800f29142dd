// A Python gRPC client against the running server, as a polyglot backend would use Atrium: stubs
// are generated at test time from proto/ with Debian's protoc + grpc_python_plugin, and
// test/transport/python/atrium_client.py reports what it saw as JSON, checked here. Missing Python gRPC
// modules or compilers FAIL this test (CI installs python3-grpcio, python3-protobuf,
// protobuf-compiler and protobuf-compiler-grpc); they never skip it.
import { execFile, spawnSync } from "node:child_process";
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { API_KEY, KEYS, startTestServer, tempDir, type TestServer } from "../shared/server.js";
import { restUpload, sha256 } from "../shared/rpc.js";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const PROTO_DIR = join(ROOT, "proto");
const EXTRA_PROTOS = join(ROOT, "test/transport/python/protos"); // google/rpc/status.proto
const SCRIPT = join(ROOT, "test/transport/python/atrium_client.py");

const INSTALL_HINT =
  "install the Debian packages python3-grpcio python3-protobuf protobuf-compiler protobuf-compiler-grpc " +
  "(or point ATRIUM_TEST_PYTHON at a python3 that can `import grpc, google.protobuf`)";

/**
 * $ATRIUM_TEST_PYTHON if set (and only it), else the first of python3 on PATH and Debian's
 * /usr/bin/python3 (a pyenv python3 on PATH usually lacks the apt-installed modules) that can
 * import grpc and protobuf.
 */
function findPython(): { python?: string; tried: string[] } {
  const tried: string[] = [];
  const candidates = process.env.ATRIUM_TEST_PYTHON ? [process.env.ATRIUM_TEST_PYTHON] : ["python3", "/usr/bin/python3"];
  for (const c of candidates) {
    const r = spawnSync(c, ["-c", "import grpc, google.protobuf"], { encoding: "utf8", timeout: 20_000 });
    if (r.status === 0) return { python: c, tried };
    tried.push(`${c}: ${(r.error?.message ?? r.stderr ?? "").trim().split("\n").pop()}`);
  }
  return { tried };
}

function which(cmd: string): string | undefined {
  const r = spawnSync("sh", ["-c", `command -v ${cmd}`], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

/** protoc + grpc_python_plugin over every proto the server serves, into `out`. */
function generateStubs(out: string) {
  const protoc = which("protoc");
  const plugin = which("grpc_python_plugin");
  if (!protoc || !plugin) throw new Error(`protoc and grpc_python_plugin are required on PATH (found protoc=${protoc}, grpc_python_plugin=${plugin}): ${INSTALL_HINT}`);
  const rel = (dir: string) =>
    readdirSync(join(PROTO_DIR, dir))
      .filter((f) => f.endsWith(".proto"))
      .map((f) => `${dir}/${f}`);
  const args = [
    `-I${PROTO_DIR}`,
    `-I${EXTRA_PROTOS}`,
    "-I/usr/include",
    `--python_out=${out}`,
    `--grpc_python_out=${out}`,
    `--plugin=protoc-gen-grpc_python=${plugin}`,
    ...rel("atrium/v1"),
    ...rel("google/api"),
    "google/rpc/status.proto",
  ];
  const r = spawnSync(protoc, args, { encoding: "utf8", timeout: 30_000 });
  if (r.status !== 0) throw new Error(`protoc failed (${r.status}): ${r.stderr || r.error?.message}`);
}

describe("Python grpcio client (stubs generated from proto/ at test time)", () => {
  let s: TestServer;
  let stubs: string;
  let python: string | undefined;
  let tried: string[] = [];
  let report: any;
  let reportError: string | undefined;
  const restData = new Uint8Array(Buffer.from("uploaded over REST, read from Python\n".repeat(1000)));
  let restFileId: string;
  let bFileId: string;

  beforeAll(async () => {
    ({ python, tried } = findPython());
    stubs = tempDir("atrium-pystubs-");
    s = await startTestServer();
    restFileId = (await restUpload(s.baseURL, API_KEY, "rest.txt", "assistants", restData)).id;
    bFileId = (await restUpload(s.baseURL, KEYS.projectB, "b.txt", "user_data", new Uint8Array([1, 2, 3]))).id;
    if (!python) return;
    generateStubs(stubs);
    const cfg = {
      stubs,
      target: `127.0.0.1:${s.port}`,
      key: API_KEY,
      reader_key: KEYS.reader,
      project_b_key: KEYS.projectB,
      multi_key: KEYS.multi,
      rest_file_id: restFileId,
      b_file_id: bFileId,
      upload_bytes: 1_500_000,
    };
    // Asynchronous on purpose: the server runs in this process and must keep answering.
    try {
      const { stdout } = await promisify(execFile)(python, [SCRIPT, JSON.stringify(cfg)], { timeout: 40_000, maxBuffer: 16 << 20 });
      report = JSON.parse(stdout);
    } catch (e: any) {
      reportError = `${python} ${SCRIPT} failed: ${e.message}\nstdout: ${e.stdout ?? ""}\nstderr: ${e.stderr ?? ""}`;
    }
  });
  afterAll(async () => {
    await s?.stop();
    if (stubs) rmSync(stubs, { recursive: true, force: true });
  });

  const run = () => {
    if (!python) throw new Error(`No python3 with the grpc and protobuf modules (tried: ${tried.join("; ")}): ${INSTALL_HINT}`);
    if (reportError) throw new Error(reportError);
    expect(report.fatal, "python script crashed").toBeUndefined();
    return report;
  };

  it("has a python3 with grpcio and protobuf", () => {
    run();
    expect(report.grpc).toMatch(/^\d+\.\d+/);
  });

  it("uploads a file over client-streaming CreateFile, lists it, downloads it byte-exact", async () => {
    const r = run();
    expect(r.created).toMatchObject({ object: "file", bytes: 1_500_000, filename: "from-python.txt", purpose: "assistants", status: "processed", expires_at: null });
    expect(r.created.id).toMatch(/^file-/);
    expect(r.get).toEqual(r.created);
    expect(r.list.object).toBe("list");
    expect(r.list.ids).toEqual(expect.arrayContaining([r.created.id, restFileId]));
    expect(r.list.ids).not.toContain(bFileId);
    expect(r.download).toMatchObject({ sha256: r.uploaded_sha256, bytes: 1_500_000 });
    expect(r.download.chunks).toBeGreaterThan(1);
    expect(r.download.head).toEqual({ content_type: "text/plain", ranges: [{ size: 1_500_000, partial: false, start: 0, end: 1_499_999 }] });
    expect(r.download_range).toMatchObject({ bytes: 100, head: { content_type: "text/plain", ranges: [{ size: 1_500_000, partial: true, start: 100, end: 199 }] } });

    // The server really holds what Python sent: read it back over REST.
    const rest = await fetch(`${s.baseURL}/files/${r.created.id}/content`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(rest.status).toBe(200);
    expect(sha256(new Uint8Array(await rest.arrayBuffer()))).toBe(r.uploaded_sha256);
  });

  it("reads the file uploaded over REST", () => {
    const r = run();
    expect(r.rest_file.get).toMatchObject({ id: restFileId, filename: "rest.txt", bytes: restData.length, purpose: "assistants" });
    expect(r.rest_file.download).toMatchObject({ sha256: sha256(restData), bytes: restData.length });
  });

  it("gets a model", () => {
    const r = run();
    expect(r.model).toEqual({ id: "gpt-4o", object: "model", created: 1715367049, owned_by: "system", shutdown_date: null });
    expect(r.model_count).toBeGreaterThan(5);
  });

  it("completes a multipart Upload with md5", () => {
    const r = run();
    expect(r.upload.status).toBe("completed");
    expect(r.upload.file).toMatchObject({ object: "file", bytes: 150_000, filename: "up.jsonl", purpose: "fine-tune" });
    expect(r.upload.download).toMatchObject({ sha256: r.upload.sha256, bytes: 150_000 });
  });

  it("a call cancelled mid-stream (RST_STREAM) is CANCELLED and leaves no file, part, blob or temp file", async () => {
    const c = run().cancel;
    expect(c.create_file).toBe("CANCELLED");
    expect(c.create_file_2).toBe("CANCELLED");
    expect(c.files_after).not.toContain("py-cancelled.bin");
    expect(c.files_after).not.toContain("py-cancelled-2.bin");
    // Every blob on disk belongs to a listed file: no orphaned upload or part bytes.
    const count = async (key: string) => ((await (await fetch(`${s.baseURL}/files`, { headers: { authorization: `Bearer ${key}` } })).json()) as any).data.length as number;
    const blobs = readdirSync(join(s.dataDir, "blobs"), { recursive: true, withFileTypes: true }).filter((e) => e.isFile()).length;
    expect(blobs).toBe((await count(API_KEY)) + (await count(KEYS.projectB)));
    expect(readdirSync(join(s.dataDir, "tmp"))).toEqual([]);
  });

  // BUG (src/storage/disk-blobs.ts, writeAtomically): when a write fails, the WriteStream has been
  // destroyed (by pipeline(), or by the catch block itself), and destroy() closes the fd even with
  // autoClose: false; the catch block then closes the same fd number a second time. A streamed
  // upload that started meanwhile may have been given that number: its next write fails with
  // EBADF (INTERNAL), or lands in whatever file reuses the number. Timing-dependent; here the
  // AddUploadPart that follows a cancelled CreateFile at once is the usual victim.
  it("streamed calls right after a cancelled one are unaffected (the blob store must not close a file descriptor twice)", () => {
    const c = run().cancel;
    expect(c.add_part, "the AddUploadPart sent right after a cancelled CreateFile, itself then cancelled").toBe("CANCELLED");
    expect(c.upload_after_add_part).toEqual({ status: "OK", bytes: 1_000_000, same: true });
    expect(c.upload_after_create_file).toEqual({ status: "OK", bytes: 1_000_000, same: true });
  });

  it("sees status codes and the atrium.v1.ErrorInfo detail", () => {
    const e = run().errors;
    expect(e.not_found).toMatchObject({ status: "NOT_FOUND", info: { type: "invalid_request_error", param: "file_id", http_status: 404 } });
    expect(e.invalid_limit).toMatchObject({ status: "INVALID_ARGUMENT", info: { param: "limit", code: "integer_out_of_range", http_status: 400 } });
    expect(e.invalid_limit.message).toContain("limit");
    expect(e.no_key).toMatchObject({ status: "UNAUTHENTICATED", info: { http_status: 401 } });
    expect(e.bad_key).toMatchObject({ status: "UNAUTHENTICATED", info: { code: "invalid_api_key", http_status: 401 } });
    expect(e.reader_write).toMatchObject({ status: "PERMISSION_DENIED", info: { code: "insufficient_permissions", http_status: 403 } });
    expect(e.range).toMatchObject({ status: "OUT_OF_RANGE", info: { param: "range", code: "range_not_satisfiable", http_status: 416 } });
  });

  it("tenancy: another project gets NOT_FOUND; Vendor-Project / OpenAI-Project metadata select projects", async () => {
    const t = run().tenancy;
    for (const k of ["other_get", "other_content", "other_delete"]) expect(t[k], k).toMatchObject({ status: "NOT_FOUND", info: { http_status: 404 } });
    expect(t.other_list_ids).toEqual([bFileId]);
    expect(t.multi_default).toEqual({ status: "OK", value: restFileId });
    for (const h of ["vendor-project", "openai-project"]) {
      expect(t[h].b_file, h).toEqual({ status: "OK", value: bFileId });
      expect(t[h].a_file, h).toMatchObject({ status: "NOT_FOUND" });
    }
    // The refused delete left the file in place.
    const r = await fetch(`${s.baseURL}/files/${restFileId}`, { headers: { authorization: `Bearer ${API_KEY}` } });
    expect(r.status).toBe(200);
  });
});

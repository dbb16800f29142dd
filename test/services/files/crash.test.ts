// Crash safety: kill -9 the server in the middle of a large streamed upload,
// restart it on the same data directory, and check that nothing partial survives while everything
// written before is intact. Runs the built server (`npm run build` first; `npm test` does).
import { existsSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { API_KEY, startChildServer, tempDir, type ChildServer } from "../../shared/server.js";
import { blobKeys, filesUnder, generatedMultipart, md5, random, sdk, sha256, toFile } from "../../shared/rest.js";
import { sleep } from "../../shared/poll.js";

const MAIN = fileURLToPath(new URL("../../../dist/src/main.js", import.meta.url));

describe("crash during a large upload", () => {
  const dataDir = tempDir("atrium-crash-");
  const children: ChildServer[] = [];
  afterAll(async () => {
    for (const c of children) {
      if (c.proc.exitCode === null && c.proc.signalCode === null) {
        c.proc.kill("SIGTERM");
        await Promise.race([c.exited, sleep(5000)]);
      }
    }
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("kill -9 mid-stream: no partial file listed, tmp/ emptied at start-up, earlier files intact, pending upload resumable", async () => {
    expect(existsSync(MAIN), `${MAIN} is missing: run \`npm run build\` first`).toBe(true);
    const first = await startChildServer(dataDir);
    children.push(first);
    const c1 = sdk(first.baseURL);

    // Files written before the crash.
    const originals = new Map<string, Buffer>();
    for (const [i, n] of [10_000, 300_000, 1_500_000].entries()) {
      const content = random(n);
      const f = await c1.files.create({ file: await toFile(content, `before-${i}.bin`), purpose: "user_data" });
      originals.set(f.id, content);
    }
    const batch = Buffer.from('{"custom_id":"1","method":"POST","url":"/v1/responses","body":{}}\n');
    const bf = await c1.files.create({ file: await toFile(batch, "input.jsonl"), purpose: "batch" });
    originals.set(bf.id, batch);
    // A multipart Upload left pending across the crash, with one part already stored.
    const partA = random(700_000);
    const partB = random(300_000);
    const upload = await c1.uploads.create({ bytes: partA.length + partB.length, filename: "resumed.bin", mime_type: "application/octet-stream", purpose: "assistants" });
    const pa = await c1.uploads.parts.create(upload.id, { data: await toFile(partA, "a") });

    // A ~200 MB upload, streamed slowly enough to be caught in the middle.
    const tmp = join(dataDir, "tmp");
    const body = generatedMultipart({
      fields: [["purpose", "user_data"]],
      fileField: "file",
      filename: "huge.bin",
      size: 200 * 1024 * 1024,
      chunk: 512 * 1024,
      delayMs: 3,
    });
    const inflight = fetch(`${first.baseURL}/files`, {
      method: "POST",
      headers: { authorization: `Bearer ${API_KEY}`, "content-type": body.contentType },
      body: body.stream,
      duplex: "half",
    } as RequestInit).then(
      (r) => r.status,
      (e) => e as Error,
    );
    // Wait until the server has a good part of it in its temp file, then SIGKILL.
    let partial = 0;
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const names = filesUnder(tmp);
      partial = names.length ? statSync(join(tmp, names[0])).size : 0;
      if (partial >= 16 * 1024 * 1024) break;
      await sleep(10);
    }
    expect(partial, "the large upload never reached the server's temp file").toBeGreaterThanOrEqual(16 * 1024 * 1024);
    first.proc.kill("SIGKILL");
    await first.exited;
    expect(first.proc.signalCode).toBe("SIGKILL");
    // The upload died with the server (no response was ever produced for it).
    expect(await inflight).toBeInstanceOf(Error);
    // The crash left its debris: a partial temp file.
    expect(filesUnder(tmp).length).toBeGreaterThan(0);

    const second = await startChildServer(dataDir);
    children.push(second);
    // Start-up removed the interrupted write.
    expect(filesUnder(tmp)).toEqual([]);
    const c2 = sdk(second.baseURL);

    // Exactly the files written before the crash; nothing partial is listed or stored.
    const listed = (await c2.files.list({ order: "asc" })).data;
    expect(listed.map((f) => f.id).sort()).toEqual([...originals.keys()].sort());
    expect(listed.some((f) => f.filename === "huge.bin")).toBe(false);
    expect(blobKeys(dataDir).filter((k) => !k.startsWith("part_"))).toEqual([...originals.keys()].sort());
    for (const [id, content] of originals) {
      const f = await c2.files.retrieve(id);
      expect(f.bytes).toBe(content.length);
      const got = Buffer.from(await (await c2.files.content(id)).arrayBuffer());
      expect(sha256(got)).toBe(sha256(content));
    }

    // The pending upload survived: add the second part and complete it.
    const pb = await c2.uploads.parts.create(upload.id, { data: await toFile(partB, "b") });
    const whole = Buffer.concat([partA, partB]);
    const done = await c2.uploads.complete(upload.id, { part_ids: [pa.id, pb.id], md5: md5(whole) });
    expect(done.status).toBe("completed");
    expect(sha256(Buffer.from(await (await c2.files.content(done.file!.id)).arrayBuffer()))).toBe(sha256(whole));
  }, 60_000);
});

// No error message names a file on the server: the videos and containers areas read uploads
// through temp files and ffmpeg/ffprobe, whose diagnostics name them. Every error those areas
// raise on bad uploads is collected here, over REST and Connect, and checked for the server's
// data directory and temp folder.
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { VideosService } from "../../gen/atrium/v1/videos_pb.js";
import { ApiError, keepPathsPrivate, withoutPrivatePaths } from "../../src/common/errors.js";
import { API_KEY, startTestServer, type TestServer } from "../shared/server.js";
import { api } from "../shared/rest.js";

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

const form = (fields: Array<[string, string | Blob, string?]>) => {
  const f = new FormData();
  for (const [k, v, name] of fields) typeof v === "string" ? f.append(k, v) : f.append(k, v, name);
  return f;
};

// Bytes that ffprobe opens and gives up on: text, noise, an MP4 box header over nothing, a PNG signature over nothing.
const BAD_MEDIA: Array<[string, Buffer]> = [
  ["text", Buffer.from("not a video at all")],
  ["noise", Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 7919) % 251))],
  ["truncated mp4", Buffer.concat([Buffer.from([0, 0, 0, 0x18, 0x66, 0x74, 0x79, 0x70, 0x69, 0x73, 0x6f, 0x6d]), Buffer.alloc(200)])],
  ["truncated png", Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(64)])],
];

function expectNoServerPath(message: string, what: string) {
  expect(message, what).not.toContain(s.dataDir);
  expect(message, what).not.toContain(tmpdir() + "/");
  expect(message, what).not.toMatch(/\/(?:tmp|var|work|home|root)\//);
}

describe("error messages name no server path", () => {
  it("the videos area over REST: characters, input references, edits and extensions from bad media", async () => {
    const answers: Array<[string, Response]> = [];
    for (const [what, bytes] of BAD_MEDIA) {
      answers.push([`character from ${what}`, await api(s.baseURL, "/videos/characters", { method: "POST", body: form([["name", "Bo"], ["video", new Blob([new Uint8Array(bytes)]), "v.mp4"]]) })]);
      answers.push([`input_reference from ${what}`, await api(s.baseURL, "/videos", { method: "POST", body: form([["prompt", "x"], ["input_reference", new Blob([new Uint8Array(bytes)], { type: "image/png" }), "r.png"]]) })]);
      answers.push([`edit from ${what}`, await api(s.baseURL, "/videos/edits", { method: "POST", body: form([["prompt", "x"], ["video", new Blob([new Uint8Array(bytes)]), "v.mp4"]]) })]);
      answers.push([`extension from ${what}`, await api(s.baseURL, "/videos/extensions", { method: "POST", body: form([["prompt", "x"], ["seconds", "4"], ["video", new Blob([new Uint8Array(bytes)]), "v.mp4"]]) })]);
    }
    for (const [what, r] of answers) {
      expect(r.status, what).toBeGreaterThanOrEqual(400);
      expect(r.status, what).toBeLessThan(500);
      const body = (await r.json()) as { error: { message: string } };
      expectNoServerPath(body.error.message, what);
    }
  });

  it("the videos area over Connect: a character from bad media", async () => {
    const c = createClient(VideosService, createConnectTransport({ baseUrl: s.baseURL.replace(/\/v1$/, ""), httpVersion: "1.1" }));
    for (const [what, bytes] of BAD_MEDIA) {
      const err = await c
        .createCharacter(
          (async function* () {
            yield { name: "Bo" };
            yield { videoChunk: new Uint8Array(bytes) };
          })(),
          { headers: { authorization: `Bearer ${API_KEY}` } },
        )
        .then(
          () => undefined,
          (e) => e,
        );
      expect(err, what).toBeInstanceOf(ConnectError);
      expectNoServerPath((err as ConnectError).rawMessage, what);
    }
  });

  it("the containers area: uploads of every kind of bad input", async () => {
    const c = (await (await api(s.baseURL, "/containers", { method: "POST", json: { name: "paths" } })).json()) as { id: string };
    const answers: Array<[string, Response]> = [
      ["empty file", await api(s.baseURL, `/containers/${c.id}/files`, { method: "POST", body: form([["file", new Blob([]), "empty.txt"]]) })],
      ["no file part", await api(s.baseURL, `/containers/${c.id}/files`, { method: "POST", body: form([["name", "x"]]) })],
      ["unknown file id", await api(s.baseURL, `/containers/${c.id}/files`, { method: "POST", json: { file_id: "file-nope" } })],
      ["unknown container", await api(s.baseURL, `/containers/cntr_nope/files`, { method: "POST", body: form([["file", new Blob(["x"]), "a.txt"]]) })],
      ["path traversal name", await api(s.baseURL, `/containers/${c.id}/files`, { method: "POST", body: form([["file", new Blob(["x"]), "../../etc/passwd"]]) })],
      ["content of a missing file", await api(s.baseURL, `/containers/${c.id}/files/cfile_nope/content`)],
    ];
    for (const [what, r] of answers) {
      expect(r.status, what).toBeLessThan(500);
      if (r.status >= 400) expectNoServerPath(((await r.json()) as { error: { message: string } }).error.message, what);
    }
  });

  it("any ApiError keeps only the base name of a file under a private folder", () => {
    keepPathsPrivate("/srv/atrium-data");
    expect(withoutPrivatePaths(`cannot read ${tmpdir()}/atrium-x/upload-1/upload.bin: Invalid data found`)).toBe("cannot read upload.bin: Invalid data found");
    expect(new ApiError(400, "open '/srv/atrium-data/blobs/ab/cd' failed").rawMessage).toBe("open 'cd' failed");
    // API paths and container paths are not server files.
    expect(withoutPrivatePaths("'url' is '/v1/embeddings'; /mnt/data/a.txt")).toBe("'url' is '/v1/embeddings'; /mnt/data/a.txt");
  });
});

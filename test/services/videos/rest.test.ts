// Videos and characters (spec 4.9, 2.10, 3) through the official SDK and raw fetch, against the
// local renderer: real H.264 MP4s checked with ffprobe, WebP thumbnails and spritesheets, the same
// prompt giving the same bytes and another prompt another picture, the reference image as the first
// frame, remix / edit / extension (stitched length), characters, every validation error, delete
// rules, tenancy, and asset expiry on the server's sweeper. Renders are the smallest the spec
// allows (4 s; 720x1280 or 1280x720), one at a time (the default concurrency).
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { API_KEY, KEYS, ManualClock, SCALED, startTestServer, type TestServer } from "../../shared/server.js";
import { api, storedBlobKeys, expectError, sdk, sdkError, sha256, toFile } from "../../shared/rest.js";
import { pollUntil } from "../../shared/poll.js";
import { FFMPEG, FFPROBE } from "../../shared/media.js";

const VIDEO_KEYS = ["completed_at", "created_at", "error", "expires_at", "id", "model", "object", "progress", "prompt", "remixed_from_video_id", "seconds", "size", "status"];
const DAY = 24 * 3600;
const FRAME = 1 / 24;

let s: TestServer;
let clock: ManualClock;
let client: OpenAI;
const scratch = mkdtempSync(join(tmpdir(), "atrium-videos-test-"));

beforeAll(async () => {
  clock = new ManualClock();
  s = await startTestServer({ clock });
  client = sdk(s.baseURL);
});
afterAll(async () => {
  await s?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

// ---- helpers ----

/**
 * The SDK's poll helper, as its vector-store pollers do it (this SDK version has none for videos):
 * retrieve, and while not completed or failed, wait `openai-poll-after-ms` (else 5 s).
 */
async function poll(id: string, seen: { intervals: number[]; progress: number[] } = { intervals: [], progress: [] }): Promise<OpenAI.Videos.Video> {
  const retrieved = async () => {
    const { data, response } = await client.videos.retrieve(id).withResponse();
    seen.progress.push(data.progress);
    return { status: data.status, data, pollAfter: response.headers.get("openai-poll-after-ms") };
  };
  const pollAfterMs = ({ pollAfter }: { pollAfter: string | null }) => {
    const ms = pollAfter ? parseInt(pollAfter, 10) : 5000;
    seen.intervals.push(ms);
    return ms;
  };
  const { data, pollAfter } = await pollUntil(retrieved, (v) => v.status === "completed" || v.status === "failed", `video ${id}`, { intervalMs: pollAfterMs });
  expect(pollAfter).toBeNull();
  return data;
}

async function createAndPoll(params: OpenAI.Videos.VideoCreateParams): Promise<OpenAI.Videos.Video> {
  return poll((await client.videos.create(params)).id);
}

async function download(id: string, variant: "video" | "thumbnail" | "spritesheet" = "video"): Promise<{ bytes: Buffer; type: string | null }> {
  const res = await client.videos.downloadContent(id, { variant });
  return { bytes: Buffer.from(await res.arrayBuffer()), type: res.headers.get("content-type") };
}

function probe(bytes: Buffer, name: string) {
  const path = join(scratch, name);
  writeFileSync(path, bytes);
  const r = spawnSync(FFPROBE, ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height,nb_frames:format=duration", "-of", "json", path], { encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  const j = JSON.parse(r.stdout);
  return { codec: j.streams[0].codec_name as string, width: j.streams[0].width as number, height: j.streams[0].height as number, duration: Number(j.format?.duration ?? 0), frames: Number(j.streams[0].nb_frames ?? 0) };
}

/** The first frame of an image or video, decoded and scaled to 36x64 (or 64x36) RGB. */
function pixels(bytes: Buffer, landscape = false): Buffer {
  return decode(bytes, `scale=${landscape ? "64:36" : "36:64"}`);
}

/** The first picture out of `filter` applied to an image or video, as raw RGB. */
let decoded = 0;
function decode(bytes: Buffer, filter: string): Buffer {
  // A file, not a pipe: this ffmpeg cannot probe WebP from a pipe.
  const path = join(scratch, `decode-${decoded++}`);
  writeFileSync(path, bytes);
  const r = spawnSync(FFMPEG, ["-v", "error", "-i", path, "-vf", filter, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "pipe:1"], { maxBuffer: 1 << 24 });
  expect(r.status, r.stderr?.toString()).toBe(0);
  return r.stdout;
}

/** Mean absolute difference per channel, 0..255. */
const difference = (a: Buffer, b: Buffer) => {
  expect(a.length).toBe(b.length);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i] - b[i]);
  return sum / a.length;
};

/** A test-pattern PNG of the given size (ffmpeg's testsrc2). */
function testPng(size: string): Buffer {
  const r = spawnSync(FFMPEG, ["-v", "error", "-f", "lavfi", "-i", `testsrc2=s=${size}`, "-frames:v", "1", "-f", "image2pipe", "-vcodec", "png", "pipe:1"], { maxBuffer: 1 << 26 });
  expect(r.status).toBe(0);
  return r.stdout;
}

const isWebp = (b: Buffer) => b.subarray(0, 4).toString("latin1") === "RIFF" && b.subarray(8, 12).toString("latin1") === "WEBP" && b.readUInt32LE(4) === b.length - 8;
const createRaw = (json: unknown, key = API_KEY) => api(s.baseURL, "/videos", { method: "POST", json, key });
const form = (fields: Array<[string, string | Blob, string?]>) => {
  const f = new FormData();
  for (const [k, v, name] of fields) typeof v === "string" ? f.append(k, v) : f.append(k, v, name);
  return f;
};

// ---- the tests ----

const PROMPT = "A red fox runs through snowy woods at sunset";
let first: OpenAI.Videos.Video;
let firstMp4: Buffer;

describe("create, poll, download: a real H.264 video", () => {
  it("creates a video with the SDK (multipart) and polls it to completed at the rate the server suggests", async () => {
    const created = await client.videos.create({ prompt: PROMPT, model: "vid-2", seconds: "4", size: "720x1280" });
    expect(Object.keys(created).sort()).toEqual(VIDEO_KEYS);
    expect(created).toMatchObject({ object: "video", model: "vid-2", status: "queued", progress: 0, prompt: PROMPT, seconds: "4", size: "720x1280", error: null, completed_at: null, expires_at: null, remixed_from_video_id: null });
    expect(created.id).toMatch(/^video_[A-Za-z0-9]{24}$/);
    expect(created.created_at).toBe(clock.now());

    const seen = { intervals: [] as number[], progress: [] as number[] };
    first = await poll(created.id, seen);
    expect(first.status, JSON.stringify(first.error)).toBe("completed");
    expect(first).toMatchObject({ progress: 100, error: null, completed_at: clock.now(), expires_at: clock.now() + DAY });
    // The hint keeps the poller between 250 ms and 5 s, never the SDK's blind 5 s while rendering fast.
    expect(seen.intervals.length).toBeGreaterThan(0);
    for (const ms of seen.intervals) expect(ms).toBeGreaterThanOrEqual(250), expect(ms).toBeLessThanOrEqual(5000);
    expect(seen.progress.at(-1)).toBe(100);
  });

  it("the video variant is an H.264 MP4 of exactly the size and length asked for", async () => {
    const { bytes, type } = await download(first.id);
    expect(type).toBe("video/mp4");
    firstMp4 = bytes;
    const p = probe(bytes, "first.mp4");
    expect(p).toMatchObject({ codec: "h264", width: 720, height: 1280 });
    expect(Math.abs(p.duration - 4)).toBeLessThanOrEqual(FRAME);
    expect(p.frames).toBe(96);
  });

  it("the thumbnail is a WebP of the first frame; the spritesheet a WebP grid of frames", async () => {
    const thumb = await download(first.id, "thumbnail");
    expect(thumb.type).toBe("image/webp");
    expect(isWebp(thumb.bytes)).toBe(true);
    expect(probe(thumb.bytes, "thumb.webp")).toMatchObject({ codec: "webp", width: 720, height: 1280 });
    expect(difference(pixels(thumb.bytes), pixels(firstMp4))).toBeLessThan(6);

    const sheet = await download(first.id, "spritesheet");
    expect(sheet.type).toBe("image/webp");
    expect(isWebp(sheet.bytes)).toBe(true);
    // 5 × 2 cells of 144 × 256.
    expect(probe(sheet.bytes, "sheet.webp")).toMatchObject({ codec: "webp", width: 720, height: 512 });
    // Cell k (row by row) is frame 9k of the 96: each cell is closest to its own frame.
    const cell = (k: number) => decode(sheet.bytes, `crop=144:256:${(k % 5) * 144}:${Math.floor(k / 5) * 256},scale=36:64`);
    const frame = (n: number) => decode(firstMp4, `select=eq(n\\,${n}),scale=36:64`);
    const frames = [0, 4, 9].map((k) => frame(9 * k));
    for (const [i, k] of [0, 4, 9].entries()) {
      const d = frames.map((f) => difference(cell(k), f));
      expect(d[i]).toBeLessThan(6);
      expect(d[i]).toBe(Math.min(...d));
    }
  });

  it("downloads are streamed with Range: 206 with Content-Range, 416 past the end", async () => {
    const res = await api(s.baseURL, `/videos/${first.id}/content`, { headers: { range: "bytes=100-1099" } });
    expect(res.status).toBe(206);
    expect(res.headers.get("accept-ranges")).toBe("bytes");
    expect(res.headers.get("content-range")).toBe(`bytes 100-1099/${firstMp4.length}`);
    expect(Buffer.from(await res.arrayBuffer())).toEqual(firstMp4.subarray(100, 1100));
    const whole = await api(s.baseURL, `/videos/${first.id}/content?variant=video`);
    expect(whole.status).toBe(200);
    expect(whole.headers.get("content-length")).toBe(String(firstMp4.length));
    await whole.arrayBuffer();
    const past = await api(s.baseURL, `/videos/${first.id}/content`, { headers: { range: `bytes=${firstMp4.length + 10}-` } });
    expect(past.status).toBe(416);
    expect(past.headers.get("content-range")).toBe(`bytes */${firstMp4.length}`);
    await past.arrayBuffer();
  });

  it("the same prompt renders the same bytes; another prompt a visibly different video", async () => {
    const again = await createAndPoll({ prompt: PROMPT });
    expect(again.status).toBe("completed");
    const againMp4 = (await download(again.id)).bytes;
    expect(sha256(againMp4)).toBe(sha256(firstMp4));

    const other = await createAndPoll({ prompt: "A blue whale glides through a dark ocean at night", size: "1280x720" });
    expect(other.status).toBe("completed");
    const mp4 = (await download(other.id)).bytes;
    expect(probe(mp4, "other.mp4")).toMatchObject({ codec: "h264", width: 1280, height: 720 });
    // Compare the same region: the landscape frame's left 36x64 against the portrait one, scaled alike.
    const otherThumb = pixels((await download(other.id, "thumbnail")).bytes, true);
    const firstThumb = pixels((await download(first.id, "thumbnail")).bytes, true);
    expect(difference(otherThumb, firstThumb)).toBeGreaterThan(25);
  });

  it("progress moves while rendering (read every 100 ms)", async () => {
    const v = await client.videos.create({ prompt: "Progress bars marching across a green field" });
    const seen = new Set<number>();
    const retrieved = async () => {
      const cur = await client.videos.retrieve(v.id);
      seen.add(cur.progress);
      return cur;
    };
    const { status } = await pollUntil(retrieved, (cur) => cur.status === "completed" || cur.status === "failed", `video ${v.id}`, { intervalMs: 100 });
    expect(status).toBe("completed");
    expect([...seen].some((p) => p > 0 && p < 100), `progress values seen: ${[...seen]}`).toBe(true);
  });
});

describe("input_reference: the first frame", () => {
  const png = testPng("720x1280");

  it("an uploaded image (the SDK's multipart file part) is the first frame", async () => {
    const v = await createAndPoll({ prompt: "A test card comes to life", input_reference: await toFile(png, "card.png", { type: "image/png" }) });
    expect(v.status, JSON.stringify(v.error)).toBe("completed");
    const thumb = (await download(v.id, "thumbnail")).bytes;
    expect(difference(pixels(thumb), pixels(png))).toBeLessThan(6);
    expect(difference(pixels((await download(v.id)).bytes), pixels(png))).toBeLessThan(8);
  });

  it("{file_id} (JSON) and {image_url} as a data URL (the SDK's multipart fields) are accepted", async () => {
    const file = await client.files.create({ file: await toFile(png, "card.png"), purpose: "vision" });
    const byFile = await createRaw({ prompt: "From a file", input_reference: { file_id: file.id } });
    expect(byFile.status).toBe(200);
    const byUrl = await client.videos.create({ prompt: "From a data URL", input_reference: { image_url: `data:image/png;base64,${png.toString("base64")}` } });
    expect(byUrl.status).toBe("queued");
    for (const id of [((await byFile.json()) as OpenAI.Videos.Video).id, byUrl.id]) {
      const done = await poll(id);
      expect(done.status).toBe("completed");
      expect(difference(pixels((await download(id, "thumbnail")).bytes), pixels(png))).toBeLessThan(6);
      expect(difference(pixels((await download(id)).bytes), pixels(png))).toBeLessThan(8);
    }
  });

  it("refuses an image of another size, a non-image, two references, a missing file, a private URL", async () => {
    await expectError(await createRaw({ prompt: "x", input_reference: { image_url: `data:image/png;base64,${testPng("640x480").toString("base64")}` } }), 400, {
      param: "input_reference.image_url",
      code: "image_size_mismatch",
      message: /640x480.*720x1280/,
    });
    const wide = await api(s.baseURL, "/videos", { method: "POST", body: form([["prompt", "x"], ["size", "1280x720"], ["input_reference", new Blob([new Uint8Array(png)]), "card.png"]]) });
    await expectError(wide, 400, { param: "input_reference", code: "image_size_mismatch" });
    const text = await api(s.baseURL, "/videos", { method: "POST", body: form([["prompt", "x"], ["input_reference", new Blob(["not an image"]), "a.png"]]) });
    await expectError(text, 400, { param: "input_reference", code: "invalid_image" });
    const both = await api(s.baseURL, "/videos", { method: "POST", body: form([["prompt", "x"], ["input_reference[file_id]", "file-x"], ["input_reference", new Blob([new Uint8Array(png)]), "card.png"]]) });
    await expectError(both, 400, { param: "input_reference" });
    await expectError(await createRaw({ prompt: "x", input_reference: { file_id: "file-x", image_url: "https://example.com/a.png" } }), 400, { param: "input_reference" });
    await expectError(await createRaw({ prompt: "x", input_reference: {} }), 400, { param: "input_reference" });
    await expectError(await createRaw({ prompt: "x", input_reference: { file_id: "file-nope" } }), 404, { param: "input_reference.file_id" });
    await expectError(await createRaw({ prompt: "x", input_reference: { image_url: "http://127.0.0.1:1/a.png" } }), 400, { param: "input_reference.image_url", code: "invalid_url" });
    await expectError(await createRaw({ prompt: "x", input_reference: { image_url: "ftp://example.com/a.png" } }), 400, { param: "input_reference.image_url", code: "invalid_image_url" });
  });
});

describe("caps on reference ids and URLs", () => {
  it("an image_url over 8,192 characters and a file_id over 256 are 400s naming them; no video is made", async () => {
    const count = async () => (await client.videos.list({ limit: 100 })).data.length;
    const before = await count();
    const url = (n: number) => "http://127.0.0.1:9/" + "u".repeat(n - "http://127.0.0.1:9/".length);
    await expectError(await createRaw({ prompt: "x", input_reference: { image_url: url(8193) } }), 400, { param: "input_reference.image_url", code: "string_above_max_length", message: /maximum length 8192\b/ });
    // At the cap the URL is fetched (here from a closed port, a different refusal).
    const atCap = await expectError(await createRaw({ prompt: "x", input_reference: { image_url: url(8192) } }), 400, { param: "input_reference.image_url" });
    expect(atCap.code).not.toBe("string_above_max_length");
    await expectError(await createRaw({ prompt: "x", input_reference: { file_id: "f".repeat(257) } }), 400, { param: "input_reference.file_id", code: "string_above_max_length" });
    expect(await count()).toBe(before);
  });
});

describe("validation errors (raw fetch): status, param, code", () => {
  it("prompt, model, seconds, size", async () => {
    await expectError(await createRaw({}), 400, { param: "prompt", code: "missing_required_parameter" });
    await expectError(await createRaw({ prompt: "   " }), 400, { param: "prompt", code: "empty_string" });
    await expectError(await createRaw({ prompt: "x".repeat(32_001) }), 400, { param: "prompt", code: "string_above_max_length" });
    await expectError(await createRaw({ prompt: "x", model: "sora-2" }), 400, { param: "model", code: "invalid_value", message: /vid-2/ });
    await expectError(await createRaw({ prompt: "x", seconds: "5" }), 400, { param: "seconds", code: "invalid_value" });
    await expectError(await createRaw({ prompt: "x", seconds: 4 }), 400, { param: "seconds" });
    await expectError(await createRaw({ prompt: "x", size: "640x480" }), 400, { param: "size", code: "invalid_value" });
    await expectError(await createRaw({ prompt: "x", size: "1792x1024" }), 400, { param: "size", message: /vid-2/ });
    await expectError(await createRaw({ prompt: 42 }), 400, { param: "prompt" });
    // 16 and 20 are extension lengths only.
    await expectError(await createRaw({ prompt: "x", seconds: "16" }), 400, { param: "seconds", code: "invalid_value" });
    await expectError(await createRaw({ prompt: "x", model: "vid-2-pro", size: "1920x1080" }), 400, { param: "size", code: "invalid_value" });
    await expectError(await createRaw({ prompt: "x", input_reference: "file-abc" }), 400, { param: "input_reference" });
    await expectError(await createRaw({ prompt: "x", fps: 30 }), 400, { param: "fps" });
    await expectError(await createRaw({ prompt: "x @char_doesnotexist000000000000" }), 400, { param: "prompt", code: "character_not_found" });
    const badPart = await api(s.baseURL, "/videos", { method: "POST", body: form([["prompt", "x"], ["image", new Blob(["x"]), "a.png"]]) });
    await expectError(badPart, 400, { param: "image" });
  });

  it("edits, extensions, remix and content of videos that cannot take them", async () => {
    await expectError(await api(s.baseURL, "/videos/video_nope/remix", { method: "POST", json: { prompt: "x" } }), 404, { param: "video_id" });
    await expectError(await api(s.baseURL, "/videos/edits", { method: "POST", json: { prompt: "x", video: { id: "video_nope" } } }), 404, { param: "video.id" });
    await expectError(await api(s.baseURL, "/videos/edits", { method: "POST", json: { prompt: "x" } }), 400, { param: "video.id", code: "missing_required_parameter" });
    await expectError(await api(s.baseURL, "/videos/extensions", { method: "POST", json: { prompt: "x", seconds: "24", video: { id: first.id } } }), 400, { param: "seconds" });
    await expectError(await api(s.baseURL, "/videos/extensions", { method: "POST", json: { prompt: "x", video: { id: first.id } } }), 400, { param: "seconds", code: "missing_required_parameter" });
    await expectError(await api(s.baseURL, "/videos/extensions", { method: "POST", json: { prompt: "x", seconds: "5", video: { id: first.id } } }), 400, { param: "seconds", code: "invalid_value" });
    await expectError(await api(s.baseURL, "/videos/extensions", { method: "POST", json: { prompt: "x", seconds: "4" } }), 400, { param: "video.id", code: "missing_required_parameter" });
    await expectError(await api(s.baseURL, "/videos/extensions", { method: "POST", json: { prompt: "x", seconds: "4", video: { id: "video_nope" } } }), 404, { param: "video.id" });
    // prompt is required everywhere.
    await expectError(await api(s.baseURL, "/videos/extensions", { method: "POST", json: { seconds: "4", video: { id: first.id } } }), 400, { param: "prompt", code: "missing_required_parameter" });
    await expectError(await api(s.baseURL, "/videos/edits", { method: "POST", json: { video: { id: first.id } } }), 400, { param: "prompt", code: "missing_required_parameter" });
    await expectError(await api(s.baseURL, `/videos/${first.id}/remix`, { method: "POST", json: {} }), 400, { param: "prompt", code: "missing_required_parameter" });
    await expectError(await api(s.baseURL, `/videos/${first.id}/remix`, { method: "POST", json: { prompt: "x".repeat(32_001) } }), 400, { param: "prompt", code: "string_above_max_length" });
    const upload = await api(s.baseURL, "/videos/edits", { method: "POST", body: form([["prompt", "x"], ["video", new Blob([new Uint8Array(firstMp4)]), "v.mp4"]]) });
    await expectError(upload, 400, { param: "video", code: "unsupported_video_upload" });
    await expectError(await api(s.baseURL, `/videos/${first.id}/content?variant=gif`), 400, { param: "variant" });

    const queued = await client.videos.create({ prompt: "Still rendering" });
    await expectError(await api(s.baseURL, `/videos/${queued.id}/content`), 400, { param: "video_id", code: "video_not_ready" });
    await expectError(await api(s.baseURL, `/videos/${queued.id}/remix`, { method: "POST", json: { prompt: "x" } }), 400, { param: "video_id", code: "invalid_video_state" });
    await expectError(await api(s.baseURL, "/videos/edits", { method: "POST", json: { prompt: "x", video: { id: queued.id } } }), 400, { param: "video.id", code: "invalid_video_state" });
    await expectError(await api(s.baseURL, "/videos/extensions", { method: "POST", json: { prompt: "x", seconds: "4", video: { id: queued.id } } }), 400, { param: "video.id", code: "invalid_video_state" });
    expect((await poll(queued.id)).status).toBe("completed");
  });

  it("list and character fields", async () => {
    await expectError(await api(s.baseURL, "/videos?limit=0"), 400, { param: "limit" });
    await expectError(await api(s.baseURL, "/videos?order=sideways"), 400, { param: "order" });
    const blank = await api(s.baseURL, "/videos/characters", { method: "POST", body: form([["name", "   "], ["video", new Blob([new Uint8Array(firstMp4)]), "v.mp4"]]) });
    await expectError(blank, 400, { param: "name", code: "empty_string" });
  });
});

describe("remix, edit, extension", () => {
  it("remix takes its prompt as a multipart or url-encoded form too; a form with a file, or a url-encoded character, is refused by name", async () => {
    const viaForm = await api(s.baseURL, `/videos/${first.id}/remix`, { method: "POST", body: form([["prompt", "The same woods, in fog"]]) });
    expect(viaForm.status).toBe(200);
    expect(await viaForm.json()).toMatchObject({ status: "queued", remixed_from_video_id: first.id, prompt: "The same woods, in fog" });
    const viaUrlEncoded = await api(s.baseURL, `/videos/${first.id}/remix`, {
      method: "POST",
      body: "prompt=The+same+woods%2C+at+dawn",
      headers: { "content-type": "application/x-www-form-urlencoded" },
    });
    expect(viaUrlEncoded.status).toBe(200);
    expect(await viaUrlEncoded.json()).toMatchObject({ remixed_from_video_id: first.id, prompt: "The same woods, at dawn" });
    await expectError(await api(s.baseURL, `/videos/${first.id}/remix`, { method: "POST", body: form([["prompt", "x"], ["colour", "red"]]) }), 400, { param: "colour", code: "unknown_parameter" });
    await expectError(await api(s.baseURL, `/videos/${first.id}/remix`, { method: "POST", body: form([["prompt", new Blob(["x"]), "p.txt"]]) }), 400, { param: "prompt" });
    await expectError(await api(s.baseURL, `/videos/${first.id}/remix`, { method: "POST", body: form([]) }), 400, { param: "prompt", code: "missing_required_parameter" });
    const e = await expectError(
      await api(s.baseURL, "/videos/characters", { method: "POST", body: "name=Bo", headers: { "content-type": "application/x-www-form-urlencoded" } }),
      415,
      { code: "unsupported_content_type" },
    );
    expect(e.message).toMatch(/multipart\/form-data/);
  });

  it("remix: a new video from the source with a new prompt, remixed_from_video_id set", async () => {
    const r = await client.videos.remix(first.id, { prompt: "The same woods, now in a purple storm" });
    expect(r).toMatchObject({ status: "queued", remixed_from_video_id: first.id, seconds: "4", size: "720x1280", model: "vid-2", prompt: "The same woods, now in a purple storm" });
    const done = await poll(r.id);
    expect(done.status, JSON.stringify(done.error)).toBe("completed");
    const mp4 = (await download(r.id)).bytes;
    expect(probe(mp4, "remix.mp4")).toMatchObject({ codec: "h264", width: 720, height: 1280, frames: 96 });
    expect(sha256(mp4)).not.toBe(sha256(firstMp4));
  });

  it("edit (the SDK's multipart video[id]): re-rendered from the source", async () => {
    const e = await client.videos.edit({ prompt: "Add falling golden leaves", video: { id: first.id } });
    expect(e).toMatchObject({ status: "queued", remixed_from_video_id: first.id, seconds: "4" });
    const done = await poll(e.id);
    expect(done.status, JSON.stringify(done.error)).toBe("completed");
    expect(probe((await download(e.id)).bytes, "edit.mp4")).toMatchObject({ codec: "h264", width: 720, height: 1280, frames: 96 });
  });

  it("extension: the source, then the new seconds; seconds reports the stitched total", async () => {
    const x = await client.videos.extend({ prompt: "The fox reaches a frozen lake", seconds: "4", video: { id: first.id } });
    expect(x).toMatchObject({ status: "queued", seconds: "8", remixed_from_video_id: null, size: "720x1280" });
    const done = await poll(x.id);
    expect(done.status, JSON.stringify(done.error)).toBe("completed");
    expect(done.seconds).toBe("8");
    const mp4 = (await download(x.id)).bytes;
    const p = probe(mp4, "extension.mp4");
    expect(p).toMatchObject({ codec: "h264", width: 720, height: 1280, frames: 192 });
    expect(Math.abs(p.duration - 8)).toBeLessThanOrEqual(FRAME);
    // It starts as the source does.
    expect(difference(pixels(mp4), pixels(firstMp4))).toBeLessThan(6);
  });
});

describe("characters", () => {
  let character: OpenAI.Videos.VideoCreateCharacterResponse;

  it("creates a character from a video (multipart name + video) and retrieves it", async () => {
    character = await client.videos.createCharacter({ name: "Fox", video: await toFile(firstMp4, "fox.mp4", { type: "video/mp4" }) });
    expect(Object.keys(character).sort()).toEqual(["created_at", "id", "name"]);
    expect(character).toEqual({ id: expect.stringMatching(/^char_[A-Za-z0-9]{24}$/), name: "Fox", created_at: clock.now() });
    expect(await client.videos.getCharacter(character.id!)).toEqual(character);
  });

  it("a prompt naming the character (@id) renders its clip into the picture", async () => {
    const plain = await createAndPoll({ prompt: "A quiet meadow with a character" });
    const withChar = await createAndPoll({ prompt: `A quiet meadow with a character @${character.id}` });
    expect(withChar.status, JSON.stringify(withChar.error)).toBe("completed");
    expect(probe((await download(withChar.id)).bytes, "char.mp4")).toMatchObject({ codec: "h264", width: 720, height: 1280 });
    expect(plain.status).toBe("completed");
  });

  it("refuses a long name, a missing video, a file that is not a video; unknown ids are 404", async () => {
    const long = await api(s.baseURL, "/videos/characters", { method: "POST", body: form([["name", "x".repeat(81)], ["video", new Blob([new Uint8Array(firstMp4)]), "v.mp4"]]) });
    await expectError(long, 400, { param: "name", code: "string_above_max_length" });
    const none = await api(s.baseURL, "/videos/characters", { method: "POST", body: form([["name", "x"]]) });
    await expectError(none, 400, { param: "video", code: "missing_required_parameter" });
    const noName = await api(s.baseURL, "/videos/characters", { method: "POST", body: form([["video", new Blob([new Uint8Array(firstMp4)]), "v.mp4"]]) });
    await expectError(noName, 400, { param: "name", code: "missing_required_parameter" });
    const text = await api(s.baseURL, "/videos/characters", { method: "POST", body: form([["name", "x"], ["video", new Blob(["just text, not a video"]), "v.mp4"]]) });
    await expectError(text, 400, { param: "video", code: "invalid_video" });
    await expectError(await api(s.baseURL, "/videos/characters/char_nope"), 404, { param: "character_id" });
    await expectError(await api(s.baseURL, `/videos/characters/${character.id}`, { key: KEYS.projectB }), 404, { param: "character_id" });
  });
});

describe("failures, list, delete, tenancy, expiry", () => {
  it("a render that fails reports error {code, message}; failed videos can be deleted", async () => {
    // A valid PNG header of the right size with nothing decodable after it: accepted, then the render fails.
    const png = testPng("720x1280");
    const broken = Buffer.concat([png.subarray(0, 33), Buffer.alloc(200, 7)]);
    const v = await client.videos.create({ prompt: "Broken reference", input_reference: await toFile(broken, "broken.png") });
    const done = await poll(v.id);
    expect(done.status).toBe("failed");
    expect(done.error).toEqual({ code: "render_failed", message: expect.any(String) });
    expect(done.completed_at).toBe(clock.now());
    expect(done.expires_at).toBeNull();
    await expectError(await api(s.baseURL, `/videos/${v.id}/content`), 400, { code: "video_failed" });
    expect(await client.videos.delete(v.id)).toEqual({ id: v.id, object: "video.deleted", deleted: true });
  });

  it("lists newest first with the envelope the SDK's pager uses (first_id, last_id, has_more)", async () => {
    const page = await api(s.baseURL, "/videos?limit=2");
    const body = (await page.json()) as { object: string; data: OpenAI.Videos.Video[]; first_id: string; last_id: string; has_more: boolean };
    expect(Object.keys(body).sort()).toEqual(["data", "first_id", "has_more", "last_id", "object"]);
    expect(body.data).toHaveLength(2);
    expect(body).toMatchObject({ object: "list", has_more: true, first_id: body.data[0].id, last_id: body.data[1].id });
    const all: string[] = [];
    for await (const v of client.videos.list({ limit: 3 })) all.push(v.id);
    const asc: string[] = [];
    for await (const v of client.videos.list({ limit: 4, order: "asc" })) asc.push(v.id);
    expect(asc).toEqual([...all].reverse());
    expect(all).toContain(first.id);
    expect(new Set(all).size).toBe(all.length);
    const empty = (await (await api(s.baseURL, "/videos", { key: KEYS.projectB })).json()) as Record<string, unknown>;
    expect(empty).toEqual({ object: "list", data: [], first_id: null, last_id: null, has_more: false });
    await expectError(await api(s.baseURL, "/videos?limit=101"), 400, { param: "limit" });
  });

  it("another project's video is a 404 everywhere", async () => {
    const other = sdk(s.baseURL, KEYS.projectB);
    await sdkError(other.videos.retrieve(first.id), 404);
    await sdkError(other.videos.downloadContent(first.id), 404);
    await sdkError(other.videos.delete(first.id), 404);
    await sdkError(other.videos.remix(first.id, { prompt: "mine now" }), 404);
    await sdkError(other.videos.extend({ prompt: "mine now", seconds: "4", video: { id: first.id } }), 404);
  });

  // It holds one video queued behind another's render: two instances render one each at once.
  it.skipIf(SCALED)("delete is refused while queued and while in_progress, and allowed once completed", async () => {
    // One render at a time: the second waits in the queue while the first renders.
    const a = await client.videos.create({ prompt: "Deleted too early, first" });
    const b = await client.videos.create({ prompt: "Deleted too early, second" });
    await expectError(await api(s.baseURL, `/videos/${b.id}`, { method: "DELETE" }), 400, { param: "video_id", code: "invalid_video_state", message: /is queued/ });
    expect((await client.videos.retrieve(b.id)).status).toBe("queued");
    const queuedUntilRendering = async () => {
      const v = await client.videos.retrieve(a.id);
      if (v.status !== "in_progress") expect(v.status).toBe("queued");
      return v;
    };
    await pollUntil(queuedUntilRendering, (v) => v.status === "in_progress", `video ${a.id}`, { intervalMs: 20 });
    await expectError(await api(s.baseURL, `/videos/${a.id}`, { method: "DELETE" }), 400, { param: "video_id", code: "invalid_video_state", message: /is in_progress/ });
    await sdkError(client.videos.delete(a.id), 400);
    for (const id of [a.id, b.id]) {
      expect((await poll(id)).status).toBe("completed");
      expect(await client.videos.delete(id)).toEqual({ id, object: "video.deleted", deleted: true });
      expect((await storedBlobKeys(s)).filter((k) => k.startsWith(id))).toEqual([]);
    }
  });

  it("delete: a completed video and its assets go; then it is a 404", async () => {
    const v = await createAndPoll({ prompt: "Short-lived" });
    expect((await storedBlobKeys(s))).toEqual(expect.arrayContaining([`${v.id}.video`, `${v.id}.thumbnail`, `${v.id}.spritesheet`]));
    expect(await client.videos.delete(v.id)).toEqual({ id: v.id, object: "video.deleted", deleted: true });
    expect((await storedBlobKeys(s)).filter((k) => k.startsWith(v.id))).toEqual([]);
    await sdkError(client.videos.retrieve(v.id), 404);
    await sdkError(client.videos.delete(v.id), 404);
    await expectError(await api(s.baseURL, `/videos/${v.id}/content`), 404);
  });

  it("assets expire at expires_at: removed by the sweeper, the video says so, content is a 404", async () => {
    const before = await client.videos.retrieve(first.id);
    clock.advance(before.expires_at! - clock.now() + 1);
    await s.sweeper.runOnce();
    expect((await storedBlobKeys(s)).filter((k) => k.startsWith(first.id))).toEqual([]);
    const after = await client.videos.retrieve(first.id);
    expect(after).toMatchObject({ status: "completed", expires_at: before.expires_at });
    expect(after.expires_at!).toBeLessThan(clock.now());
    await expectError(await api(s.baseURL, `/videos/${first.id}/content`), 404, { code: "video_expired" });
    await expectError(await api(s.baseURL, `/videos/${first.id}/remix`, { method: "POST", json: { prompt: "x" } }), 400, { code: "invalid_video_state" });
    // The record can still be deleted.
    expect((await client.videos.delete(first.id)).deleted).toBe(true);
  });
});

// The upstream video provider (`providers.video: {base_url, api_key_env}`), tested against a second
// Atrium instance as the upstream: the front server forwards renders (with the reference image as
// a data URL, the model under the upstream's name), remixes and extensions of videos the upstream
// made, stores the assets it downloads, and reports an upstream refusal as the video's error.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type OpenAI from "openai";
import { API_KEY, startTestServer, type TestServer } from "../../shared/server.js";
import { sdk, sha256, toFile } from "../../shared/rest.js";
import { untilVideoEnds } from "../../shared/videos.js";
import { FFMPEG } from "../../shared/media.js";


let upstream: TestServer;
let front: TestServer;
let up: OpenAI;
let client: OpenAI;
const configDir = mkdtempSync(join(tmpdir(), "atrium-videos-upstream-"));

beforeAll(async () => {
  upstream = await startTestServer();
  const config = join(configDir, "front.json");
  // The upstream knows vid-2 by another name here (as a real platform would): the front maps it.
  writeFileSync(
    config,
    JSON.stringify({ providers: { video: { base_url: upstream.baseURL, api_key_env: "VIDEO_UPSTREAM_KEY" } }, videos: { upstream_models: { "vid-2": "vid-2-2025-10-06" } } }),
  );
  front = await startTestServer({ env: { ATRIUM_CONFIG: config, VIDEO_UPSTREAM_KEY: API_KEY } });
  up = sdk(upstream.baseURL);
  client = sdk(front.baseURL);
});
afterAll(async () => {
  await front?.stop();
  await upstream?.stop();
  rmSync(configDir, { recursive: true, force: true });
});

const bytesOf = async (c: OpenAI, id: string, variant: "video" | "thumbnail" | "spritesheet" = "video") =>
  Buffer.from(await (await c.videos.downloadContent(id, { variant })).arrayBuffer());

/** The upstream's video made for this front video: the one with the same prompt. */
async function upstreamTwin(prompt: string): Promise<OpenAI.Videos.Video> {
  const all: OpenAI.Videos.Video[] = [];
  for await (const v of up.videos.list()) all.push(v);
  const twin = all.find((v) => v.prompt === prompt);
  expect(twin, `no upstream video with prompt '${prompt}'`).toBeDefined();
  return twin!;
}

describe("video renders on an upstream Atrium", () => {
  let made: OpenAI.Videos.Video;

  it("forwards a create with an uploaded reference image; stores the upstream's assets", async () => {
    const png = spawnSync(FFMPEG, ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=720x1280", "-frames:v", "1", "-f", "image2pipe", "-vcodec", "png", "pipe:1"], { maxBuffer: 1 << 26 }).stdout;
    const created = await client.videos.create({ prompt: "Forwarded upstream", input_reference: await toFile(png, "card.png") });
    made = await untilVideoEnds(client, created.id);
    expect(made.status, JSON.stringify(made.error)).toBe("completed");
    const twin = await upstreamTwin("Forwarded upstream");
    expect(made.model).toBe("vid-2");
    expect(twin).toMatchObject({ status: "completed", size: "720x1280", seconds: "4", model: "vid-2-2025-10-06" });
    for (const variant of ["video", "thumbnail", "spritesheet"] as const) expect(sha256(await bytesOf(client, made.id, variant))).toBe(sha256(await bytesOf(up, twin.id, variant)));
  });

  it("remixes and extends upstream, by the upstream's own id of the source", async () => {
    const remix = await untilVideoEnds(client, (await client.videos.remix(made.id, { prompt: "Forwarded remix" })).id);
    expect(remix).toMatchObject({ status: "completed", remixed_from_video_id: made.id });
    const source = await upstreamTwin("Forwarded upstream");
    expect(await upstreamTwin("Forwarded remix")).toMatchObject({ status: "completed", remixed_from_video_id: source.id });

    const ext = await untilVideoEnds(client, (await client.videos.extend({ prompt: "Forwarded extension", seconds: "4", video: { id: made.id } })).id);
    expect(ext).toMatchObject({ status: "completed", seconds: "8" });
    expect(await upstreamTwin("Forwarded extension")).toMatchObject({ status: "completed", seconds: "8" });
    expect(sha256(await bytesOf(client, ext.id))).toBe(sha256(await bytesOf(up, (await upstreamTwin("Forwarded extension")).id)));
  });

  it("an upstream refusal fails the video with the upstream's error code and message", async () => {
    // The character exists on the front server only: the upstream refuses the prompt naming it.
    const mp4 = await bytesOf(client, made.id);
    const character = await client.videos.createCharacter({ name: "Local only", video: await toFile(mp4, "c.mp4") });
    const v = await untilVideoEnds(client, (await client.videos.create({ prompt: `With @${character.id}` })).id);
    expect(v.status).toBe("failed");
    expect(v.error).toEqual({ code: "character_not_found", message: expect.stringContaining(character.id!) });
  });
});

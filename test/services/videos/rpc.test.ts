// Videos over the typed protocols on the same port: create (a client stream, with the reference
// image's bytes streamed), poll and list through a Connect client, the content as a gRPC server
// stream of google.api.HttpBody (with Range), remix and extension, a character, and errors as typed codes with the same
// ErrorInfo (param, code) REST callers get.
import { spawnSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MessageInitShape } from "@bufbuild/protobuf";
import { Code, createClient, type CallOptions, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { VideosService, type CreateCharacterRequestSchema, type CreateVideoRequestSchema, type ExtendVideoRequestSchema, type Video } from "../../../gen/atrium/v1/videos_pb.js";
import { API_KEY, KEYS, startTestServer, type TestServer } from "../../shared/server.js";
import { as, expectRpcError, readHttpBodies, sha256 } from "../../shared/rpc.js";
import { api } from "../../shared/rest.js";
import { pollUntil } from "../../shared/poll.js";
import { FFMPEG, FFPROBE } from "../../shared/media.js";

type VideosClient = Client<typeof VideosService>;
type CreateMessage = MessageInitShape<typeof CreateVideoRequestSchema>;


let s: TestServer;
const me = as(API_KEY);

beforeAll(async () => {
  s = await startTestServer();
});
afterAll(async () => s?.stop());

const connect = (): VideosClient => createClient(VideosService, createConnectTransport({ baseUrl: s.url, httpVersion: "1.1" }));
const grpc = (): VideosClient => createClient(VideosService, createGrpcTransport({ baseUrl: s.url }));

async function* messages(...ms: CreateMessage[]): AsyncGenerator<CreateMessage> {
  yield* ms;
}

/** GetVideo until the render ends, waiting between calls what the openai-poll-after-ms header says. */
async function pollUntilDone(c: VideosClient, id: string): Promise<Video> {
  const withHint = async () => {
    let pollAfter: string | null = null;
    const video = await c.getVideo({ videoId: id }, { ...me, onHeader: (h) => (pollAfter = h.get("openai-poll-after-ms")) });
    return { status: video.status, video, pollAfter };
  };
  const hinted = ({ pollAfter }: { pollAfter: string | null }) => {
    expect(Number(pollAfter)).toBeGreaterThanOrEqual(250);
    return Number(pollAfter);
  };
  return (await pollUntil(withHint, (v) => v.status === "completed" || v.status === "failed", `video ${id}`, { intervalMs: hinted })).video;
}

const content = (c: VideosClient, videoId: string, opts: CallOptions, variant = "video", range = "") =>
  readHttpBodies(c.getVideoContent({ videoId, variant, range }, opts));

/** ffprobe's view of the first video stream of an MP4. */
function probe(bytes: Buffer): Record<string, unknown> {
  const path = join(s.dataDir, `probe-${probes++}.mp4`);
  writeFileSync(path, bytes);
  const r = spawnSync(FFPROBE, ["-v", "error", "-select_streams", "v:0", "-show_entries", "stream=codec_name,width,height,nb_frames", "-of", "json", path], { encoding: "utf8" });
  rmSync(path);
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout).streams[0];
}
let probes = 0;

function testPng(size: string): Buffer {
  const r = spawnSync(FFMPEG, ["-v", "error", "-f", "lavfi", "-i", `testsrc2=s=${size}`, "-frames:v", "1", "-f", "image2pipe", "-vcodec", "png", "pipe:1"], { maxBuffer: 1 << 26 });
  return r.stdout;
}

describe("videos through a Connect client, content as a gRPC stream", () => {
  let video: Video;

  it("creates with the reference image streamed in chunks, polls to completed, lists", async () => {
    const c = connect();
    const png = testPng("1280x720");
    const chunk = 16 * 1024;
    const rest: CreateMessage[] = [];
    for (let i = 0; i < png.length; i += chunk) rest.push({ inputReferenceChunk: png.subarray(i, i + chunk) });
    const created = await c.createVideo(messages({ prompt: "A test card over the sea", size: "1280x720", seconds: "4" }, ...rest), me);
    expect(created).toMatchObject({ object: "video", status: "queued", model: "vid-2", size: "1280x720", seconds: "4", progress: 0 });
    video = await pollUntilDone(c, created.id);
    expect(video.status, JSON.stringify(video.error)).toBe("completed");
    expect(video.progress).toBe(100);
    expect(video.completedAt).toBeGreaterThan(0n);
    const list = await c.listVideos({ limit: 10 }, me);
    expect(list.data.map((v) => v.id)).toContain(video.id);
    expect(list.firstId).toBe(list.data[0].id);
  });

  it("downloads every variant as a gRPC server stream, the same bytes REST serves, and a Range", async () => {
    const g = grpc();
    const mp4 = await content(g, video.id, me);
    expect(mp4.contentType).toBe("video/mp4");
    expect(mp4.range).toMatchObject({ partial: false, size: BigInt(mp4.data.length) });
    const rest = Buffer.from(await (await api(s.baseURL, `/videos/${video.id}/content`)).arrayBuffer());
    expect(sha256(mp4.data)).toBe(sha256(rest));
    for (const variant of ["thumbnail", "spritesheet"]) {
      const img = await content(g, video.id, me, variant);
      expect(img.contentType).toBe("image/webp");
      expect(img.data.subarray(8, 12).toString("latin1")).toBe("WEBP");
    }
    expect(probe(mp4.data)).toMatchObject({ codec_name: "h264", width: 1280, height: 720, nb_frames: "96" });
    const part = await content(g, video.id, me, "video", "bytes=10-19");
    expect(part.range).toMatchObject({ partial: true, start: 10n, end: 19n });
    expect(part.data).toEqual(mp4.data.subarray(10, 20));
  });

  it("remixes and extends through the client; the extension reports and holds the stitched length", async () => {
    const c = connect();
    const remix = await c.remixVideo({ videoId: video.id, prompt: "The same sea under a red sky" }, me);
    expect(remix).toMatchObject({ status: "queued", remixedFromVideoId: video.id, seconds: "4", size: "1280x720" });
    async function* extension(): AsyncGenerator<MessageInitShape<typeof ExtendVideoRequestSchema>> {
      yield { prompt: "The sea goes calm", seconds: "4", video: { id: video.id } };
    }
    const ext = await c.extendVideo(extension(), me);
    expect(ext).toMatchObject({ status: "queued", seconds: "8", size: "1280x720" });
    expect((await pollUntilDone(c, remix.id)).status).toBe("completed");
    expect((await pollUntilDone(c, ext.id)).status).toBe("completed");
    const remixed = await content(grpc(), remix.id, me);
    expect(probe(remixed.data)).toMatchObject({ codec_name: "h264", width: 1280, height: 720, nb_frames: "96" });
    const extended = await content(grpc(), ext.id, me);
    expect(probe(extended.data)).toMatchObject({ codec_name: "h264", width: 1280, height: 720, nb_frames: "192" });
  });

  it("a character through the client stream; errors are typed codes with REST's param and code", async () => {
    const c = connect();
    const mp4 = await content(c, video.id, me);
    async function* character(): AsyncGenerator<MessageInitShape<typeof CreateCharacterRequestSchema>> {
      yield { name: "Card" };
      for (let i = 0; i < mp4.data.length; i += 64 * 1024) yield { videoChunk: mp4.data.subarray(i, i + 64 * 1024) };
    }
    const ch = await c.createCharacter(character(), me);
    expect(ch).toMatchObject({ name: "Card", id: expect.stringMatching(/^char_/) });
    expect(await c.getCharacter({ characterId: ch.id! }, me)).toEqual(ch);

    await expectRpcError(() => c.createVideo(messages({ model: "vid-2" }), me), Code.InvalidArgument, { param: "prompt", code: "missing_required_parameter", httpStatus: 400 });
    await expectRpcError(() => c.createVideo(messages({ prompt: "x", size: "1792x1024" }), me), Code.InvalidArgument, { param: "size", httpStatus: 400 });
    await expectRpcError(() => c.getVideo({ videoId: video.id }, as(KEYS.projectB)), Code.NotFound, { param: "video_id", httpStatus: 404 });
    const queued = await c.createVideo(messages({ prompt: "Not yet" }), me);
    await expectRpcError(() => content(grpc(), queued.id, me), Code.InvalidArgument, { param: "video_id", code: "video_not_ready", httpStatus: 400 });
    await expectRpcError(() => c.deleteVideo({ videoId: queued.id }, me), Code.InvalidArgument, { code: "invalid_video_state", httpStatus: 400 });
    expect((await pollUntilDone(c, queued.id)).status).toBe("completed");
    expect(await c.deleteVideo({ videoId: queued.id }, me)).toMatchObject({ id: queued.id, object: "video.deleted", deleted: true });
  });
});

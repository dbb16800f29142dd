/**
 * Videos: what the server adds around the renderer, and around a finished video's bytes.
 *
 *   node --import tsx bench/videos.bench.ts [--runs 5] [--seconds 4] [--sizes 720x1280,1280x720,1024x1792,1792x1024] [--downloads 40]
 *
 * 1. Render time per second of video at each size: POST /v1/videos until its render job has settled
 *    and GET says completed (the job claims it, renders MP4 + thumbnail + spritesheet in one ffmpeg
 *    pass, copies the three files into the blob store, commits), against ffmpeg rendering the same
 *    frames (the same filter graph and encoder settings) straight from the command line: MP4 only
 *    (the target's baseline), and the very command Atrium runs (MP4 + thumbnail + spritesheet), which
 *    isolates what the server adds. Ratio = baseline / Atrium (target ≥ 0.8), in wall and CPU time. CPU time (this process
 *    and its reaped children, i.e. ffmpeg: /proc/self/stat) is the steadier figure on a shared
 *    machine, where wall time swings ±30 % with the neighbours' load.
 * 2. Download throughput of a finished video (GET /v1/videos/{id}/content) against the same bytes
 *    stored as a File (GET /v1/files/{id}/content), alternating request by request, on a 12 s video
 *    at 1792x1024 (a few MB). Ratio = video MB/s / file MB/s (target ≥ 0.8).
 * Candidates take turns within each round, so drift hits them alike. The server runs in this
 * process (rendering is in ffmpeg child processes).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import pino from "pino";
import { configFromEnv } from "../src/config.js";
import { startServer } from "../src/server.js";
import { areaConfigSections } from "../src/services/index.js";
import { findFont, renderCommand, runFfmpeg, sceneFor, type RenderSpec } from "../src/engines/video/index.js";

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : dflt;
}
const RUNS = Number(arg("runs", "5"));
const SECONDS = arg("seconds", "4");
const SIZES = arg("sizes", "720x1280,1280x720,1024x1792,1792x1024").split(",");
const DOWNLOADS = Number(arg("downloads", "40"));
const KEY = "sk-atrium-bench-videos-key-0001";
const PROMPT = "A red fox runs through snowy woods at sunset, bench";

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** CPU ms of this process and its reaped children (ffmpeg), from /proc/self/stat; without /proc, this process only. */
function cpuMs(): number {
  try {
    // After "pid (comm) ", utime, stime, cutime, cstime are the 12th to 15th fields (stat(5): 14-17).
    const fields = fs.readFileSync("/proc/self/stat", "utf8").split(") ")[1].split(" ");
    const ticks = [11, 12, 13, 14].reduce((n, i) => n + Number(fields[i]), 0);
    return (ticks * 1000) / 100;
  } catch {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
  }
}

interface Timing {
  ms: number;
  cpu: number;
}

async function timed(fn: () => Promise<unknown>): Promise<Timing> {
  const c0 = cpuMs();
  const t0 = performance.now();
  await fn();
  return { ms: performance.now() - t0, cpu: cpuMs() - c0 };
}

async function main() {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-videos-bench-"));
  const cfg = configFromEnv({ ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dataDir, ATRIUM_API_KEY: KEY }, areaConfigSections());
  const server = await startServer(cfg, { logger: pino({ level: "silent" }) });
  const base = `${server.url}/v1`;
  const auth = { authorization: `Bearer ${KEY}` };
  const fontFile = findFont();
  try {
    let lastVideo = "";
    async function atriumRender(size: string, seconds = SECONDS): Promise<void> {
      const res = await fetch(`${base}/videos`, {
        method: "POST",
        headers: { ...auth, "content-type": "application/json" },
        body: JSON.stringify({ prompt: PROMPT, size, seconds, model: "vid-2-pro" }),
      });
      const { id } = (await res.json()) as { id: string };
      // Waiting on the job in-process rather than polling GET: polls would cost CPU the baseline does not pay.
      await server.jobs.settled([`videos.render:${id}`]);
      const v = (await (await fetch(`${base}/videos/${id}`, { headers: auth })).json()) as { status: string; error: unknown };
      if (v.status !== "completed") throw new Error(`render ${v.status}: ${JSON.stringify(v.error)}`);
      lastVideo = id;
    }

    async function cliRender(size: string, mp4Only = true): Promise<void> {
      const [width, height] = size.split("x").map(Number);
      const spec: RenderSpec = { prompt: PROMPT, seed: 0, width, height, seconds: Number(SECONDS), inputs: {}, fontFile };
      const scene = sceneFor(PROMPT, 0, spec);
      const cmd = renderCommand(spec, scene, 0, { mp4Only });
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "atrium-videos-cli-"));
      try {
        fs.writeFileSync(path.join(dir, "graph.txt"), cmd.graph);
        fs.writeFileSync(path.join(dir, "prompt.txt"), scene.text.lines.join("\n"));
        await runFfmpeg(cmd.args, { cwd: dir });
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }

    console.log(`render, ${SECONDS} s clips, ${RUNS} runs each (after a warm-up), median per second of video (wall | CPU):`);
    console.log("size         Atrium (POST → completed)   CLI, MP4 only           CLI, same 3 outputs     ratio vs MP4 only   vs same command");
    await atriumRender(SIZES[0]);
    await cliRender(SIZES[0]);
    const perSec = (ms: number) => (ms / Number(SECONDS)).toFixed(0).padStart(5);
    for (const size of SIZES) {
      const runs = { atrium: [] as Timing[], mp4: [] as Timing[], same: [] as Timing[] };
      const candidates = [
        ["atrium", () => atriumRender(size)],
        ["mp4", () => cliRender(size, true)],
        ["same", () => cliRender(size, false)],
      ] as const;
      for (let r = 0; r < RUNS; r++) {
        // Rotate who goes first, so a burst of load does not always hit the same one.
        for (let k = 0; k < candidates.length; k++) {
          const [name, run] = candidates[(r + k) % candidates.length];
          runs[name].push(await timed(run));
        }
      }
      const med = (ts: Timing[]) => ({ ms: median(ts.map((t) => t.ms)), cpu: median(ts.map((t) => t.cpu)) });
      const [a, m, c] = [med(runs.atrium), med(runs.mp4), med(runs.same)];
      const ratio = (base: Timing) => `${(base.ms / a.ms).toFixed(2)}× | ${(base.cpu / a.cpu).toFixed(2)}×`;
      console.log(
        `${size.padEnd(11)}  ${perSec(a.ms)} | ${perSec(a.cpu)} ms/s          ${perSec(m.ms)} | ${perSec(m.cpu)} ms/s    ${perSec(c.ms)} | ${perSec(c.cpu)} ms/s    ${ratio(m)}       ${ratio(c)}`,
      );
    }

    // Downloads: a 12 s video at the largest size (more bytes, steadier figures), and the same bytes as a File.
    await atriumRender("1792x1024", "12");
    const mp4 = Buffer.from(await (await fetch(`${base}/videos/${lastVideo}/content`, { headers: auth })).arrayBuffer());
    const form = new FormData();
    form.append("purpose", "user_data");
    form.append("file", new Blob([new Uint8Array(mp4)]), "same.mp4");
    const file = (await (await fetch(`${base}/files`, { method: "POST", headers: auth, body: form })).json()) as { id: string };
    const urls = { video: `${base}/videos/${lastVideo}/content`, file: `${base}/files/${file.id}/content` };

    async function download(url: string): Promise<number> {
      let bytes = 0;
      const res = await fetch(url, { headers: auth });
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) bytes += chunk.length;
      return bytes;
    }
    // Request by request, alternating: each side's MB/s over the time spent in its own requests,
    // summed over all rounds (round 0 warms up); the per-round ratios show the spread.
    const total = { video: { bytes: 0, ms: 0 }, file: { bytes: 0, ms: 0 } };
    const ratios: number[] = [];
    for (let r = 0; r <= Math.max(7, RUNS); r++) {
      const round = { video: { bytes: 0, ms: 0 }, file: { bytes: 0, ms: 0 } };
      for (let i = 0; i < DOWNLOADS; i++) {
        const order: Array<"video" | "file"> = i % 2 ? ["file", "video"] : ["video", "file"];
        for (const name of order) {
          const t0 = performance.now();
          round[name].bytes += await download(urls[name]);
          round[name].ms += performance.now() - t0;
        }
      }
      if (r === 0) continue;
      for (const name of ["video", "file"] as const) {
        total[name].bytes += round[name].bytes;
        total[name].ms += round[name].ms;
      }
      ratios.push(round.video.bytes / round.video.ms / (round.file.bytes / round.file.ms));
    }
    const v = total.video.bytes / 1e3 / total.video.ms;
    const f = total.file.bytes / 1e3 / total.file.ms;
    ratios.sort((a, b) => a - b);
    console.log(`\ndownload of a finished video (${(mp4.length / 1e6).toFixed(2)} MB; ${DOWNLOADS} each per round, alternating, ${ratios.length} rounds), MB/s:`);
    console.log(
      `GET /v1/videos/{id}/content ${v.toFixed(0)} MB/s   GET /v1/files/{id}/content (same bytes) ${f.toFixed(0)} MB/s   ratio ${(v / f).toFixed(2)}× (rounds: ${ratios[0].toFixed(2)}–${ratios.at(-1)!.toFixed(2)})`,
    );
  } finally {
    await server.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

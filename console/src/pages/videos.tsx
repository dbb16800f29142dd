import { useEffect, useRef, useState } from "preact/hooks";
import { blobOf, call, saveBlob, type Page as ListPage } from "../api";
import { mediaUrl } from "../media";
import { Bar, ErrorBox, Options, Page, Status, TableHead, useAction, useLoad, when } from "../ui";

interface Video {
  id: string;
  model: string;
  status: string;
  progress: number;
  prompt: string | null;
  seconds: string;
  size: string;
  created_at: number;
  remixed_from_video_id: string | null;
  error: { code: string; message: string } | null;
}

const MODELS = ["vid-2", "vid-2-pro"];
const SIZES = ["720x1280", "1280x720", "1024x1792", "1792x1024"];
const SECONDS = ["4", "8", "12"];
const RUNNING = ["queued", "in_progress"];

/** A URL a media element can load for one variant of a video (see media.ts). */
function useVariantUrl(id: string, variant: "video" | "thumbnail" | "spritesheet") {
  const [url, setUrl] = useState<string>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let revoke = () => undefined as void;
    let live = true;
    mediaUrl(`/videos/${encodeURIComponent(id)}/content?variant=${variant}`)
      .then((m) => {
        revoke = m.revoke;
        if (live) setUrl(m.url);
        else m.revoke();
      })
      .catch((e) => live && setError(e));
    return () => {
      live = false;
      revoke();
    };
  }, [id, variant]);
  return { url, error, setError };
}

function Player({ video }: { video: Video }) {
  const mp4 = useVariantUrl(video.id, "video");
  const thumb = useVariantUrl(video.id, "thumbnail");
  const sprites = useVariantUrl(video.id, "spritesheet");
  const el = useRef<HTMLVideoElement>(null);
  const [time, setTime] = useState(0);
  const duration = Number(video.seconds);
  return (
    <div class="player">
      <ErrorBox error={mp4.error} />
      {mp4.url && <video
          ref={el}
          src={mp4.url}
          controls
          preload="auto"
          data-testid="video-player"
          aria-label={`Video ${video.id}`}
          onTimeUpdate={(e) => setTime(e.currentTarget.currentTime)}
          onError={() => mp4.setError(new Error("The video could not be loaded"))}
        />}
      <label>
        Scrub
        <input type="range" min={0} max={duration} step={0.1} value={time} onInput={(e) => el.current && (el.current.currentTime = Number(e.currentTarget.value))} />
      </label>
      <div class="variants">
        {thumb.url && <img src={thumb.url} alt={`Thumbnail of ${video.id}`} class="thumb" />}
        {sprites.url && <img src={sprites.url} alt={`Spritesheet of ${video.id}`} class="sprites" />}
      </div>
      {mp4.url && (
        <button type="button" onClick={() => blobOf(`/videos/${encodeURIComponent(video.id)}/content`).then((b) => saveBlob(b, `${video.id}.mp4`), mp4.setError)}>
          Download MP4
        </button>
      )}
    </div>
  );
}

function VideoDetail({ id }: { id: string }) {
  const video = useLoad(() => call<Video>(`/videos/${encodeURIComponent(id)}`), [id], { pollMs: 1000, keepPolling: (v) => RUNNING.includes(v.status) });
  const [prompt, setPrompt] = useState("");
  const [seconds, setSeconds] = useState("4");
  const action = useAction();
  const v = video.data;
  const go = (next: Video | undefined) => next && (location.hash = `#/videos/${encodeURIComponent(next.id)}`);
  return (
    <Page title={`Video ${id}`} actions={<a href="#/videos">All videos</a>}>
      <ErrorBox error={video.error ?? action.error} />
      {v && (
        <>
          <p>
            <Status value={v.status} /> <Bar value={v.progress} label={`Progress of ${v.id}`} /> {v.model} · {v.size} · {v.seconds} s · {v.prompt}
            {v.error && ` · ${v.error.code}: ${v.error.message}`}
          </p>
          {v.status === "completed" && <Player video={v} />}
          <form class="inline-form" onSubmit={(e) => e.preventDefault()}>
            <label>
              New prompt
              <input name="prompt" value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
            </label>
            <label>
              Extension seconds
              <select name="seconds" value={seconds} onChange={(e) => setSeconds(e.currentTarget.value)}>
                <Options values={["4", "8", "12", "16", "20"]} />
              </select>
            </label>
            <button type="button" disabled={v.status !== "completed" || !prompt} onClick={() => action.run(() => call<Video>(`/videos/${encodeURIComponent(id)}/remix`, { json: { prompt } })).then(go)}>
              Remix
            </button>
            <button type="button" disabled={v.status !== "completed" || !prompt} onClick={() => action.run(() => call<Video>("/videos/extensions", { json: { prompt, seconds, video: { id } } })).then(go)}>
              Extend
            </button>
            <button
              type="button"
              class="danger"
              onClick={() => confirm(`Delete ${id}?`) && action.run(() => call(`/videos/${encodeURIComponent(id)}`, { method: "DELETE" })).then((r) => r && (location.hash = "#/videos"))}
            >
              Delete
            </button>
          </form>
        </>
      )}
    </Page>
  );
}

function Characters() {
  const [name, setName] = useState("");
  const [file, setFile] = useState<File | null>(null);
  const [lookup, setLookup] = useState("");
  const [shown, setShown] = useState<any>();
  const action = useAction();
  return (
    <section aria-labelledby="characters-title">
      <h2 id="characters-title">Characters</h2>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          const form = new FormData();
          form.append("name", name);
          if (file) form.append("video", file, file.name);
          void action.run(() => call("/videos/characters", { form })).then(setShown);
        }}
      >
        <label>
          Name
          <input name="character_name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Reference video
          <input name="character_video" type="file" accept="video/*" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        </label>
        <button type="submit" disabled={!name || !file || action.busy}>
          Create character
        </button>
      </form>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(() => call(`/videos/characters/${encodeURIComponent(lookup)}`)).then(setShown);
        }}
      >
        <label>
          Character ID
          <input name="character_id" value={lookup} onInput={(e) => setLookup(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={!lookup}>
          Look up
        </button>
      </form>
      <ErrorBox error={action.error} />
      {shown && (
        <p>
          <span class="mono">{shown.id}</span> {shown.name} · created {when(shown.created_at)}
        </p>
      )}
    </section>
  );
}

export function Videos({ route }: { route: string[] }) {
  const videos = useLoad(() => call<ListPage<Video>>("/videos", { query: { limit: 100 } }), [route[0]], { pollMs: 1000, keepPolling: (p) => p.data.some((v) => RUNNING.includes(v.status)) });
  const [prompt, setPrompt] = useState("");
  const [model, setModel] = useState(MODELS[0]!);
  const [size, setSize] = useState(SIZES[0]!);
  const [seconds, setSeconds] = useState(SECONDS[0]!);
  const [image, setImage] = useState<File | null>(null);
  const action = useAction();
  if (route[0] && route[0] !== "characters") return <VideoDetail id={route[0]} />;
  async function create(e: Event) {
    e.preventDefault();
    const form = new FormData();
    form.append("prompt", prompt);
    form.append("model", model);
    form.append("size", size);
    form.append("seconds", seconds);
    if (image) form.append("input_reference", image, image.name);
    const v = await action.run(() => call<Video>("/videos", { form }));
    if (v) location.hash = `#/videos/${encodeURIComponent(v.id)}`;
  }
  return (
    <Page title="Videos">
      <form class="inline-form" onSubmit={create}>
        <label>
          Prompt
          <input name="prompt" value={prompt} onInput={(e) => setPrompt(e.currentTarget.value)} />
        </label>
        <label>
          Model
          <select name="model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
            <Options values={MODELS} />
          </select>
        </label>
        <label>
          Size
          <select name="size" value={size} onChange={(e) => setSize(e.currentTarget.value)}>
            <Options values={SIZES} />
          </select>
        </label>
        <label>
          Seconds
          <select name="seconds" value={seconds} onChange={(e) => setSeconds(e.currentTarget.value)}>
            <Options values={SECONDS} />
          </select>
        </label>
        <label>
          Reference image
          <input name="input_reference" type="file" accept="image/*" onChange={(e) => setImage(e.currentTarget.files?.[0] ?? null)} />
        </label>
        <button type="submit" disabled={action.busy}>
          Create video
        </button>
      </form>
      <ErrorBox error={action.error ?? videos.error} />
      <table>
        <TableHead columns={["Video", "Prompt", "Status", "Progress", "Created"]} />
        <tbody>
          {videos.data?.data.map((v) => (
            <tr key={v.id}>
              <td>
                <a href={`#/videos/${encodeURIComponent(v.id)}`}>{v.id}</a>
              </td>
              <td>{v.prompt}</td>
              <td>
                <Status value={v.status} />
              </td>
              <td>
                <Bar value={v.progress} label={`Progress of ${v.id}`} />
              </td>
              <td>{when(v.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <Characters />
    </Page>
  );
}

// Media URLs for the API's content endpoints: plain same-origin paths that public/media-sw.js
// authorises on the way out, so <video> streams with Range requests instead of downloading first.
import { authHeaders, blobOf } from "./api";

let ready: Promise<boolean> | undefined;

/** Registers the media worker once and resolves when it controls this page (false if it cannot). */
function mediaWorker(): Promise<boolean> {
  if (ready) return ready;
  if (!("serviceWorker" in navigator)) return (ready = Promise.resolve(false));
  navigator.serviceWorker.addEventListener("message", (e) => {
    if (e.data?.type !== "atrium-credentials" || !e.ports[0]) return;
    const h = authHeaders();
    e.ports[0].postMessage({ authorization: h.authorization, project: h["openai-project"] });
  });
  ready = navigator.serviceWorker
    .register(`${import.meta.env.BASE_URL}media-sw.js`, { scope: import.meta.env.BASE_URL })
    .then(
      () =>
        navigator.serviceWorker.controller
          ? true
          : new Promise<boolean>((resolve) => {
              navigator.serviceWorker.addEventListener("controllerchange", () => resolve(true), { once: true });
              setTimeout(() => resolve(!!navigator.serviceWorker.controller), 3000);
            }),
    )
    .catch(() => false);
  return ready;
}

/**
 * A URL a media element can load for `path` (under /v1). With the worker, the path itself; without
 * one (a browser that refuses service workers), a blob: URL of the whole content, which `revoke` frees.
 */
export async function mediaUrl(path: string): Promise<{ url: string; revoke: () => void }> {
  if (await mediaWorker()) return { url: `/v1${path}`, revoke: () => undefined };
  const url = URL.createObjectURL(await blobOf(path));
  return { url, revoke: () => URL.revokeObjectURL(url) };
}

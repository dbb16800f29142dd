// Lets <video> and <img> load the API's content endpoints with the user's key. Media elements
// cannot send an Authorization header, and the key must never go in a URL; this worker adds the
// header to those GETs (keeping the browser's own Range header, so video seeks are Range requests).
// It holds no key: for each request it asks the page that made it, which reads sessionStorage.
const CONTENT = /^\/v1\/(videos\/[^/]+|files\/[^/]+|containers\/[^/]+\/files\/[^/]+)\/content$/;

self.addEventListener("install", () => self.skipWaiting());
self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

async function credentialsOf(clientId) {
  const client = clientId ? await self.clients.get(clientId) : undefined;
  if (!client) return {};
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    const timer = setTimeout(() => resolve({}), 2000);
    channel.port1.onmessage = (e) => {
      clearTimeout(timer);
      resolve(e.data || {});
    };
    client.postMessage({ type: "atrium-credentials" }, [channel.port2]);
  });
}

self.addEventListener("fetch", (event) => {
  const req = event.request;
  const url = new URL(req.url);
  if (req.method !== "GET" || url.origin !== self.location.origin || !CONTENT.test(url.pathname) || req.headers.has("authorization")) return;
  event.respondWith(
    (async () => {
      const { authorization, project } = await credentialsOf(event.clientId);
      const headers = new Headers(req.headers);
      if (authorization) headers.set("authorization", authorization);
      if (project) headers.set("openai-project", project);
      return fetch(url.href, { method: "GET", headers, cache: "no-store", credentials: "omit" });
    })(),
  );
});

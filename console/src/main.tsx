import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { call, onRateLimits, session, type RateLimitState } from "./api";
import { ErrorBox, useAction } from "./ui";
import { Overview } from "./pages/overview";
import { Files } from "./pages/files";
import { VectorStores } from "./pages/vector-stores";
import { Batches } from "./pages/batches";
import { FineTuning } from "./pages/fine-tuning";
import { Videos } from "./pages/videos";
import { Containers } from "./pages/containers";
import { Playgrounds } from "./pages/playgrounds";
import "./style.css";

const PAGES = [
  { path: "overview", title: "Overview", view: Overview },
  { path: "files", title: "Files", view: Files },
  { path: "vector-stores", title: "Vector stores", view: VectorStores },
  { path: "batches", title: "Batches", view: Batches },
  { path: "fine-tuning", title: "Fine-tuning", view: FineTuning },
  { path: "videos", title: "Videos", view: Videos },
  { path: "containers", title: "Containers", view: Containers },
  { path: "playgrounds", title: "Playgrounds", view: Playgrounds },
] as const;

/** The route is the URL's hash: `#/files`, `#/vector-stores/vs_123`; it never holds a key. */
function useRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, "").split("/").filter(Boolean).map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const on = () => setRoute(read());
    addEventListener("hashchange", on);
    return () => removeEventListener("hashchange", on);
  }, []);
  return route;
}

function SignIn({ onSignedIn }: { onSignedIn: () => void }) {
  const [key, setKey] = useState("");
  const [project, setProject] = useState("");
  const action = useAction();
  async function submit(e: Event) {
    e.preventDefault();
    // A key is kept only once the API accepts it.
    const ok = await action.run(() => call("/models", { key: key.trim(), project: project.trim() }));
    if (ok) {
      session.signIn(key.trim(), project.trim());
      onSignedIn();
    }
  }
  return (
    <main class="signin">
      <h1>Atrium console</h1>
      <form onSubmit={submit}>
        <label>
          API key
          <input name="key" type="password" autocomplete="off" required value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        </label>
        <label>
          Project (optional; an admin key acts on the project named here)
          <input name="project" type="text" autocomplete="off" placeholder="proj_…" value={project} onInput={(e) => setProject(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={action.busy || !key.trim()}>
          Sign in
        </button>
        <p class="hint">The key stays in this tab's session storage and is sent only in the Authorization header.</p>
      </form>
      <ErrorBox error={action.error} />
    </main>
  );
}

function RateLimits() {
  const [r, setR] = useState<RateLimitState>({});
  useEffect(() => onRateLimits(setR), []);
  if (!r.limitRequests) return null;
  return (
    <p class="ratelimits" aria-label="Rate limits" data-testid="rate-limits">
      Requests {r.remainingRequests}/{r.limitRequests} (reset {r.resetRequests}) · Tokens {r.remainingTokens}/{r.limitTokens} (reset {r.resetTokens})
    </p>
  );
}

function App() {
  const [signedIn, setSignedIn] = useState(() => !!session.key());
  const route = useRoute();
  if (!signedIn) return <SignIn onSignedIn={() => setSignedIn(true)} />;
  const page = PAGES.find((p) => p.path === route[0]) ?? PAGES[0];
  const View = page.view;
  return (
    <div class="shell">
      <header class="top">
        <span class="brand">Atrium</span>
        <RateLimits />
        <span class="who">{session.project() ? `project ${session.project()}` : "key's default project"}</span>
        <button
          type="button"
          onClick={() => {
            session.signOut();
            setSignedIn(false);
          }}
        >
          Sign out
        </button>
      </header>
      <nav aria-label="Areas">
        <ul>
          {PAGES.map((p) => (
            <li key={p.path}>
              <a href={`#/${p.path}`} aria-current={p === page ? "page" : undefined}>
                {p.title}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main>
        <View route={route.slice(1)} />
      </main>
    </div>
  );
}

render(<App />, document.getElementById("app")!);

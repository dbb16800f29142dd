import { useEffect, useState } from "preact/hooks";
import { blobOf, call, saveBlob, type Page as ListPage } from "../api";
import { ErrorBox, Page, Status, TableHead, bytes, useAction, useLoad, when } from "../ui";

interface Container {
  id: string;
  name: string;
  status: string;
  created_at: number;
  last_active_at: number | null;
  expires_after: { anchor: string; minutes: number } | null;
  memory_limit: string | null;
}
interface ContainerFile {
  id: string;
  path: string;
  bytes: number;
  created_at: number;
  source: string;
}

function useNow(ms = 1000) {
  const [now, setNow] = useState(() => Date.now() / 1000);
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now() / 1000), ms);
    return () => clearInterval(t);
  }, []);
  return now;
}

/** Time left before a container expires: `minutes` after its last activity (or creation). */
function Countdown({ c }: { c: Container }) {
  const now = useNow();
  if (!c.expires_after?.minutes) return <>never</>;
  const left = Math.max(0, Math.round((c.last_active_at ?? c.created_at) + c.expires_after.minutes * 60 - now));
  return (
    <span data-testid="expiry">
      {Math.floor(left / 60)}:{String(left % 60).padStart(2, "0")}
    </span>
  );
}

function ContainerDetail({ id }: { id: string }) {
  const container = useLoad(() => call<Container>(`/containers/${encodeURIComponent(id)}`), [id]);
  const files = useLoad(() => call<ListPage<ContainerFile>>(`/containers/${encodeURIComponent(id)}/files`, { query: { limit: 100 } }), [id]);
  const action = useAction();
  const base = `/containers/${encodeURIComponent(id)}/files`;
  async function upload(list: FileList | null) {
    for (const f of Array.from(list ?? [])) {
      const form = new FormData();
      form.append("file", f, f.name);
      if (!(await action.run(() => call(base, { form })))) return;
    }
    files.reload();
    container.reload();
  }
  const c = container.data;
  return (
    <Page title={`Container ${c?.name || id}`} actions={<a href="#/containers">All containers</a>}>
      <ErrorBox error={container.error ?? files.error ?? action.error} />
      {c && (
        <p>
          <Status value={c.status} /> expires in <Countdown c={c} /> · memory {c.memory_limit ?? "—"}
        </p>
      )}
      <label>
        Upload files
        <input type="file" multiple onChange={(e) => void upload(e.currentTarget.files)} />
      </label>
      <table>
        <TableHead columns={["Path", "Size", "Source", "Created", "Actions"]} />
        <tbody>
          {files.data?.data.map((f) => (
            <tr key={f.id}>
              <td>{f.path}</td>
              <td>{bytes(f.bytes)}</td>
              <td>{f.source}</td>
              <td>{when(f.created_at)}</td>
              <td class="actions">
                <button type="button" aria-label={`Download ${f.path}`} onClick={() => action.run(async () => saveBlob(await blobOf(`${base}/${encodeURIComponent(f.id)}/content`), f.path.split("/").pop() || f.id))}>
                  Download
                </button>
                <button type="button" class="danger" aria-label={`Delete ${f.path}`} onClick={() => confirm(`Delete ${f.path}?`) && action.run(() => call(`${base}/${encodeURIComponent(f.id)}`, { method: "DELETE" })).then(files.reload)}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Page>
  );
}

export function Containers({ route }: { route: string[] }) {
  const containers = useLoad(() => call<ListPage<Container>>("/containers", { query: { limit: 100 } }), [route[0]]);
  const [name, setName] = useState("");
  const [minutes, setMinutes] = useState(20);
  const action = useAction();
  if (route[0]) return <ContainerDetail id={route[0]} />;
  async function create(e: Event) {
    e.preventDefault();
    if (await action.run(() => call("/containers", { json: { name, expires_after: { anchor: "last_active_at", minutes } } }))) containers.reload();
  }
  return (
    <Page title="Containers">
      <form class="inline-form" onSubmit={create}>
        <label>
          Name
          <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <label>
          Expires after (minutes idle)
          <input name="minutes" type="number" min={1} max={20} value={minutes} onInput={(e) => setMinutes(Number(e.currentTarget.value))} />
        </label>
        <button type="submit" disabled={action.busy}>
          Create container
        </button>
      </form>
      <ErrorBox error={action.error ?? containers.error} />
      <table>
        <TableHead columns={["Name", "ID", "Status", "Expires in", "Created", "Actions"]} />
        <tbody>
          {containers.data?.data.map((c) => (
            <tr key={c.id}>
              <td>
                <a href={`#/containers/${encodeURIComponent(c.id)}`}>{c.name || c.id}</a>
              </td>
              <td class="mono">{c.id}</td>
              <td>
                <Status value={c.status} />
              </td>
              <td>
                <Countdown c={c} />
              </td>
              <td>{when(c.created_at)}</td>
              <td>
                <button type="button" class="danger" aria-label={`Delete ${c.name || c.id}`} onClick={() => confirm(`Delete ${c.id}?`) && action.run(() => call(`/containers/${encodeURIComponent(c.id)}`, { method: "DELETE" })).then(containers.reload)}>
                  Delete
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Page>
  );
}

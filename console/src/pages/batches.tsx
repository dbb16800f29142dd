import { useState } from "preact/hooks";
import { blobOf, call, saveBlob, type Page as ListPage } from "../api";
import { uploadFile } from "../upload";
import { Bar, ErrorBox, Options, Page, Status, TableHead, useAction, useLoad, when } from "../ui";

interface Batch {
  id: string;
  endpoint: string;
  status: string;
  created_at: number;
  input_file_id: string;
  output_file_id: string | null;
  error_file_id: string | null;
  request_counts: { total: number; completed: number; failed: number };
}

const ENDPOINTS = ["/v1/embeddings", "/v1/moderations", "/v1/responses", "/v1/chat/completions", "/v1/completions", "/v1/responses/input_tokens"];
const RUNNING = ["validating", "in_progress", "finalizing", "cancelling"];

export function Batches() {
  const batches = useLoad(() => call<ListPage<Batch>>("/batches", { query: { limit: 100 } }), [], { pollMs: 1000, keepPolling: (p) => p.data.some((b) => RUNNING.includes(b.status)) });
  const [endpoint, setEndpoint] = useState(ENDPOINTS[0]!);
  const [file, setFile] = useState<File | null>(null);
  const action = useAction();
  async function create(e: Event) {
    e.preventDefault();
    if (!file) return;
    await action.run(async () => {
      const input = await uploadFile(file, "batch", () => undefined);
      await call("/batches", { json: { input_file_id: input.id, endpoint, completion_window: "24h" } });
    });
    batches.reload();
  }
  const download = (id: string, name: string) => action.run(async () => saveBlob(await blobOf(`/files/${encodeURIComponent(id)}/content`), name));
  return (
    <Page title="Batches">
      <form class="inline-form" onSubmit={create}>
        <label>
          Input (JSONL)
          <input name="input" type="file" accept=".jsonl,application/jsonl,text/plain" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        </label>
        <label>
          Endpoint
          <select name="endpoint" value={endpoint} onChange={(e) => setEndpoint(e.currentTarget.value)}>
            <Options values={ENDPOINTS} />
          </select>
        </label>
        <button type="submit" disabled={!file || action.busy}>
          Create batch
        </button>
      </form>
      <ErrorBox error={action.error ?? batches.error} />
      <table>
        <TableHead columns={["Batch", "Endpoint", "Status", "Progress", "Created", "Actions"]} />
        <tbody>
          {batches.data?.data.map((b) => {
            const c = b.request_counts;
            return (
              <tr key={b.id} data-batch-id={b.id}>
                <td class="mono">{b.id}</td>
                <td>{b.endpoint}</td>
                <td>
                  <Status value={b.status} />
                </td>
                <td>
                  <Bar value={c.completed + c.failed} max={c.total} label={`Progress of ${b.id}`} /> {c.completed} ok, {c.failed} failed of {c.total}
                </td>
                <td>{when(b.created_at)}</td>
                <td class="actions">
                  {RUNNING.includes(b.status) && b.status !== "cancelling" && (
                    <button type="button" onClick={() => action.run(() => call(`/batches/${encodeURIComponent(b.id)}/cancel`, { method: "POST" })).then(batches.reload)}>
                      Cancel
                    </button>
                  )}
                  {b.output_file_id && (
                    <button type="button" onClick={() => download(b.output_file_id!, `${b.id}-output.jsonl`)}>
                      Output
                    </button>
                  )}
                  {b.error_file_id && (
                    <button type="button" onClick={() => download(b.error_file_id!, `${b.id}-errors.jsonl`)}>
                      Errors
                    </button>
                  )}
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </Page>
  );
}

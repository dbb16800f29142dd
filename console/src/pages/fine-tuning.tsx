import { useState } from "preact/hooks";
import { call, type Page as ListPage } from "../api";
import { LineChart } from "../chart";
import { uploadFile } from "../upload";
import { ErrorBox, Options, Page, Status, TableHead, useAction, useLoad, when } from "../ui";

interface Job {
  id: string;
  model: string;
  status: string;
  created_at: number;
  fine_tuned_model: string | null;
  trained_tokens: number | null;
  error: { code: string; message: string; param: string | null } | null;
}
interface JobEvent {
  id: string;
  created_at: number;
  level: string;
  message: string;
  type: string;
  data: Record<string, number> | null;
}
interface Checkpoint {
  id: string;
  fine_tuned_model_checkpoint: string;
  step_number: number;
  metrics: Record<string, number>;
}

const ACTIVE = ["validating_files", "queued", "running", "paused"];
const MODELS = ["gpt-4o-mini", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4.1", "gpt-3.5-turbo", "o4-mini"];

function Permissions({ checkpoint }: { checkpoint: string }) {
  const perms = useLoad(() => call<ListPage<{ id: string; project_id: string; created_at: number }>>(`/fine_tuning/checkpoints/${encodeURIComponent(checkpoint)}/permissions`), [checkpoint]);
  const [project, setProject] = useState("");
  const action = useAction();
  return (
    <div class="permissions">
      <ErrorBox error={perms.error ?? action.error} />
      <ul>
        {perms.data?.data.map((p) => (
          <li key={p.id}>
            {p.project_id}{" "}
            <button type="button" onClick={() => action.run(() => call(`/fine_tuning/checkpoints/${encodeURIComponent(checkpoint)}/permissions/${encodeURIComponent(p.id)}`, { method: "DELETE" })).then(perms.reload)}>
              Revoke
            </button>
          </li>
        ))}
      </ul>
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void action.run(() => call(`/fine_tuning/checkpoints/${encodeURIComponent(checkpoint)}/permissions`, { json: { project_ids: [project] } })).then(perms.reload);
        }}
      >
        <label>
          Share with project
          <input value={project} onInput={(e) => setProject(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={!project}>
          Grant (admin)
        </button>
      </form>
    </div>
  );
}

function JobDetail({ id }: { id: string }) {
  const job = useLoad(() => call<Job>(`/fine_tuning/jobs/${encodeURIComponent(id)}`), [id], { pollMs: 1000, keepPolling: (j) => ACTIVE.includes(j.status) });
  // Each poll of the job (every second while it is active) brings a new object: the events follow it.
  const events = useLoad(async () => {
    const all: JobEvent[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await call<ListPage<JobEvent>>(`/fine_tuning/jobs/${encodeURIComponent(id)}/events`, { query: { limit: 100, after } });
      all.push(...page.data);
      if (!page.has_more || !page.data.length) return all;
      after = page.data[page.data.length - 1]!.id;
    }
  }, [id, job.data]);
  const checkpoints = useLoad(() => call<ListPage<Checkpoint>>(`/fine_tuning/jobs/${encodeURIComponent(id)}/checkpoints`), [id, job.data?.status]);
  const [open, setOpen] = useState<string>();
  const action = useAction();
  const metrics = (events.data ?? []).filter((e) => e.type === "metrics" && e.data).map((e) => e.data!).sort((a, b) => a.step! - b.step!);
  const keys = ["train_loss", "train_mean_token_accuracy", "valid_loss", "valid_mean_token_accuracy"].filter((k) => metrics.some((m) => typeof m[k] === "number"));
  const j = job.data;
  const act = (verb: string) => action.run(() => call(`/fine_tuning/jobs/${encodeURIComponent(id)}/${verb}`, { method: "POST" })).then(job.reload);
  return (
    <Page title={`Fine-tuning job ${id}`} actions={<a href="#/fine-tuning">All jobs</a>}>
      <ErrorBox error={job.error ?? action.error} />
      {j && (
        <p>
          <Status value={j.status} /> {j.model} → {j.fine_tuned_model ?? "—"} · trained tokens {j.trained_tokens ?? "—"}
          {j.error && ` · ${j.error.code}: ${j.error.message}`}
        </p>
      )}
      <div class="toolbar">
        <button type="button" disabled={j?.status !== "running"} onClick={() => act("pause")}>
          Pause
        </button>
        <button type="button" disabled={j?.status !== "paused"} onClick={() => act("resume")}>
          Resume
        </button>
        <button type="button" class="danger" disabled={!j || !ACTIVE.includes(j.status)} onClick={() => act("cancel")}>
          Cancel
        </button>
      </div>
      <h2>Training metrics</h2>
      {metrics.length ? (
        <LineChart label="Training metrics per step" x={metrics.map((m) => m.step!)} series={keys.map((k) => ({ name: k, values: metrics.map((m) => m[k] ?? null) }))} />
      ) : (
        <p>No metrics yet.</p>
      )}
      <h2>Checkpoints</h2>
      <ErrorBox error={checkpoints.error} />
      <ul>
        {checkpoints.data?.data.map((c) => (
          <li key={c.id}>
            <span class="mono">{c.fine_tuned_model_checkpoint}</span> step {c.step_number}{" "}
            <button type="button" aria-expanded={open === c.id} onClick={() => setOpen(open === c.id ? undefined : c.id)}>
              Permissions
            </button>
            {open === c.id && <Permissions checkpoint={c.fine_tuned_model_checkpoint} />}
          </li>
        ))}
      </ul>
      <h2>Events</h2>
      <ErrorBox error={events.error} />
      <ol class="events" reversed tabIndex={0} aria-label="Events, newest first">
        {(events.data ?? []).slice(0, 200).map((e) => (
          <li key={e.id}>
            {when(e.created_at)} [{e.level}] {e.message}
          </li>
        ))}
      </ol>
    </Page>
  );
}

function GradersPlayground() {
  const [grader, setGrader] = useState(JSON.stringify({ type: "string_check", name: "exact", input: "{{sample.output_text}}", reference: "{{item.answer}}", operation: "eq" }, null, 2));
  const [sample, setSample] = useState("4");
  const [item, setItem] = useState('{"answer": "4"}');
  const [result, setResult] = useState<any>();
  const action = useAction();
  async function run(e: Event) {
    e.preventDefault();
    setResult(
      await action.run(async () => {
        let g: unknown, it: unknown;
        try {
          g = JSON.parse(grader);
          it = JSON.parse(item || "{}");
        } catch {
          throw new Error("The grader and the item must be JSON");
        }
        return call("/fine_tuning/alpha/graders/run", { json: { grader: g, model_sample: sample, item: it } });
      }),
    );
  }
  return (
    <section aria-labelledby="graders-title">
      <h2 id="graders-title">Graders playground</h2>
      <form class="stack" onSubmit={run}>
        <label>
          Grader (JSON)
          <textarea name="grader" rows={6} value={grader} onInput={(e) => setGrader(e.currentTarget.value)} />
        </label>
        <label>
          Model sample
          <input name="model_sample" value={sample} onInput={(e) => setSample(e.currentTarget.value)} />
        </label>
        <label>
          Item (JSON)
          <input name="item" value={item} onInput={(e) => setItem(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={action.busy}>
          Run grader
        </button>
      </form>
      <ErrorBox error={action.error} />
      {result && (
        <p data-testid="grader-reward">
          Reward: <strong>{result.reward}</strong>
        </p>
      )}
    </section>
  );
}

export function FineTuning({ route }: { route: string[] }) {
  const jobs = useLoad(() => call<ListPage<Job>>("/fine_tuning/jobs", { query: { limit: 100 } }), [route[0]], { pollMs: 2000, keepPolling: (p) => p.data.some((j) => ACTIVE.includes(j.status)) });
  const [model, setModel] = useState(MODELS[0]!);
  const [file, setFile] = useState<File | null>(null);
  const action = useAction();
  if (route[0]) return <JobDetail id={route[0]} />;
  async function create(e: Event) {
    e.preventDefault();
    if (!file) return;
    const job = await action.run(async () => {
      const training = await uploadFile(file, "fine-tune", () => undefined);
      return call<Job>("/fine_tuning/jobs", { json: { model, training_file: training.id } });
    });
    if (job) location.hash = `#/fine-tuning/${encodeURIComponent(job.id)}`;
  }
  return (
    <Page title="Fine-tuning">
      <form class="inline-form" onSubmit={create}>
        <label>
          Training file (JSONL)
          <input name="training_file" type="file" accept=".jsonl" onChange={(e) => setFile(e.currentTarget.files?.[0] ?? null)} />
        </label>
        <label>
          Base model
          <select name="model" value={model} onChange={(e) => setModel(e.currentTarget.value)}>
            <Options values={MODELS} />
          </select>
        </label>
        <button type="submit" disabled={!file || action.busy}>
          Create job
        </button>
      </form>
      <ErrorBox error={action.error ?? jobs.error} />
      <table>
        <TableHead columns={["Job", "Model", "Status", "Fine-tuned model", "Created"]} />
        <tbody>
          {jobs.data?.data.map((j) => (
            <tr key={j.id}>
              <td>
                <a href={`#/fine-tuning/${encodeURIComponent(j.id)}`}>{j.id}</a>
              </td>
              <td>{j.model}</td>
              <td>
                <Status value={j.status} />
              </td>
              <td class="mono">{j.fine_tuned_model ?? "—"}</td>
              <td>{when(j.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <GradersPlayground />
    </Page>
  );
}

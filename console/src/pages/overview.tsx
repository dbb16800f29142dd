import { call, operator, type Page as ListPage } from "../api";
import { ErrorBox, Page, TableHead, bytes, useLoad } from "../ui";

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus' text exposition format, the lines this page reads (no timestamps or exemplars). */
export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c) => (c === "n" ? "\n" : c));
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** The API area of a route template: `/v1/vector_stores/{id}/search` → `vector_stores`. */
function areaOf(route: string): string {
  const m = /^\/v1\/([^/]+)/.exec(route);
  if (m) return m[1]!;
  const rpc = /^\/?atrium\.v1\.(\w+)/.exec(route);
  return rpc ? rpc[1]! : "other (operator, console, unmatched)";
}

/** `code` is the HTTP status for REST calls and the RPC status name for Connect and gRPC calls. */
function isError(s: Sample) {
  const code = s.labels.code ?? "";
  return /^\d+$/.test(code) ? Number(code) >= 400 : code !== "" && code !== "ok";
}

export function Overview() {
  const metrics = useLoad(() => operator("/metrics"), [], { pollMs: 5000 });
  const ready = useLoad(() => operator("/readyz"), [], { pollMs: 5000 });
  const storage = useLoad(async () => {
    let total = 0;
    let count = 0;
    let after: string | undefined;
    for (;;) {
      const page = await call<ListPage<{ id: string; bytes: number }>>("/files", { query: { limit: 10000, after } });
      for (const f of page.data) total += f.bytes ?? 0;
      count += page.data.length;
      if (!page.has_more || !page.data.length) break;
      after = page.data[page.data.length - 1]!.id;
    }
    return { total, count };
  }, []);

  const samples = metrics.data && metrics.data.status === 200 ? parseMetrics(metrics.data.text) : [];
  const perArea = new Map<string, { requests: number; errors: number }>();
  for (const s of samples.filter((s) => s.name === "atrium_requests_total")) {
    const a = areaOf(s.labels.route ?? "");
    const row = perArea.get(a) ?? { requests: 0, errors: 0 };
    row.requests += s.value;
    if (isError(s)) row.errors += s.value;
    perArea.set(a, row);
  }
  const jobs = samples.filter((s) => s.name === "atrium_jobs");
  const durations = new Map<string, { sum: number; count: number }>();
  for (const s of samples) {
    if (s.name !== "atrium_job_duration_seconds_sum" && s.name !== "atrium_job_duration_seconds_count") continue;
    const k = s.labels.kind ?? "?";
    const d = durations.get(k) ?? { sum: 0, count: 0 };
    if (s.name.endsWith("_sum")) d.sum += s.value;
    else d.count += s.value;
    durations.set(k, d);
  }
  const readiness = ready.data ? (() => { try { return JSON.parse(ready.data.text); } catch { return { status: ready.data.text }; } })() : undefined;

  return (
    <Page title="Overview">
      <div class="cards">
        <article class="card">
          <h2>Readiness</h2>
          {readiness && (
            <>
              <p class={ready.data!.status === 200 ? "ok" : "bad"} data-testid="readiness">{readiness.status}</p>
              <ul>
                {Object.entries(readiness.checks ?? {}).map(([k, v]) => (
                  <li key={k}>
                    {k}: {String(v)}
                  </li>
                ))}
              </ul>
            </>
          )}
          <ErrorBox error={ready.error} />
        </article>
        <article class="card">
          <h2>Storage (this project's files)</h2>
          {storage.data && (
            <p data-testid="storage">
              {bytes(storage.data.total)} in {storage.data.count} files
            </p>
          )}
          <ErrorBox error={storage.error} />
        </article>
      </div>
      <h2>Requests and errors per area</h2>
      {metrics.data && metrics.data.status !== 200 && <p>/metrics answered {metrics.data.status}: {metrics.data.text}</p>}
      <ErrorBox error={metrics.error} />
      <table>
        <TableHead columns={["Area", "Requests", "Errors"]} />
        <tbody>
          {[...perArea].sort(([a], [b]) => a.localeCompare(b)).map(([area, r]) => (
            <tr key={area}>
              <td>{area}</td>
              <td>{r.requests}</td>
              <td>{r.errors}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Job queue</h2>
      <table>
        <TableHead columns={["Kind", "Queued", "Running", "Runs", "Mean duration"]} />
        <tbody>
          {[...new Set([...jobs.map((j) => j.labels.kind ?? "?"), ...durations.keys()])].sort().map((kind) => {
            const d = durations.get(kind);
            const depth = (state: string) => jobs.filter((j) => j.labels.kind === kind && j.labels.state === state).reduce((n, j) => n + j.value, 0);
            return (
              <tr key={kind}>
                <td>{kind}</td>
                <td>{depth("queued")}</td>
                <td>{depth("running")}</td>
                <td>{d?.count ?? 0}</td>
                <td>{d && d.count ? `${(d.sum / d.count).toFixed(2)} s` : "—"}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
    </Page>
  );
}

import { useState } from "preact/hooks";
import { call, type Page as ListPage } from "../api";
import { ErrorBox, Options, Page, Status, TableHead, bytes, useAction, useLoad, when } from "../ui";
import type { FileObject } from "./files";

interface VectorStore {
  id: string;
  name: string | null;
  status: string;
  usage_bytes: number;
  created_at: number;
  file_counts: { in_progress: number; completed: number; failed: number; cancelled: number; total: number };
}

interface VectorStoreFile {
  id: string;
  status: string;
  usage_bytes: number;
  last_error: { code: string; message: string } | null;
  attributes: Record<string, string | number | boolean> | null;
}

const COMPARISONS = ["eq", "ne", "gt", "gte", "lt", "lte", "in", "nin"] as const;
const COMPOUNDS = ["and", "or"] as const;

export type FilterNode =
  | { type: (typeof COMPARISONS)[number]; key: string; value: string }
  | { type: (typeof COMPOUNDS)[number]; filters: FilterNode[] };

function scalar(v: string): string | number | boolean {
  const t = v.trim();
  if (t === "true") return true;
  if (t === "false") return false;
  if (t !== "" && !Number.isNaN(Number(t))) return Number(t);
  return t;
}

/** The builder's tree as the API's filter: `in`/`nin` take a comma-separated list. */
export function toApiFilter(f: FilterNode): unknown {
  if ("filters" in f) return { type: f.type, filters: f.filters.map(toApiFilter) };
  const value = f.type === "in" || f.type === "nin" ? f.value.split(",").map((v) => scalar(v) as string | number) : scalar(f.value);
  return { type: f.type, key: f.key, value };
}

function FilterEditor({ node, onChange, onRemove, path }: { node: FilterNode; onChange: (n: FilterNode) => void; onRemove?: () => void; path: string }) {
  const isCompound = node.type === "and" || node.type === "or";
  return (
    <fieldset class="filter">
      <legend>{isCompound ? "Compound filter" : "Comparison"}</legend>
      <label>
        Operator
        <select
          name={`filter-type-${path}`}
          value={node.type}
          onChange={(e) => {
            const t = e.currentTarget.value as FilterNode["type"];
            const toCompound = t === "and" || t === "or";
            if (toCompound === isCompound) onChange({ ...node, type: t } as FilterNode);
            else onChange(toCompound ? { type: t as "and", filters: [node] } : { type: t as "eq", key: "", value: "" });
          }}
        >
          <Options values={[...COMPARISONS, ...COMPOUNDS]} />
        </select>
      </label>
      {"key" in node ? (
        <>
          <label>
            Attribute
            <input name={`filter-key-${path}`} value={node.key} onInput={(e) => onChange({ ...node, key: e.currentTarget.value })} />
          </label>
          <label>
            Value{node.type === "in" || node.type === "nin" ? " (comma-separated)" : ""}
            <input name={`filter-value-${path}`} value={node.value} onInput={(e) => onChange({ ...node, value: e.currentTarget.value })} />
          </label>
        </>
      ) : (
        <div class="filter-children">
          {node.filters.map((child, i) => (
            <FilterEditor
              key={i}
              path={`${path}-${i}`}
              node={child}
              onChange={(c) => onChange({ ...node, filters: node.filters.map((x, j) => (j === i ? c : x)) })}
              onRemove={() => onChange({ ...node, filters: node.filters.filter((_, j) => j !== i) })}
            />
          ))}
          <button type="button" onClick={() => onChange({ ...node, filters: [...node.filters, { type: "eq", key: "", value: "" }] })}>
            Add condition
          </button>
        </div>
      )}
      {onRemove && (
        <button type="button" onClick={onRemove}>
          Remove
        </button>
      )}
    </fieldset>
  );
}

/** Chunk text with the query's words marked; every piece is a text node, never HTML. */
export function Highlighted({ text, query }: { text: string; query: string }) {
  const words = [...new Set(query.toLowerCase().split(/\W+/).filter((w) => w.length > 2))];
  if (!words.length) return <>{text}</>;
  const re = new RegExp(`(${words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("|")})`, "gi");
  return (
    <>
      {text.split(re).map((part, i) => (i % 2 === 1 ? <mark key={i}>{part}</mark> : part))}
    </>
  );
}

function SearchPlayground({ store }: { store: string }) {
  const [query, setQuery] = useState("");
  const [filter, setFilter] = useState<FilterNode | null>(null);
  const [maxResults, setMaxResults] = useState(10);
  const [ranker, setRanker] = useState("auto");
  const [threshold, setThreshold] = useState(0);
  const [rewrite, setRewrite] = useState(false);
  const [results, setResults] = useState<any>();
  const action = useAction();
  async function search(e: Event) {
    e.preventDefault();
    const body: Record<string, unknown> = { query, max_num_results: maxResults, ranking_options: { ranker, score_threshold: threshold }, rewrite_query: rewrite };
    if (filter) body.filters = toApiFilter(filter);
    setResults(await action.run(() => call(`/vector_stores/${encodeURIComponent(store)}/search`, { json: body })));
  }
  return (
    <section aria-labelledby="search-title">
      <h2 id="search-title">Search playground</h2>
      <form class="search" onSubmit={search}>
        <label>
          Query
          <input name="query" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
        </label>
        <label>
          Results
          <input name="max_num_results" type="number" min={1} max={50} value={maxResults} onInput={(e) => setMaxResults(Number(e.currentTarget.value))} />
        </label>
        <label>
          Ranker
          <select name="ranker" value={ranker} onChange={(e) => setRanker(e.currentTarget.value)}>
            <option>auto</option>
            <option>default-2024-11-15</option>
            <option>none</option>
          </select>
        </label>
        <label>
          Score threshold
          <input name="score_threshold" type="number" min={0} max={1} step={0.01} value={threshold} onInput={(e) => setThreshold(Number(e.currentTarget.value))} />
        </label>
        <label class="inline">
          <input name="rewrite_query" type="checkbox" checked={rewrite} onChange={(e) => setRewrite(e.currentTarget.checked)} /> Rewrite query
        </label>
        {filter ? (
          <FilterEditor path="root" node={filter} onChange={setFilter} onRemove={() => setFilter(null)} />
        ) : (
          <button type="button" onClick={() => setFilter({ type: "eq", key: "", value: "" })}>
            Add filter
          </button>
        )}
        <button type="submit" disabled={action.busy}>
          Search
        </button>
      </form>
      <ErrorBox error={action.error} />
      {results && (
        <ol class="results" data-testid="search-results">
          {results.data.map((r: any, i: number) => (
            <li key={i}>
              <p>
                <strong>{r.filename}</strong> <span class="mono">{r.file_id}</span> score <span data-testid="score">{r.score.toFixed(4)}</span>
              </p>
              {r.attributes && <p class="attrs">{JSON.stringify(r.attributes)}</p>}
              {r.content.map((c: any, j: number) => (
                <blockquote key={j} class="chunk">
                  <Highlighted text={c.text} query={results.search_query?.join(" ") ?? query} />
                </blockquote>
              ))}
            </li>
          ))}
          {!results.data.length && <li>No results.</li>}
        </ol>
      )}
    </section>
  );
}

function StoreDetail({ id }: { id: string }) {
  const store = useLoad(() => call<VectorStore>(`/vector_stores/${encodeURIComponent(id)}`), [id], { pollMs: 1000, keepPolling: (s) => s.file_counts.in_progress > 0 });
  const files = useLoad(() => call<ListPage<VectorStoreFile>>(`/vector_stores/${encodeURIComponent(id)}/files`, { query: { limit: 100 } }), [id, store.data?.file_counts.in_progress, store.data?.file_counts.total]);
  const available = useLoad(() => call<ListPage<FileObject>>("/files", { query: { limit: 1000 } }), []);
  const [fileId, setFileId] = useState("");
  const [attributes, setAttributes] = useState("");
  const action = useAction();
  async function attach(e: Event) {
    e.preventDefault();
    await action.run(async () => {
      let attrs: unknown;
      try {
        attrs = attributes.trim() ? JSON.parse(attributes) : undefined;
      } catch {
        throw new Error("Attributes must be a JSON object, e.g. {\"team\": \"docs\"}");
      }
      await call(`/vector_stores/${encodeURIComponent(id)}/files`, { json: { file_id: fileId, attributes: attrs } });
      store.reload();
    });
  }
  const s = store.data;
  return (
    <Page title={`Vector store ${s?.name ?? id}`} actions={<a href="#/vector-stores">All vector stores</a>}>
      <ErrorBox error={store.error} />
      {s && (
        <p>
          <Status value={s.status} /> {s.file_counts.completed} completed, {s.file_counts.in_progress} in progress, {s.file_counts.failed} failed · {bytes(s.usage_bytes)}
        </p>
      )}
      <form class="inline-form" onSubmit={attach}>
        <label>
          File
          <select name="file_id" value={fileId} onChange={(e) => setFileId(e.currentTarget.value)}>
            <option value="">choose a file…</option>
            {available.data?.data.map((f) => (
              <option key={f.id} value={f.id}>
                {f.filename} ({f.id})
              </option>
            ))}
          </select>
        </label>
        <label>
          Attributes (JSON)
          <input name="attributes" value={attributes} placeholder='{"team": "docs"}' onInput={(e) => setAttributes(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={!fileId || action.busy}>
          Attach file
        </button>
      </form>
      <ErrorBox error={action.error} />
      <table>
        <caption>Files in this store</caption>
        <TableHead columns={["File", "Status", "Size", "Attributes", "Error"]} />
        <tbody>
          {files.data?.data.map((f) => (
            <tr key={f.id} data-testid="vs-file">
              <td class="mono">{f.id}</td>
              <td>
                <Status value={f.status} />
              </td>
              <td>{bytes(f.usage_bytes)}</td>
              <td class="attrs">{f.attributes ? JSON.stringify(f.attributes) : "—"}</td>
              <td>{f.last_error ? `${f.last_error.code}: ${f.last_error.message}` : "—"}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <SearchPlayground store={id} />
    </Page>
  );
}

export function VectorStores({ route }: { route: string[] }) {
  const stores = useLoad(() => call<ListPage<VectorStore>>("/vector_stores", { query: { limit: 100 } }), [route[0]]);
  const [name, setName] = useState("");
  const action = useAction();
  if (route[0]) return <StoreDetail id={route[0]} />;
  async function create(e: Event) {
    e.preventDefault();
    const vs = await action.run(() => call<VectorStore>("/vector_stores", { json: { name } }));
    if (vs) location.hash = `#/vector-stores/${encodeURIComponent(vs.id)}`;
  }
  return (
    <Page title="Vector stores">
      <form class="inline-form" onSubmit={create}>
        <label>
          Name
          <input name="name" value={name} onInput={(e) => setName(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={action.busy}>
          Create vector store
        </button>
      </form>
      <ErrorBox error={action.error ?? stores.error} />
      <table>
        <TableHead columns={["Name", "ID", "Status", "Files", "Size", "Created"]} />
        <tbody>
          {stores.data?.data.map((s) => (
            <tr key={s.id}>
              <td>
                <a href={`#/vector-stores/${encodeURIComponent(s.id)}`}>{s.name || s.id}</a>
              </td>
              <td class="mono">{s.id}</td>
              <td>
                <Status value={s.status} />
              </td>
              <td>
                {s.file_counts.completed}/{s.file_counts.total}
              </td>
              <td>{bytes(s.usage_bytes)}</td>
              <td>{when(s.created_at)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Page>
  );
}

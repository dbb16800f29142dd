// Pieces every page uses: the error panel, a loader hook with polling, a progress bar, dates.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "./api";

/** An API error in full: message, type, param and code, never swallowed. */
export function ErrorBox({ error }: { error: unknown }) {
  if (!error) return null;
  const e = error instanceof ApiError ? error : null;
  return (
    <div class="error" role="alert" data-testid="api-error">
      <strong>{e ? `Error ${e.status || ""}` : "Error"}</strong>
      <span class="error-message">{error instanceof Error ? error.message : String(error)}</span>
      {e && (
        <dl>
          <dt>type</dt>
          <dd data-field="type">{e.type ?? "null"}</dd>
          <dt>param</dt>
          <dd data-field="param">{e.param ?? "null"}</dd>
          <dt>code</dt>
          <dd data-field="code">{e.code ?? "null"}</dd>
        </dl>
      )}
    </div>
  );
}

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * Runs `load` now, whenever `deps` change, and every `pollMs` while `keepPolling(data)` says so.
 * A late answer to an older request never overwrites a newer one.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], o: { pollMs?: number; keepPolling?: (d: T) => boolean } = {}): Loaded<T> {
  const [data, setData] = useState<T>();
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(true);
  const [tick, setTick] = useState(0);
  const generation = useRef(0);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  useEffect(() => {
    const mine = ++generation.current;
    let timer: ReturnType<typeof setTimeout> | undefined;
    setLoading(true);
    load()
      .then((d) => {
        if (mine !== generation.current) return;
        setData(d);
        setError(undefined);
        if (o.pollMs && (!o.keepPolling || o.keepPolling(d))) timer = setTimeout(() => mine === generation.current && setTick((t) => t + 1), o.pollMs);
      })
      .catch((e) => mine === generation.current && setError(e))
      .finally(() => mine === generation.current && setLoading(false));
    return () => clearTimeout(timer);
  }, [...deps, tick]);
  return { data, error, loading, reload };
}

/** Runs an action, keeping its error to show and whether it is running (to disable its button). */
export function useAction() {
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const run = useCallback(async <T,>(f: () => Promise<T>): Promise<T | undefined> => {
    setBusy(true);
    setError(undefined);
    try {
      return await f();
    } catch (e) {
      setError(e);
      return undefined;
    } finally {
      setBusy(false);
    }
  }, []);
  return { error, busy, run, setError };
}

/** A progress bar; `percent: false` leaves out the percentage where the value is printed beside it. */
export function Bar({ value, max = 100, label, percent = true }: { value: number; max?: number; label: string; percent?: boolean }) {
  const pct = max > 0 ? Math.round((100 * value) / max) : 0;
  return (
    <span class="bar">
      <progress value={value} max={max} aria-label={label} />
      {percent && <span class="bar-text">{pct} %</span>}
    </span>
  );
}

export function when(unixSeconds: number | null | undefined): string {
  if (!unixSeconds) return "—";
  return new Date(unixSeconds * 1000).toISOString().replace("T", " ").slice(0, 19);
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

export function Page({ title, children, actions }: { title: string; children: ComponentChildren; actions?: ComponentChildren }) {
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-head">
        <h1 id="page-title">{title}</h1>
        {actions}
      </header>
      {children}
    </section>
  );
}

export function Status({ value }: { value: string | null | undefined }) {
  return <span class={`status status-${value ?? "none"}`}>{value ?? "—"}</span>;
}

export function TableHead({ columns }: { columns: string[] }) {
  return (
    <thead>
      <tr>
        {columns.map((c, i) => (
          <th key={i} scope="col">
            {c}
          </th>
        ))}
      </tr>
    </thead>
  );
}

/** `<option>`s whose text is their value. */
export function Options({ values }: { values: readonly string[] }) {
  return (
    <>
      {values.map((v) => (
        <option key={v}>{v}</option>
      ))}
    </>
  );
}

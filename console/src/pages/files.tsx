import { useEffect, useRef, useState } from "preact/hooks";
import { VList, type VListHandle } from "virtua";
import { blobOf, call, saveBlob, type Page as ListPage } from "../api";
import { uploadFile, type UploadProgress } from "../upload";
import { Bar, ErrorBox, Options, Page, Status, bytes, useAction, when } from "../ui";

export interface FileObject {
  id: string;
  filename: string;
  purpose: string;
  bytes: number;
  created_at: number;
  status?: string;
}

export const PURPOSES = ["assistants", "batch", "fine-tune", "vision", "user_data", "evals"];
const PAGE_SIZE = 1000;

/** A preview of a file's content: text, an image or a PDF, by its name and the bytes' type. */
function Preview({ file, onClose }: { file: FileObject; onClose: () => void }) {
  const [view, setView] = useState<{ kind: "text"; text: string } | { kind: "image" | "pdf"; url: string } | { kind: "none" }>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let url: string | undefined;
    blobOf(`/files/${encodeURIComponent(file.id)}/content`)
      .then(async (blob) => {
        const name = file.filename.toLowerCase();
        if (/\.(png|jpe?g|gif|webp)$/.test(name) || blob.type.startsWith("image/")) setView({ kind: "image", url: (url = URL.createObjectURL(blob)) });
        else if (name.endsWith(".pdf") || blob.type === "application/pdf") setView({ kind: "pdf", url: (url = URL.createObjectURL(new Blob([blob], { type: "application/pdf" }))) });
        else {
          const text = await blob.slice(0, 64 * 1024).text();
          setView({ kind: "text", text: blob.size > 64 * 1024 ? `${text}\n… (${bytes(blob.size)} in all)` : text });
        }
      })
      .catch(setError);
    return () => url && URL.revokeObjectURL(url);
  }, [file.id]);
  return (
    <div class="preview" role="region" aria-label={`Preview of ${file.filename}`}>
      <header>
        <h2>{file.filename}</h2>
        <button type="button" onClick={onClose}>
          Close preview
        </button>
      </header>
      <ErrorBox error={error} />
      {view?.kind === "text" && <pre data-testid="preview-text">{view.text}</pre>}
      {view?.kind === "image" && <img src={view.url} alt={`Content of ${file.filename}`} />}
      {view?.kind === "pdf" && <iframe src={view.url} title={`PDF ${file.filename}`} />}
    </div>
  );
}

export function Files() {
  const [purpose, setPurpose] = useState("");
  const [files, setFiles] = useState<FileObject[]>([]);
  const [hasMore, setHasMore] = useState(false);
  const [uploadPurpose, setUploadPurpose] = useState("assistants");
  const [progress, setProgress] = useState<(UploadProgress & { name: string }) | undefined>();
  const [preview, setPreview] = useState<FileObject>();
  const [dragging, setDragging] = useState(false);
  const list = useAction();
  const action = useAction();
  const loading = useRef(false);
  const generation = useRef(0);
  const listRef = useRef<VListHandle>(null);

  async function load(reset: boolean) {
    if (loading.current && !reset) return;
    loading.current = true;
    const mine = reset ? ++generation.current : generation.current;
    const after = reset ? undefined : files[files.length - 1]?.id;
    await list.run(async () => {
      const page = await call<ListPage<FileObject>>("/files", { query: { purpose, limit: PAGE_SIZE, after, order: "desc" } });
      if (mine !== generation.current) return;
      setFiles((old) => (reset ? page.data : [...old, ...page.data]));
      setHasMore(page.has_more);
    });
    loading.current = false;
  }
  useEffect(() => void load(true), [purpose]);

  async function upload(chosen: FileList | null) {
    for (const f of Array.from(chosen ?? [])) {
      setProgress({ name: f.name, sent: 0, total: f.size });
      const done = await action.run(() => uploadFile(f, uploadPurpose, (p) => setProgress({ name: f.name, ...p })));
      if (!done) return;
    }
    setProgress(undefined);
    await load(true);
  }

  async function remove(f: FileObject) {
    if (!confirm(`Delete ${f.filename}?`)) return;
    if (await action.run(() => call(`/files/${encodeURIComponent(f.id)}`, { method: "DELETE" }))) setFiles((old) => old.filter((x) => x.id !== f.id));
  }

  return (
    <Page title="Files">
      <div
        class={`dropzone${dragging ? " dragging" : ""}`}
        data-testid="dropzone"
        onDragOver={(e) => {
          e.preventDefault();
          setDragging(true);
        }}
        onDragLeave={() => setDragging(false)}
        onDrop={(e) => {
          e.preventDefault();
          setDragging(false);
          void upload(e.dataTransfer?.files ?? null);
        }}
      >
        <p>Drop files here, or choose them:</p>
        <label>
          Purpose
          <select value={uploadPurpose} onChange={(e) => setUploadPurpose(e.currentTarget.value)}>
            <Options values={PURPOSES} />
          </select>
        </label>
        <label>
          Upload files
          <input type="file" multiple name="upload" onChange={(e) => void upload(e.currentTarget.files)} />
        </label>
        {progress && (
          <p data-testid="upload-progress">
            {progress.name}: <Bar value={progress.sent} max={progress.total} label={`Upload of ${progress.name}`} /> {bytes(progress.sent)} of {bytes(progress.total)}
          </p>
        )}
      </div>
      <ErrorBox error={action.error} />
      <div class="toolbar">
        <label>
          Filter by purpose
          <select value={purpose} onChange={(e) => setPurpose(e.currentTarget.value)}>
            <option value="">all</option>
            <Options values={PURPOSES} />
          </select>
        </label>
        <span data-testid="file-count">
          {files.length}
          {hasMore ? "+" : ""} files
        </span>
        <button type="button" onClick={() => load(true)}>
          Refresh
        </button>
      </div>
      <ErrorBox error={list.error} />
      <div class="filerow filehead" aria-hidden="true">
        <span>Name</span>
        <span>ID</span>
        <span>Purpose</span>
        <span>Size</span>
        <span>Created</span>
        <span>Status</span>
        <span />
      </div>
      <VList
        // preact/compat's ref typing merges the handle with the element's; the handle is what arrives.
        ref={listRef as never}
        class="filelist"
        style={{ height: 420 }}
        data-testid="file-list"
        aria-label="Files"
        tabIndex={0}
        data={files}
        itemSize={40}
        onScroll={(offset) => {
          const h = listRef.current;
          if (h && hasMore && offset + h.viewportSize > h.scrollSize - 400) void load(false);
        }}
      >
        {(f: FileObject) => (
          <div class="filerow" key={f.id} data-file-id={f.id}>
            <span class="filename" title={f.filename}>
              {f.filename}
            </span>
            <span class="mono">{f.id}</span>
            <span>{f.purpose}</span>
            <span>{bytes(f.bytes)}</span>
            <span>{when(f.created_at)}</span>
            <span>
              <Status value={f.status ?? "processed"} />
            </span>
            <span class="actions">
              <button type="button" aria-label={`Preview ${f.filename}`} onClick={() => setPreview(f)}>
                Preview
              </button>
              <button type="button" aria-label={`Download ${f.filename}`} onClick={() => action.run(async () => saveBlob(await blobOf(`/files/${encodeURIComponent(f.id)}/content`), f.filename))}>
                Download
              </button>
              <button type="button" class="danger" aria-label={`Delete ${f.filename}`} onClick={() => remove(f)}>
                Delete
              </button>
            </span>
          </div>
        )}
      </VList>
      {preview && <Preview file={preview} onClose={() => setPreview(undefined)} />}
    </Page>
  );
}

// Uploading a file from the browser. Small files are one POST /v1/files; large ones go through the
// Uploads API: the File is sliced into parts that are sent a few at a time. A slice is a view on
// the file on disk, so the page's memory stays flat however large the file is. XMLHttpRequest,
// not fetch, because only it reports upload progress.
import { ApiError, authHeaders, call } from "./api";

export const PART_BYTES = 8 * 1024 * 1024;
const PARALLEL_PARTS = 4;

function send(url: string, form: FormData, onProgress: (sent: number) => void, signal?: AbortSignal): Promise<any> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", url);
    for (const [k, v] of Object.entries(authHeaders())) xhr.setRequestHeader(k, v);
    xhr.responseType = "text";
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      let body: any = null;
      try {
        body = JSON.parse(xhr.responseText);
      } catch {
        // Shown as the raw text below.
      }
      if (xhr.status >= 200 && xhr.status < 300) return resolve(body);
      const e = body?.error;
      reject(e ? new ApiError(xhr.status, e.message, e.type ?? null, e.param ?? null, e.code ?? null) : new ApiError(xhr.status, xhr.responseText || xhr.statusText, null, null, null));
    };
    xhr.onerror = () => reject(new ApiError(0, "The connection failed", null, null, null));
    xhr.onabort = () => reject(new ApiError(0, "Upload cancelled", null, null, null));
    signal?.addEventListener("abort", () => xhr.abort(), { once: true });
    xhr.send(form);
  });
}

export interface UploadProgress {
  sent: number;
  total: number;
}

export async function uploadFile(file: File, purpose: string, onProgress: (p: UploadProgress) => void, signal?: AbortSignal): Promise<any> {
  const total = file.size;
  if (total <= PART_BYTES) {
    const form = new FormData();
    form.append("purpose", purpose);
    form.append("file", file, file.name);
    return send("/v1/files", form, (sent) => onProgress({ sent: Math.min(sent, total), total }), signal);
  }
  const upload = await call("/uploads", { json: { filename: file.name, purpose, bytes: total, mime_type: file.type || "application/octet-stream" }, signal });
  const count = Math.ceil(total / PART_BYTES);
  const partIds: string[] = new Array(count);
  const sentPerPart = new Array<number>(count).fill(0);
  let next = 0;
  const report = () => onProgress({ sent: Math.min(total, sentPerPart.reduce((a, b) => a + b, 0)), total });
  async function worker() {
    while (next < count) {
      const i = next++;
      const slice = file.slice(i * PART_BYTES, Math.min(total, (i + 1) * PART_BYTES));
      const form = new FormData();
      form.append("data", slice, `part-${i}`);
      const part = await send(`/v1/uploads/${encodeURIComponent(upload.id)}/parts`, form, (sent) => {
        sentPerPart[i] = Math.min(sent, slice.size);
        report();
      }, signal);
      sentPerPart[i] = slice.size;
      partIds[i] = part.id;
      report();
    }
  }
  try {
    await Promise.all(Array.from({ length: Math.min(PARALLEL_PARTS, count) }, worker));
  } catch (e) {
    await call(`/uploads/${encodeURIComponent(upload.id)}/cancel`, { method: "POST" }).catch(() => undefined);
    throw e;
  }
  const done = await call(`/uploads/${encodeURIComponent(upload.id)}/complete`, { json: { part_ids: partIds }, signal });
  return done.file;
}

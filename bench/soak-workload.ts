// The soak's mixed workload (bench/soak.ts): uploads and downloads checked by sha256, vector
// stores and searches, embeddings, moderations, batches, videos and deletes, each action timed
// and counted. Every file the server acknowledged is remembered with its sha256 until deleted, so
// the end of the soak can check that no byte was lost.
import { createHash, randomBytes } from "node:crypto";

export const ACTIONS = ["upload", "download", "search", "embeddings", "moderation", "vector_store", "batch", "video", "delete"] as const;
export type Action = (typeof ACTIONS)[number];

/** How often each action is picked (relative weights). */
const WEIGHTS: Record<Action, number> = { upload: 22, download: 22, search: 14, embeddings: 12, moderation: 12, vector_store: 4, batch: 3, video: 1, delete: 10 };

export interface KeptFile {
  id: string;
  sha256: string;
  bytes: number;
}

export interface ActionResult {
  action: Action;
  ms: number;
  ok: boolean;
  /** `HTTP 503 engine_timeout`, `sha256 mismatch`…: why it failed. */
  error?: string;
}

const WORDS = "atrium soak measures memory latency and durability of every stored byte across restarts while searches embeddings and moderations run".split(" ");
const words = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(Math.random() * WORDS.length)]).join(" ");
const sha256 = (b: Buffer | Uint8Array) => createHash("sha256").update(b).digest("hex");
const pick = <T>(xs: T[]): T | undefined => xs[Math.floor(Math.random() * xs.length)];

export class Workload {
  readonly files = new Map<string, KeptFile>();
  /** Text files (ingestible), by id. */
  private readonly textFiles: string[] = [];
  private readonly stores: string[] = [];

  constructor(
    private readonly base: () => string,
    private readonly key: string,
  ) {}

  pickAction(): Action {
    const total = ACTIONS.reduce((s, a) => s + WEIGHTS[a], 0);
    let r = Math.random() * total;
    for (const a of ACTIONS) if ((r -= WEIGHTS[a]) < 0) return a;
    return "upload";
  }

  private async call(method: string, path: string, body?: unknown): Promise<{ status: number; json: any; raw: Buffer }> {
    const init: RequestInit = { method, headers: { authorization: `Bearer ${this.key}` } };
    if (body instanceof FormData) init.body = body;
    else if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)["content-type"] = "application/json";
    }
    const res = await fetch(`${this.base()}${path}`, { ...init, signal: AbortSignal.timeout(120_000) });
    const raw = Buffer.from(await res.arrayBuffer());
    let json: any = null;
    try {
      json = JSON.parse(raw.toString("utf8"));
    } catch {
      json = null;
    }
    return { status: res.status, json, raw };
  }

  private static failure(r: { status: number; json: any }): string | undefined {
    if (r.status < 400) return undefined;
    return `HTTP ${r.status} ${r.json?.error?.code ?? ""}`.trim();
  }

  async run(action: Action): Promise<ActionResult> {
    const started = performance.now();
    let error: string | undefined;
    try {
      error = await this.perform(action);
    } catch (e) {
      error = `${(e as Error).name}: ${(e as Error).message}`.slice(0, 120);
    }
    return { action, ms: performance.now() - started, ok: error === undefined, error };
  }

  /** Does one action; returns why it failed, or undefined. */
  private async perform(action: Action): Promise<string | undefined> {
    switch (action) {
      case "upload":
        return this.upload();
      case "download": {
        const f = pick([...this.files.values()]);
        if (!f) return this.upload();
        const r = await this.call("GET", `/v1/files/${f.id}/content`);
        if (r.status !== 200) return Workload.failure(r);
        return sha256(r.raw) === f.sha256 ? undefined : `sha256 mismatch on ${f.id}`;
      }
      case "search": {
        const store = pick(this.stores);
        if (!store) return this.createStore();
        const r = await this.call("POST", `/v1/vector_stores/${store}/search`, { query: words(6), max_num_results: 5 });
        return Workload.failure(r);
      }
      case "embeddings":
        return Workload.failure(await this.call("POST", "/v1/embeddings", { model: "atrium-embed-use-lite", input: Array.from({ length: 1 + Math.floor(Math.random() * 8) }, () => words(12)) }));
      case "moderation":
        return Workload.failure(await this.call("POST", "/v1/moderations", { model: "omni-moderation-latest", input: words(20) }));
      case "vector_store":
        return this.createStore();
      case "batch":
        return this.batch();
      case "video":
        return Workload.failure(await this.call("POST", "/v1/videos", { model: "vid-2", prompt: words(5), seconds: "4", size: "720x1280" }));
      case "delete":
        return this.delete();
    }
  }

  private async upload(): Promise<string | undefined> {
    const text = Math.random() < 0.5;
    const content = text ? Buffer.from(words(50 + Math.floor(Math.random() * 2000))) : randomBytes(1024 + Math.floor(Math.random() * 2 * 1024 * 1024));
    const form = new FormData();
    form.set("purpose", "assistants");
    form.set("file", new Blob([content]), text ? "notes.txt" : "data.bin");
    const r = await this.call("POST", "/v1/files", form);
    if (r.status !== 200) return Workload.failure(r);
    this.files.set(r.json.id, { id: r.json.id, sha256: sha256(content), bytes: content.length });
    if (text) this.textFiles.push(r.json.id);
    return undefined;
  }

  private async createStore(): Promise<string | undefined> {
    const ids = [pick(this.textFiles), pick(this.textFiles)].filter((x): x is string => !!x && this.files.has(x));
    const r = await this.call("POST", "/v1/vector_stores", { name: "soak", file_ids: [...new Set(ids)] });
    if (r.status !== 200) return Workload.failure(r);
    this.stores.push(r.json.id);
    return undefined;
  }

  private async batch(): Promise<string | undefined> {
    const lines = Array.from({ length: 3 }, (_, i) => JSON.stringify({ custom_id: `r${i}`, method: "POST", url: "/v1/embeddings", body: { model: "atrium-embed-use-lite", input: words(8) } }));
    const form = new FormData();
    form.set("purpose", "batch");
    form.set("file", new Blob([lines.join("\n") + "\n"]), "batch.jsonl");
    const f = await this.call("POST", "/v1/files", form);
    if (f.status !== 200) return Workload.failure(f);
    return Workload.failure(await this.call("POST", "/v1/batches", { input_file_id: f.json.id, endpoint: "/v1/embeddings", completion_window: "24h" }));
  }

  private async delete(): Promise<string | undefined> {
    if (Math.random() < 0.2 && this.stores.length > 3) {
      const store = this.stores.splice(Math.floor(Math.random() * this.stores.length), 1)[0]!;
      return Workload.failure(await this.call("DELETE", `/v1/vector_stores/${store}`));
    }
    if (this.files.size < 20) return this.upload();
    const f = pick([...this.files.values()])!;
    // Forgotten first: a delete whose answer is lost may have happened.
    this.files.delete(f.id);
    return Workload.failure(await this.call("DELETE", `/v1/files/${f.id}`));
  }

  /** Downloads every kept file; returns the ids whose bytes differ or are gone. */
  async verifyAll(): Promise<{ checked: number; bytes: number; bad: string[] }> {
    const bad: string[] = [];
    let bytes = 0;
    // Four downloads at a time: an hour's files (~11 GiB) one by one took ~12 minutes each pass.
    const queue = [...this.files.values()];
    const check = async () => {
      for (let f = queue.pop(); f; f = queue.pop()) {
        const r = await this.call("GET", `/v1/files/${f.id}/content`);
        if (r.status !== 200 || sha256(r.raw) !== f.sha256) bad.push(`${f.id} (HTTP ${r.status})`);
        else bytes += f.bytes;
      }
    };
    await Promise.all(Array.from({ length: 4 }, check));
    return { checked: this.files.size, bytes, bad };
  }
}

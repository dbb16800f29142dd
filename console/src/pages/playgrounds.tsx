import { useState } from "preact/hooks";
import { call } from "../api";
import { Bar, ErrorBox, Page, TableHead, useAction } from "../ui";

function dataUrl(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result));
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

function Tokens() {
  const [model, setModel] = useState("gpt-4o");
  const [text, setText] = useState("");
  const [attachment, setAttachment] = useState<File | null>(null);
  const [count, setCount] = useState<number>();
  const action = useAction();
  async function run(e: Event) {
    e.preventDefault();
    const res = await action.run(async () => {
      const content: unknown[] = [];
      if (text) content.push({ type: "input_text", text });
      if (attachment) {
        const url = await dataUrl(attachment);
        if (attachment.type === "application/pdf" || attachment.name.toLowerCase().endsWith(".pdf")) content.push({ type: "input_file", filename: attachment.name, file_data: url });
        else content.push({ type: "input_image", image_url: url });
      }
      return call<{ input_tokens: number }>("/responses/input_tokens", { json: { model, input: [{ role: "user", content }] } });
    });
    setCount(res?.input_tokens);
  }
  return (
    <section aria-labelledby="tokens-title" class="card">
      <h2 id="tokens-title">Token counting</h2>
      <form class="stack" onSubmit={run}>
        <label>
          Model
          <input name="tokens_model" value={model} onInput={(e) => setModel(e.currentTarget.value)} />
        </label>
        <label>
          Text
          <textarea name="tokens_text" rows={4} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </label>
        <label>
          Image or PDF
          <input name="tokens_file" type="file" accept="image/*,application/pdf" onChange={(e) => setAttachment(e.currentTarget.files?.[0] ?? null)} />
        </label>
        <button type="submit" disabled={action.busy}>
          Count tokens
        </button>
      </form>
      <ErrorBox error={action.error} />
      {count !== undefined && (
        <p>
          Input tokens: <strong data-testid="token-count">{count}</strong>
        </p>
      )}
    </section>
  );
}

function Moderation() {
  const [input, setInput] = useState("");
  const [model, setModel] = useState("omni-moderation-latest");
  const [result, setResult] = useState<any>();
  const action = useAction();
  async function run(e: Event) {
    e.preventDefault();
    setResult((await action.run(() => call("/moderations", { json: { model, input } })))?.results?.[0]);
  }
  return (
    <section aria-labelledby="moderation-title" class="card">
      <h2 id="moderation-title">Moderation</h2>
      <form class="stack" onSubmit={run}>
        <label>
          Model
          <input name="moderation_model" value={model} onInput={(e) => setModel(e.currentTarget.value)} />
        </label>
        <label>
          Text
          <textarea name="moderation_input" rows={4} value={input} onInput={(e) => setInput(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={action.busy}>
          Classify
        </button>
      </form>
      <ErrorBox error={action.error} />
      {result && (
        <>
          <p data-testid="flagged">{result.flagged ? "Flagged" : "Not flagged"}</p>
          <table>
            <TableHead columns={["Category", "Score"]} />
            <tbody>
              {Object.entries(result.category_scores as Record<string, number>).map(([k, v]) => (
                <tr key={k} class={result.categories[k] ? "flagged" : ""}>
                  <td>{k}</td>
                  <td>
                    <Bar value={Math.round(v * 1000)} max={1000} label={`Score of ${k}`} percent={false} /> {v.toFixed(4)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}

function cosine(a: number[], b: number[]): number {
  let dot = 0,
    na = 0,
    nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i]! * b[i]!;
    na += a[i]! * a[i]!;
    nb += b[i]! * b[i]!;
  }
  return dot / Math.sqrt(na * nb);
}

function Embeddings() {
  const [model, setModel] = useState("atrium-embed-use-lite");
  const [a, setA] = useState("");
  const [b, setB] = useState("");
  const [similarity, setSimilarity] = useState<number>();
  const action = useAction();
  async function run(e: Event) {
    e.preventDefault();
    const res = await action.run(() => call<{ data: Array<{ embedding: number[] }> }>("/embeddings", { json: { model, input: [a, b], encoding_format: "float" } }));
    setSimilarity(res ? cosine(res.data[0]!.embedding, res.data[1]!.embedding) : undefined);
  }
  return (
    <section aria-labelledby="embeddings-title" class="card">
      <h2 id="embeddings-title">Embeddings</h2>
      <form class="stack" onSubmit={run}>
        <label>
          Model
          <input name="embeddings_model" value={model} onInput={(e) => setModel(e.currentTarget.value)} />
        </label>
        <label>
          First text
          <input name="text_a" value={a} onInput={(e) => setA(e.currentTarget.value)} />
        </label>
        <label>
          Second text
          <input name="text_b" value={b} onInput={(e) => setB(e.currentTarget.value)} />
        </label>
        <button type="submit" disabled={action.busy || !a || !b}>
          Compare
        </button>
      </form>
      <ErrorBox error={action.error} />
      {similarity !== undefined && (
        <p>
          Cosine similarity: <strong data-testid="similarity">{similarity.toFixed(4)}</strong>
        </p>
      )}
    </section>
  );
}

export function Playgrounds() {
  return (
    <Page title="Playgrounds">
      <div class="cards">
        <Tokens />
        <Moderation />
        <Embeddings />
      </div>
    </Page>
  );
}

// A fake OpenAI-compatible service on a free loopback port: each JSON request is recorded and
// answered by `answer` (a status and a JSON body), for tests of Atrium's upstream providers.
import { createServer, type Server } from "node:http";

export interface UpstreamRequest {
  url: string;
  auth: string | undefined;
  body: any;
}

export interface FakeUpstream {
  /** The service's `/v1` base URL, as a provider's `base_url`. */
  baseUrl: string;
  /** Every request so far, oldest first. */
  seen: UpstreamRequest[];
  close(): Promise<void>;
}

export async function startFakeUpstream(answer: (req: UpstreamRequest) => { status?: number; json: unknown }): Promise<FakeUpstream> {
  const seen: UpstreamRequest[] = [];
  const server: Server = createServer((req, res) => {
    let raw = "";
    req.on("data", (d) => (raw += d));
    req.on("end", () => {
      const r: UpstreamRequest = { url: req.url!, auth: req.headers.authorization, body: JSON.parse(raw) };
      seen.push(r);
      const out = answer(r);
      res.writeHead(out.status ?? 200, { "content-type": "application/json" });
      res.end(JSON.stringify(out.json));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}/v1`,
    seen,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

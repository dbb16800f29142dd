// A REST client that hangs up while its request is being worked on (the fuzzer's hang detector
// does it at 2 s): the handler stops on its signal, and that is logged as the client's doing (an
// info line, status 499) — never as a 500 with an error line (issue 22: the fuzz run's only
// error-level log lines were these).
import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, expect, it } from "vitest";
import { API_KEY, startTestServer, type TestServer } from "../../shared/server.js";

let s: TestServer;
const logged: Array<{ level: number; msg?: string }> = [];
beforeAll(async () => {
  const sink = new Writable({
    write(chunk, _enc, cb) {
      for (const line of String(chunk).split("\n")) if (line) logged.push(JSON.parse(line));
      cb();
    },
  });
  s = await startTestServer({ logger: pino({ level: "info" }, sink) });
});
afterAll(async () => s?.stop());

const metricsFor = async (code: string) => {
  const text = await (await fetch(`${s.url}/metrics`)).text();
  return text.split("\n").filter((l) => l.startsWith("atrium_requests_total{") && l.includes('route="/v1/embeddings"') && l.includes(`code="${code}"`));
};

it("a client gone mid-request is an info line, not a 500 and an error", async () => {
  // Enough encoder work to still be running when the client leaves.
  const input = Array.from({ length: 256 }, (_, i) => `sentence ${i} `.repeat(120));
  const gone = fetch(`${s.baseURL}/embeddings`, {
    method: "POST",
    headers: { authorization: `Bearer ${API_KEY}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "atrium-embed-use-lite", input }),
    signal: AbortSignal.timeout(300),
  });
  await expect(gone).rejects.toThrow();
  const settled = () => logged.some((l) => l.level >= 50 || l.msg === "client closed the request before the answer");
  for (let i = 0; i < 300 && !settled(); i++) await new Promise((r) => setTimeout(r, 100));
  expect(logged.filter((l) => l.level >= 50)).toEqual([]);
  expect(logged.some((l) => l.msg === "client closed the request before the answer")).toBe(true);
  expect(await metricsFor("500")).toEqual([]);
}, 60_000);

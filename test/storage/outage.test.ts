// The shared engines going away while a server runs (docs/scale-out.md): with PostgreSQL or the S3
// store unreachable, requests fail at once with a 503 in the platform's error shape (not a hang,
// not a crash), nothing half-written is left, and the same requests succeed once the engine is
// back. The engines sit behind a TCP forwarder here, so "down" is every connection cut and new
// ones refused, as when the engine's host stops.
import { createServer, connect, type Server, type Socket } from "node:net";
import { afterAll, describe, expect, it } from "vitest";
import { API_KEY, startChildServer, tempDir, type ChildServer } from "../shared/server.js";
import { sdk, toFile } from "../shared/rest.js";
import { hasPostgres } from "../shared/postgres.js";
import { hasSwift } from "../shared/swift.js";
import { scaledEngines, type ScaledEngines } from "../shared/scaled.js";
import { sleep } from "../shared/poll.js";

/** A TCP forwarder to 127.0.0.1:target that can be taken down (cut and refuse) and brought back. */
class Forwarder {
  private server: Server | undefined;
  private readonly sockets = new Set<Socket>();
  port = 0;
  constructor(private readonly target: number) {}

  async up(): Promise<void> {
    const server = createServer((client) => {
      const upstream = connect(this.target, "127.0.0.1");
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on("close", () => this.sockets.delete(s));
        s.on("error", () => {});
      }
      client.pipe(upstream).pipe(client);
      client.on("close", () => upstream.destroy());
      upstream.on("close", () => client.destroy());
    });
    await new Promise<void>((resolve) => server.listen(this.port, "127.0.0.1", resolve));
    this.port = (server.address() as { port: number }).port;
    this.server = server;
  }

  async down(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise((r) => server.close(r));
  }
}

const ready = hasPostgres() && hasSwift();
let engines: ScaledEngines | undefined;
let child: ChildServer | undefined;
const forwarders: Forwarder[] = [];

afterAll(async () => {
  if (child && child.proc.exitCode === null) {
    child.proc.kill("SIGKILL");
    await child.exited;
  }
  for (const f of forwarders) await f.down();
  await engines?.dispose();
});

async function errorOf(res: Response) {
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: (await res.json()) as { error: { code: string; type: string; message: string } } };
}

describe.skipIf(!ready)("shared engines unreachable while serving", () => {
  it("PostgreSQL, then the S3 store, go away: clean 503s at once, nothing half-written, and back to normal after", async () => {
    engines = await scaledEngines();
    const pg = new Forwarder(Number(new URL(engines.databaseUrl).port));
    const s3 = new Forwarder(Number(new URL(engines.env.AWS_ENDPOINT_URL_S3!).port));
    forwarders.push(pg, s3);
    await pg.up();
    await s3.up();
    const db = new URL(engines.databaseUrl);
    db.port = String(pg.port);
    child = await startChildServer(tempDir("atrium-outage-"), { ...engines.env, ATRIUM_DATABASE_URL: db.toString(), AWS_ENDPOINT_URL_S3: `http://127.0.0.1:${s3.port}`, ATRIUM_API_KEY: API_KEY });
    const client = sdk(child.baseURL);
    const auth = { authorization: `Bearer ${API_KEY}` };
    const first = await client.files.create({ file: await toFile(Buffer.from("kept bytes"), "kept.txt"), purpose: "user_data" });

    // The database goes away: reads and writes answer 503 storage_unavailable at once.
    await pg.down();
    for (const [method, path] of [["GET", "/files"], ["GET", `/files/${first.id}`], ["DELETE", `/files/${first.id}`]] as const) {
      const t = Date.now();
      const err = await errorOf(await fetch(`${child.baseURL}${path}`, { method, headers: auth }));
      expect(err.status, `${method} ${path}`).toBe(503);
      expect(err.body.error).toMatchObject({ code: "storage_unavailable", type: "server_error" });
      expect(err.retryAfter).toBe("2");
      expect(Date.now() - t, "answered, not hung").toBeLessThan(15_000);
    }
    // Back: the same requests succeed, and the DELETE that failed deleted nothing.
    await pg.up();
    await expect.poll(async () => (await fetch(`${child!.baseURL}/files/${first.id}`, { headers: auth })).status, { timeout: 20_000, interval: 250 }).toBe(200);

    // The object store goes away: an upload and a download answer 503, and no File is left behind.
    const before = (await client.files.list()).data.length;
    await s3.down();
    const form = new FormData();
    form.append("purpose", "user_data");
    form.append("file", new Blob([Buffer.alloc(64 * 1024, 1)]), "lost.txt");
    const up = await errorOf(await fetch(`${child.baseURL}/files`, { method: "POST", headers: auth, body: form }));
    expect(up.status).toBe(503);
    expect(up.body.error.code).toBe("storage_unavailable");
    const down = await errorOf(await fetch(`${child.baseURL}/files/${first.id}/content`, { headers: auth }));
    expect(down.status).toBe(503);
    await s3.up();
    await sleep(200);
    expect((await client.files.list()).data.length).toBe(before);
    expect(Buffer.from(await (await client.files.content(first.id)).arrayBuffer()).toString()).toBe("kept bytes");
    expect(child.proc.exitCode, "the server kept running").toBeNull();
  }, 180_000);
});

// buildServer and listening are apart: a second listener serves the same app (routes, auth, hooks,
// errors) on its own port, and handlers see which listener a request came on through the
// connection facts in their context — over REST, Connect and gRPC alike.
import { rmSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pino from "pino";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcTransport } from "@connectrpc/connect-node";
import { ModelsService } from "../../gen/atrium/v1/models_pb.js";
import { configFromEnv } from "../../src/config.js";
import { startServer, type ExtraListener, type RunningServer } from "../../src/server.js";
import { connectionOf } from "../../src/transport/connection.js";
import type { ApiArea } from "../../src/services/area.js";
import { API_KEY, tempDir } from "../shared/server.js";
import { as } from "../shared/rpc.js";

// A probe standing in for the models area: ListModels answers with the listener it was called on.
const probe: ApiArea = {
  name: "probe",
  setup: () => ({
    services: [
      {
        desc: ModelsService,
        impl: {
          listModels: (_req: unknown, ctx: any) => ({ object: connectionOf(ctx)?.listener ?? "none", data: [] }),
          getModel: () => ({}),
          deleteModel: () => ({}),
        },
      },
    ],
  }),
};

let dir: string;
let server: RunningServer;
let extra: ExtraListener;

beforeAll(async () => {
  dir = tempDir();
  const cfg = configFromEnv({ ATRIUM_PORT: "0", ATRIUM_DATA_DIR: dir, ATRIUM_API_KEY: API_KEY });
  server = await startServer(cfg, { logger: pino({ level: "silent" }), areas: [probe] });
  extra = await server.addListener("second", { host: "127.0.0.1", port: 0 });
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const rest = (base: string, key = API_KEY) => fetch(`${base}/v1/models`, { headers: { authorization: `Bearer ${key}` } });

describe("a second listener", () => {
  it("serves REST with the same auth and errors, and handlers know which listener it was", async () => {
    expect(extra.port).not.toBe(server.port);
    expect((await (await rest(server.url)).json()).object).toBe("main");
    expect((await (await rest(extra.url)).json()).object).toBe("second");
    const denied = await rest(extra.url, "sk-wrong-key-000000000");
    expect(denied.status).toBe(401);
    expect((await denied.json()).error.code).toBe("invalid_api_key");
    const missing = await fetch(`${extra.url}/v1/nothing-here`);
    expect(missing.status).toBe(404);
  });

  it("serves Connect and gRPC with the same connection facts", async () => {
    for (const make of [createConnectTransport, createGrpcTransport]) {
      for (const [url, name] of [
        [server.url, "main"],
        [extra.url, "second"],
      ]) {
        const c = createClient(ModelsService, make({ baseUrl: url, httpVersion: "2" }));
        expect((await c.listModels({}, as(API_KEY))).object).toBe(name);
      }
    }
  });

  it("closes on its own, leaving the main listener serving", async () => {
    await extra.close();
    await expect(rest(extra.url)).rejects.toThrow();
    expect((await rest(server.url)).status).toBe(200);
  });
});

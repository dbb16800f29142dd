// Revoking keys and archiving projects through ATRIUM_CONFIG (`revoked: true`, `archived: true`),
// applied on reload; both are final, so an older file (another instance's, or a restart with it)
// never brings them back. The first start of several instances on one store is covered by
// test/scale-out.test.ts.
import OpenAI from "openai";
import { afterEach, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { configFromEnv } from "../../src/config.js";
import { areaConfigSections } from "../../src/services/index.js";
import { ADMIN_KEY, API_KEY, startTestServer, type TestServer } from "../shared/server.js";

const KEY_A = "sk-atrium-test-revocable-key-001";
const KEY_B = "sk-atrium-test-archivable-key-01";

const fileConfig = (o: { revoked?: boolean; archived?: boolean }) => ({
  organizations: [{ id: "org-default", projects: [{ id: "proj_default" }, { id: "proj_arch", ...(o.archived !== undefined && { archived: o.archived }) }] }],
  keys: [
    { key: KEY_A, organization: "org-default", projects: ["proj_default"], ...(o.revoked !== undefined && { revoked: o.revoked }) },
    { key: KEY_B, organization: "org-default", projects: ["proj_arch"] },
  ],
});

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function reload(s: TestServer, doc: object) {
  const path = join(s.dataDir, "atrium.json");
  writeFileSync(path, JSON.stringify(doc));
  const env = { ATRIUM_HOST: "127.0.0.1", ATRIUM_PORT: "0", ATRIUM_DATA_DIR: s.dataDir, ATRIUM_CONFIG: path, ATRIUM_API_KEY: API_KEY, ATRIUM_ADMIN_KEY: ADMIN_KEY };
  await s.reloadConfig(configFromEnv(env, areaConfigSections()));
}

async function status(s: TestServer, key: string, project?: string): Promise<{ status: number; code?: string }> {
  const client = new OpenAI({ apiKey: key, baseURL: s.baseURL, project: project ?? null, maxRetries: 0 });
  try {
    await client.models.list();
    return { status: 200 };
  } catch (e) {
    return { status: (e as { status: number }).status, code: (e as { code?: string }).code };
  }
}

/** Polls until `f` gives `want` (the key cache keeps an answer for a couple of seconds). */
async function eventually<T>(f: () => Promise<T>, want: T): Promise<T> {
  let last = await f();
  for (let i = 0; i < 100 && JSON.stringify(last) !== JSON.stringify(want); i++) {
    await new Promise((r) => setTimeout(r, 100));
    last = await f();
  }
  return last;
}

describe("revoking a key and archiving a project through the config", () => {
  it("a key with revoked: true is refused, and stays refused when a file without the flag is loaded", async () => {
    server = await startTestServer({ config: fileConfig({}) });
    expect(await status(server, KEY_A)).toEqual({ status: 200 });
    await reload(server, fileConfig({ revoked: true }));
    expect(await eventually(() => status(server!, KEY_A), { status: 401, code: "invalid_api_key" })).toEqual({ status: 401, code: "invalid_api_key" });
    await reload(server, fileConfig({ revoked: false }));
    await new Promise((r) => setTimeout(r, 2500)); // past the key cache's lifetime
    expect(await status(server, KEY_A)).toEqual({ status: 401, code: "invalid_api_key" });
    expect(await status(server, API_KEY)).toEqual({ status: 200 });
  });

  it("a key revoked in the file it is first loaded from never works", async () => {
    server = await startTestServer({ config: fileConfig({ revoked: true }) });
    expect(await status(server, KEY_A)).toEqual({ status: 401, code: "invalid_api_key" });
  });

  it("an archived project refuses its keys and an admin key selecting it; archiving is final", async () => {
    server = await startTestServer({ config: fileConfig({}) });
    expect(await status(server, KEY_B)).toEqual({ status: 200 });
    expect(await status(server, ADMIN_KEY, "proj_arch")).toEqual({ status: 200 });
    await reload(server, fileConfig({ archived: true }));
    const archived = { status: 401, code: "project_archived" };
    expect(await eventually(() => status(server!, KEY_B), archived)).toEqual(archived);
    expect(await eventually(() => status(server!, ADMIN_KEY, "proj_arch"), archived)).toEqual(archived);
    // The organization's other projects are untouched.
    expect(await status(server, ADMIN_KEY)).toEqual({ status: 200 });
    expect(await status(server, KEY_A)).toEqual({ status: 200 });
    await reload(server, fileConfig({ archived: false }));
    await new Promise((r) => setTimeout(r, 2500));
    expect(await status(server, KEY_B)).toEqual(archived);
  });
});

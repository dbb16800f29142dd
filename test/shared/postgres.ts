// PostgreSQL for tests: the server named by ATRIUM_TEST_DATABASE_URL when it is set (a machine that
// already runs one), otherwise a private throwaway cluster started here on a free port with
// fsync off (up in well under a second), one per test run (test/shared/per-run.ts), stopped by
// its PID when the run is over. Each caller gets databases of its own, so test files and servers
// never see each other's rows.
import { execFileSync } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { runCommand } from "./commands.js";
import { afterExit, onePerRun } from "./per-run.js";
import { freePort } from "./ports.js";

export const POSTGRES_INSTALL_HINT = "PostgreSQL 15 is not installed: `apt-get install -y postgresql-15` (.ci/run installs it), or set ATRIUM_TEST_DATABASE_URL";

export interface TestPostgres {
  /** A URL of the cluster's maintenance database (for CREATE/DROP DATABASE). */
  adminUrl: string;
  /** Creates an empty database and returns its URL. */
  newDatabase(prefix?: string): Promise<string>;
  /** Drops a database made by newDatabase (ends its sessions first). */
  dropDatabase(url: string): Promise<void>;
}

function binDir(): string | undefined {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).filter((v) => existsSync(join(root, v, "bin", "initdb"))).sort((a, b) => Number(b) - Number(a));
  return versions.length ? join(root, versions[0], "bin") : undefined;
}

/** true when tests can get a PostgreSQL: a given URL, or the server binaries for a private cluster. */
export const hasPostgres = (): boolean => Boolean(process.env.ATRIUM_TEST_DATABASE_URL) || binDir() !== undefined;

/** PostgreSQL refuses to run as root: as root, the cluster runs as the `postgres` user. */
function asServerUser(cmd: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [cmd, args];
  return ["runuser", ["-u", "postgres", "--", cmd, ...args]];
}

let started: Promise<TestPostgres> | undefined;

async function startPrivateCluster(owner: number): Promise<string> {
  const bin = binDir();
  if (!bin) throw new Error(POSTGRES_INSTALL_HINT);
  const dir = mkdtempSync(join(tmpdir(), "atrium-pg-"));
  const data = join(dir, "data");
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    chownSync(dir, uid, gid);
    chmodSync(dir, 0o700);
  }
  const [initCmd, initArgs] = asServerUser(join(bin, "initdb"), ["-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"]);
  const init = await runCommand(initCmd, initArgs);
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr || init.stdout}`);
  const port = await freePort();
  const settings = ["-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off", "-c", `port=${port}`, "-c", "listen_addresses=127.0.0.1", "-c", `unix_socket_directories=${dir}`, "-c", "max_connections=300", "-c", "shared_buffers=64MB"];
  const [ctlCmd, ctlArgs] = asServerUser(join(bin, "pg_ctl"), ["-D", data, "-w", "-t", "60", "-l", join(dir, "log"), "-o", settings.map((s) => (s === "-c" ? s : `'${s}'`)).join(" "), "start"]);
  const start = await runCommand(ctlCmd, ctlArgs);
  if (start.status !== 0) throw new Error(`pg_ctl start failed: ${start.stderr || start.stdout}\n${existsSync(join(dir, "log")) ? readFileSync(join(dir, "log"), "utf8") : ""}`);
  const pid = Number(readFileSync(join(data, "postmaster.pid"), "utf8").split("\n")[0]);
  // A fast shutdown by PID once the run is gone; then its folder goes.
  afterExit(owner, `kill -INT ${pid} 2>/dev/null; for i in $(seq 50); do kill -0 ${pid} 2>/dev/null || break; sleep 0.1; done; rm -rf '${dir}'`);
  return `postgres://postgres@127.0.0.1:${port}/postgres`;
}

/** The shared PostgreSQL of this test run (started on first use). */
export function testPostgres(): Promise<TestPostgres> {
  started ??= (async () => {
    const adminUrl = process.env.ATRIUM_TEST_DATABASE_URL || (await onePerRun("postgres", startPrivateCluster));
    let n = 0;
    const admin = async <T>(f: (c: pg.Client) => Promise<T>): Promise<T> => {
      const c = new pg.Client({ connectionString: adminUrl });
      await c.connect();
      try {
        return await f(c);
      } finally {
        await c.end();
      }
    };
    return {
      adminUrl,
      async newDatabase(prefix = "atrium_test") {
        const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${n++}`.toLowerCase().replace(/[^a-z0-9_]/g, "_");
        await admin((c) => c.query(`CREATE DATABASE "${name}" TEMPLATE template0`));
        const url = new URL(adminUrl);
        url.pathname = `/${name}`;
        return url.toString();
      },
      async dropDatabase(url: string) {
        const name = decodeURIComponent(new URL(url).pathname.slice(1));
        await admin((c) => c.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`));
      },
    };
  })();
  return started;
}

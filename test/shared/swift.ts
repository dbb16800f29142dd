// An S3-compatible object store for tests: OpenStack Swift with its s3api middleware, from Debian's
// packages (swift, swift-proxy, swift-object, swift-container, swift-account, memcached), started
// here privately on free ports in a temp folder: one proxy, one account, container and object
// server each on one device, tempauth for credentials (memcached holds its tokens). It behaves as
// S3 does where a fake would not (parts under 5 MiB refused, suffix ranges, UploadPartCopy).
// One instance per test run (test/shared/per-run.ts), stopped by PID when the run is over; each
// caller gets buckets of its own.
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { createConnection } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CreateBucketCommand, S3Client } from "@aws-sdk/client-s3";
import { runCommand } from "./commands.js";
import { waitReady } from "./poll.js";
import { afterExit, onePerRun } from "./per-run.js";
import { freePort } from "./ports.js";

export const SWIFT_INSTALL_HINT =
  "OpenStack Swift is not installed: `apt-get install -y swift swift-proxy swift-object swift-container swift-account memcached` (.ci/run installs them)";

const BINARIES = ["/usr/bin/swift-proxy-server", "/usr/bin/swift-account-server", "/usr/bin/swift-container-server", "/usr/bin/swift-object-server", "/usr/bin/swift-ring-builder"];

/** true when the Swift servers and memcached are installed. */
export const hasSwift = (): boolean =>
  BINARIES.every((b) => existsSync(b)) && spawnSync("memcached", ["-h"], { stdio: "ignore" }).status === 0 && existsSync("/etc/swift/swift.conf");

export interface TestSwift {
  /** The S3 endpoint (path-style addressing). */
  endpoint: string;
  accessKeyId: string;
  secretAccessKey: string;
  region: string;
  /** Creates an empty bucket and returns its name. */
  newBucket(prefix?: string): Promise<string>;
  /** The environment a server reads to reach `bucket` (ATRIUM_BLOB_URL and the AWS variables). */
  s3Env(bucket: string, prefix?: string): Record<string, string>;
  /** A client of the store, as the tests' own view of the bucket. */
  client(): S3Client;
}

const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const c = createConnection({ host: "127.0.0.1", port });
    c.once("connect", () => {
      c.destroy();
      resolve(true);
    });
    c.once("error", () => resolve(false));
  });

function serverConf(kind: string, port: number, dir: string): string {
  return `[DEFAULT]
bind_ip = 127.0.0.1
bind_port = ${port}
devices = ${join(dir, "node")}
mount_check = false
swift_dir = ${dir}
workers = 1
log_level = WARNING
${process.getuid?.() === 0 ? "user = swift" : ""}

[pipeline:main]
pipeline = ${kind}-server

[app:${kind}-server]
use = egg:swift#${kind}
`;
}

// workers = 1: with workers = 0, CreateBucket answers 500 although the bucket is made. The
// timeouts towards the storage servers are Swift's defaults ×10 (conn_timeout 0.5 s, node_timeout
// 10 s): with several test files at a time on two cores a storage server can take longer than
// 0.5 s to accept, and the proxy then answers as if the account or container were missing (404).
function proxyConf(port: number, memcachePort: number, dir: string): string {
  return `[DEFAULT]
bind_ip = 127.0.0.1
bind_port = ${port}
swift_dir = ${dir}
workers = 1
log_level = WARNING
${process.getuid?.() === 0 ? "user = swift" : ""}

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true
conn_timeout = 5
node_timeout = 100

[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:healthcheck]
use = egg:swift#healthcheck
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:cache]
use = egg:swift#memcache
memcache_servers = 127.0.0.1:${memcachePort}
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:s3api]
use = egg:swift#s3api
[filter:tempauth]
use = egg:swift#tempauth
user_test_tester = testing .admin
[filter:copy]
use = egg:swift#copy
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
`;
}

function chownTree(path: string, uid: number, gid: number): void {
  chownSync(path, uid, gid);
  if (statSync(path).isDirectory()) for (const e of readdirSync(path)) chownTree(join(path, e), uid, gid);
}

async function startSwift(owner: number): Promise<{ endpoint: string }> {
  if (!hasSwift()) throw new Error(SWIFT_INSTALL_HINT);
  const dir = mkdtempSync(join(tmpdir(), "atrium-swift-"));
  mkdirSync(join(dir, "node", "d1"), { recursive: true });
  const [account, container, object, proxy, memcache] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
  // The three rings are independent: built side by side.
  await Promise.all(
    ([["account", account], ["container", container], ["object", object]] as const).map(async ([kind, port]) => {
      const builder = join(dir, `${kind}.builder`);
      for (const args of [["create", "6", "1", "1"], ["add", `r1z1-127.0.0.1:${port}/d1`, "100"], ["rebalance"]]) {
        const r = await runCommand("/usr/bin/swift-ring-builder", [builder, ...args]);
        if (r.status !== 0 && !(args[0] === "rebalance" && r.status === 1)) throw new Error(`swift-ring-builder ${args.join(" ")}: ${r.stderr || r.stdout}`);
      }
      writeFileSync(join(dir, `${kind}-server.conf`), serverConf(kind, port, dir));
    }),
  );
  writeFileSync(join(dir, "proxy-server.conf"), proxyConf(proxy, memcache, dir));
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync("id", ["-u", "swift"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "swift"], { encoding: "utf8" }).trim());
    chownTree(dir, uid, gid);
  }
  // Each server in a process group of its own (they fork their workers), so one signal stops it all.
  const groups: number[] = [];
  const start = (cmd: string, args: string[]) => {
    const p = spawn(cmd, args, { detached: true, stdio: ["ignore", "ignore", "ignore"] });
    p.unref();
    groups.push(p.pid!);
  };
  start("memcached", ["-l", "127.0.0.1", "-p", String(memcache), "-U", "0", ...(process.getuid?.() === 0 ? ["-u", "nobody"] : [])]);
  for (const kind of ["account", "container", "object", "proxy"]) start(`/usr/bin/swift-${kind}-server`, [join(dir, `${kind}-server.conf`)]);
  // Every server's process group stopped once the run is gone; then its folder goes.
  afterExit(owner, `for g in ${groups.join(" ")}; do kill -TERM -$g 2>/dev/null; done; sleep 1; for g in ${groups.join(" ")}; do kill -KILL -$g 2>/dev/null; done; rm -rf '${dir}'`);
  // Python's start-up is slow on a busy machine: every port, then the proxy's health, within one minute.
  const deadline = Date.now() + 60_000;
  const left = () => Math.max(0, deadline - Date.now());
  for (const port of [memcache, account, container, object, proxy]) {
    await waitReady(() => listening(port), left(), () => `Swift did not start: port ${port} is not listening (folder ${dir})`);
  }
  const endpoint = `http://127.0.0.1:${proxy}`;
  const healthy = () => fetch(`${endpoint}/healthcheck`).then((r) => r.status === 200, () => false);
  await waitReady(healthy, left(), () => `Swift's proxy at ${endpoint} is not healthy`);
  // The first bucket also makes the account (account_autocreate); made here, before any test's
  // set-up, and again until it is there, so no test's first call depends on it.
  const admin = new S3Client({ endpoint, region: REGION, forcePathStyle: true, credentials: CREDENTIALS });
  let last: unknown;
  const made = () =>
    admin.send(new CreateBucketCommand({ Bucket: "atrium-warm-up" })).then(
      () => true,
      (e: unknown) => {
        last = e;
        return (e as Error).name === "BucketAlreadyOwnedByYou"; // an earlier try made it
      },
    );
  await waitReady(made, left(), () => `Swift at ${endpoint} does not create buckets: ${(last as Error).message}`, 200);
  admin.destroy();
  return { endpoint };
}

const CREDENTIALS = { accessKeyId: "test:tester", secretAccessKey: "testing" };
const REGION = "us-east-1";

let started: Promise<TestSwift> | undefined;

// The SDK is pinned to a release that supports Node 20 (as the server does, src/storage/s3-blobs.ts).
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= "true";

/** The shared Swift of this test run (started on first use, in ~3–7 s). */
export function testSwift(): Promise<TestSwift> {
  started ??= (async () => {
    const { endpoint } = await onePerRun("swift", startSwift);
    const client = () => new S3Client({ endpoint, region: REGION, forcePathStyle: true, credentials: CREDENTIALS });
    const admin = client();
    let n = 0;
    return {
      endpoint,
      region: REGION,
      ...CREDENTIALS,
      client,
      async newBucket(prefix = "atrium-test") {
        const name = `${prefix}-${process.pid}-${Date.now().toString(36)}-${n++}`.toLowerCase().replace(/[^a-z0-9-]/g, "-").slice(0, 63);
        await admin.send(new CreateBucketCommand({ Bucket: name }));
        return name;
      },
      s3Env(bucket: string, prefix?: string) {
        return {
          ATRIUM_BLOB_URL: `s3://${bucket}${prefix ? `/${prefix}` : ""}`,
          AWS_ENDPOINT_URL_S3: endpoint,
          AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
          AWS_REGION: REGION,
          ATRIUM_S3_FORCE_PATH_STYLE: "true",
        };
      },
    };
  })();
  return started;
}

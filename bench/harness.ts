// What the benches share: command-line options and, for the HTTP ones, the child processes to
// kill on exit, free ports, medians, and the load generator — one long-lived child
// (bench/load-worker.ts) pinned to core 1 while the servers under test run on core 0; jobs go in
// as JSON lines, results come back the same way.
import { spawn, type ChildProcess } from "node:child_process";
import net from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Every process a bench starts; killed when the bench exits, however it exits. */
export const children: ChildProcess[] = [];
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null) c.kill("SIGKILL");
});

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
  });
}

/** `--name value` from the command line, else `def`. */
export function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : def;
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const ROOT = path.resolve(fileURLToPath(new URL("..", import.meta.url)));

export class Loader {
  readonly proc: ChildProcess = spawn("taskset", ["-c", "1", process.execPath, "--import", "tsx", "bench/load-worker.ts"], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "inherit"],
  });
  private buf = "";
  private waiting: Array<(v: any) => void> = [];

  constructor() {
    children.push(this.proc);
    this.proc.stdout!.setEncoding("utf8");
    this.proc.stdout!.on("data", (d: string) => {
      this.buf += d;
      for (let i = this.buf.indexOf("\n"); i >= 0; i = this.buf.indexOf("\n")) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        this.waiting.shift()?.(JSON.parse(line));
      }
    });
  }

  run(job: object): Promise<any> {
    return new Promise((resolve, reject) => {
      this.waiting.push((v) => (v.error ? reject(new Error(v.error)) : resolve(v)));
      this.proc.stdin!.write(JSON.stringify(job) + "\n");
    });
  }

  close() {
    this.proc.stdin!.end();
  }
}

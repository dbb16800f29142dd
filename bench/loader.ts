// The HTTP benches' load generator: one long-lived child (bench/load-worker.ts) pinned to core 1
// while the servers under test run on core 0; jobs go in as JSON lines, results come back the same way.
import { spawn, type ChildProcess } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";

const ROOT = path.resolve(fileURLToPath(new URL("..", import.meta.url)));

export class Loader {
  readonly proc: ChildProcess = spawn("taskset", ["-c", "1", process.execPath, "--import", "tsx", "bench/load-worker.ts"], {
    cwd: ROOT,
    stdio: ["pipe", "pipe", "inherit"],
  });
  private buf = "";
  private waiting: Array<(v: any) => void> = [];

  /** `children`: the bench's list of processes to kill on exit. */
  constructor(children: ChildProcess[]) {
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

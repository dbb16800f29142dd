// The python grader's sandbox: grade(sample, item) runs in a child process of /usr/bin/python3,
// never in the server. What holds it, from strongest to weakest:
//   - wall-clock timeout: the whole process group is SIGKILLed when it passes;
//   - memory: RLIMIT_AS set by the harness before any grader code runs (a MemoryError, or death);
//   - network: a fresh network namespace (`unshare -n` as root, `unshare -rn` otherwise) when the
//     kernel allows it — then there is no interface but a downed loopback, enforced by the kernel.
//     Where it does not, only the audit hook below refuses sockets (bypassable by native code);
//   - identity: run as `nobody` (setpriv) when the server runs as root, so file permissions stop
//     writes to anything that is not world-writable;
//   - files, processes, ctypes: a Python audit hook (PEP 578) refuses writes outside the run's
//     temp dir, subprocesses, fork, exec and ctypes. Audit hooks are a guard, not a security
//     boundary: code that reaches native memory could get around them;
//   - output: the result channel and the grader's prints are capped; past the cap it is killed.
// Runs are bounded (`concurrency` processes at once); the rest wait their turn.
import { spawn, spawnSync } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { PYTHON_HARNESS } from "./python-harness.js";

export interface PythonSandboxOptions {
  python?: string;
  timeoutMs?: number;
  memoryBytes?: number;
  /** Largest file the grader may write in its temp dir. */
  fileBytes?: number;
  /** Cap on what the grader prints (stdout + stderr) and on its result. */
  outputBytes?: number;
  concurrency?: number;
}

export type PythonOutcome =
  | { ok: true; reward: number; output: string }
  | { ok: false; kind: "syntax" | "runtime" | "memory" | "timeout" | "output_limit" | "server"; details: string; output: string };

interface Isolation {
  prefix: string[];
  /** For the README and logs: how the network is cut. */
  network: "namespace" | "audit-hook";
}

let isolation: Isolation | undefined;

/** Probes once what this machine allows: a network namespace, dropping to nobody. */
export function sandboxIsolation(): Isolation {
  if (isolation) return isolation;
  const works = (cmd: string[]) => spawnSync(cmd[0]!, cmd.slice(1), { stdio: "ignore", timeout: 5000 }).status === 0;
  const root = process.getuid?.() === 0;
  const net = root && works(["unshare", "-n", "true"]) ? ["unshare", "-n"] : works(["unshare", "-rn", "true"]) ? ["unshare", "-rn"] : [];
  const drop = root && works(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "true"]) ? ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] : [];
  isolation = { prefix: [...net, ...drop], network: net.length ? "namespace" : "audit-hook" };
  return isolation;
}

export class PythonSandbox {
  private readonly opts: Required<PythonSandboxOptions>;
  private running = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(opts: PythonSandboxOptions = {}) {
    this.opts = {
      python: "/usr/bin/python3",
      timeoutMs: 30_000,
      memoryBytes: 512 * 1024 * 1024,
      fileBytes: 16 * 1024 * 1024,
      outputBytes: 256 * 1024,
      concurrency: 2,
      ...opts,
    };
  }

  async run(source: string, sample: unknown, item: unknown, signal?: AbortSignal): Promise<PythonOutcome> {
    if (this.running >= this.opts.concurrency) await new Promise<void>((r) => this.waiting.push(r));
    this.running++;
    try {
      return await this.runOne(source, sample, item, signal);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  private runOne(source: string, sample: unknown, item: unknown, signal?: AbortSignal): Promise<PythonOutcome> {
    const { prefix } = sandboxIsolation();
    const dir = mkdtempSync(join(tmpdir(), "atrium-grader-"));
    if (prefix.includes("setpriv")) chownSync(dir, 65534, 65534);
    const argv = [...prefix, this.opts.python, "-I", "-S", "-c", PYTHON_HARNESS, String(this.opts.memoryBytes), String(this.opts.fileBytes)];
    const child = spawn(argv[0]!, argv.slice(1), {
      cwd: dir,
      env: { PATH: "/usr/bin:/bin", LANG: "C.UTF-8", PYTHONDONTWRITEBYTECODE: "1" },
      stdio: ["pipe", "pipe", "pipe", "pipe"],
      detached: true,
    });
    return new Promise<PythonOutcome>((resolve) => {
      let output = "";
      let result = "";
      let ended: PythonOutcome | undefined;
      const kill = () => {
        try {
          process.kill(-child.pid!, "SIGKILL");
        } catch {
          child.kill("SIGKILL");
        }
      };
      const fail = (kind: Exclude<PythonOutcome, { ok: true }>["kind"], details: string) => {
        if (!ended) ended = { ok: false, kind, details, output };
        kill();
      };
      const timer = setTimeout(() => fail("timeout", `The grader did not finish within ${this.opts.timeoutMs / 1000} s and was stopped.`), this.opts.timeoutMs);
      const onAbort = () => fail("server", "The grading was cancelled.");
      signal?.addEventListener("abort", onAbort, { once: true });
      const collect = (chunk: Buffer) => {
        if (output.length < this.opts.outputBytes) output += chunk.toString("utf8").slice(0, this.opts.outputBytes - output.length);
      };
      child.stdout!.on("data", collect);
      child.stderr!.on("data", collect);
      (child.stdio[3] as NodeJS.ReadableStream).on("data", (chunk: Buffer) => {
        result += chunk.toString("utf8");
        if (result.length > this.opts.outputBytes) fail("output_limit", `The grader's result is larger than ${this.opts.outputBytes} bytes.`);
      });
      child.stdin!.on("error", () => {}); // the child may exit before reading everything
      child.stdin!.end(JSON.stringify({ source, sample, item }));
      child.on("error", (e) => fail("server", `Could not start ${this.opts.python}: ${e.message}`));
      child.on("close", (code, sig) => {
        clearTimeout(timer);
        signal?.removeEventListener("abort", onAbort);
        rmSync(dir, { recursive: true, force: true });
        if (ended) return resolve(ended);
        let parsed: { reward?: number; error?: string; details?: string } | undefined;
        try {
          parsed = JSON.parse(result);
        } catch {
          parsed = undefined;
        }
        if (parsed && typeof parsed.reward === "number") return resolve({ ok: true, reward: parsed.reward, output });
        if (parsed?.error) {
          const kind = parsed.error === "syntax" ? "syntax" : parsed.error === "memory" ? "memory" : "runtime";
          return resolve({ ok: false, kind, details: parsed.details ?? "", output });
        }
        // Died without answering: killed by its memory limit, or exited on its own.
        const why = sig ? `was killed by ${sig} (memory limit ${Math.round(this.opts.memoryBytes / 2 ** 20)} MiB?)` : `exited with code ${code} without a result`;
        resolve({ ok: false, kind: "runtime", details: `The grader ${why}. ${output.slice(-2000)}`.trim(), output });
      });
    });
  }
}

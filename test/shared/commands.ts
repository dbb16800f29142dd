// A command run to its end without blocking the event loop (spawnSync would: the set-up of one
// engine would then stall the waits and timers of the others started beside it).
import { spawn } from "node:child_process";

export interface CommandResult {
  /** The exit status; null when a signal ended it. */
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `cmd` with `args` and resolves when it exits; rejects only when it cannot be started. */
export function runCommand(cmd: string, args: string[]): Promise<CommandResult> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    p.stdout.setEncoding("utf8").on("data", (d: string) => (stdout += d));
    p.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    p.once("error", reject);
    p.once("close", (status) => resolve({ status, stdout, stderr }));
  });
}

// A free TCP port on 127.0.0.1, for the servers tests and benches start themselves. Nothing here
// imports vitest: bench/ uses it too.
import net from "node:net";

/** A port the system just handed out for 127.0.0.1 (bound to port 0, read, released). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

/**
 * Asks `ready` every `intervalMs` until it says yes. Gives up with `failure()` only when a check
 * begun after `ms` still says no: a check begun earlier does not count, since a busy machine (or a
 * blocked event loop) may have kept the server from answering it.
 */
export async function waitReady(ready: () => Promise<boolean>, ms: number, failure: () => string, intervalMs = 100): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const begun = Date.now();
    if (await ready()) return;
    if (begun > deadline) throw new Error(failure());
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

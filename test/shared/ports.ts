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

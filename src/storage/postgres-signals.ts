// Signals over PostgreSQL's LISTEN/NOTIFY (see signals.ts). Its own module, loaded only with
// ATRIUM_DATABASE_URL, so the embedded default never loads the pg driver.
import pg from "pg";
import { LocalSignals, type Signals } from "./signals.js";

/** The NOTIFY channel; a payload is "<topic>\n<message>". */
export const SIGNALS_CHANNEL = "atrium_signals";
const RECONNECT_MS = 1000;

/** Signals over PostgreSQL's LISTEN/NOTIFY on one dedicated connection, reconnected when it drops. */
export class PostgresSignals implements Signals {
  private readonly local = new LocalSignals();
  private client: pg.Client | undefined;
  private closed = false;
  private retry: NodeJS.Timeout | undefined;
  private pending: string[] = [];
  private sending = false;

  private constructor(
    private readonly url: string,
    private readonly onError: (err: Error) => void,
  ) {}

  /** Connects and listens; fails (as start-up should) when the database cannot be reached. */
  static async open(url: string, onError: (err: Error) => void = () => {}): Promise<PostgresSignals> {
    const s = new PostgresSignals(url, onError);
    await s.connect();
    return s;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: "atrium signals" });
    client.on("notification", (n) => {
      if (n.channel !== SIGNALS_CHANNEL || !n.payload) return;
      const at = n.payload.indexOf("\n");
      if (at > 0) this.local.publish(n.payload.slice(0, at), n.payload.slice(at + 1));
    });
    client.on("error", (err) => this.lost(client, err));
    client.on("end", () => this.lost(client, new Error("the signals connection ended")));
    await client.connect();
    await client.query(`LISTEN ${SIGNALS_CHANNEL}`);
    this.client = client;
  }

  private lost(client: pg.Client, err: Error) {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    this.onError(err);
    client.end().catch(() => {});
    const again = () => {
      this.retry = undefined;
      if (this.closed) return;
      this.connect().catch((e) => {
        this.onError(e as Error);
        this.retry = setTimeout(again, RECONNECT_MS).unref();
      });
    };
    this.retry = setTimeout(again, RECONNECT_MS).unref();
  }

  publish(topic: string, message: string): void {
    if (!this.client) return; // reconnecting: the bounded delay applies
    this.pending.push(`${topic}\n${message}`);
    if (!this.sending) void this.send();
  }

  /**
   * One query at a time on the connection (pg queues a second one only with a deprecation, and
   * pg 9 refuses it): the signals published meanwhile go out together in the next statement.
   * PostgreSQL delivers one of identical payloads sent in one transaction, which for hints is the same.
   */
  private async send(): Promise<void> {
    this.sending = true;
    try {
      while (this.pending.length > 0) {
        const payloads = this.pending.splice(0);
        const client = this.client;
        if (!client) return;
        await client.query("SELECT pg_notify($1, p) FROM unnest($2::text[]) AS p", [SIGNALS_CHANNEL, payloads]).catch((e) => this.onError(e as Error));
      }
    } finally {
      this.sending = false;
    }
  }

  on(topic: string, handler: (message: string) => void): void {
    this.local.on(topic, handler);
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = undefined;
    await this.local.close();
    await client?.end().catch(() => {});
  }
}

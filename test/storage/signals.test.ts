// Signals between instances over PostgreSQL LISTEN/NOTIFY (src/storage/signals.ts): every
// instance on the database hears each signal, the sender included; a listener whose connection
// is cut reconnects and hears the signals sent after that.
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresSignals } from "../../src/storage/postgres-signals.js";
import { testPostgres } from "../shared/postgres.js";

const opened: PostgresSignals[] = [];
const databases: string[] = [];
afterAll(async () => {
  for (const s of opened) await s.close();
  const pgs = await testPostgres();
  for (const url of databases) await pgs.dropDatabase(url);
});

async function database(): Promise<string> {
  const url = await (await testPostgres()).newDatabase("atrium_signals");
  databases.push(url);
  return url;
}

async function open(url: string): Promise<PostgresSignals> {
  const s = await PostgresSignals.open(url);
  opened.push(s);
  return s;
}

/** The messages of `topic` heard by `s`, and a wait for the next one matching. */
function hear(s: PostgresSignals, topic: string) {
  const heard: string[] = [];
  const waiters: Array<{ want: string; resolve: () => void }> = [];
  s.on(topic, (m) => {
    heard.push(m);
    for (const w of waiters.splice(0)) {
      if (w.want === m) w.resolve();
      else waiters.push(w);
    }
  });
  return {
    heard,
    next: (want: string) => (heard.includes(want) ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ want, resolve }))),
  };
}

describe("PostgreSQL signals", () => {
  it("a signal reaches every instance on the database, the sender too, and no other topic", async () => {
    const url = await database();
    const [a, b] = [await open(url), await open(url)];
    const onA = hear(a, "auth.changed");
    const onB = hear(b, "auth.changed");
    const other = hear(b, "other.topic");
    a.publish("auth.changed", "key:abc");
    await Promise.all([onA.next("key:abc"), onB.next("key:abc")]);
    expect(onB.heard).toEqual(["key:abc"]);
    expect(other.heard).toEqual([]);
  });

  it("a burst published in one tick arrives whole and in order, one query at a time on the connection (no pg deprecation)", async () => {
    const url = await database();
    const [a, b] = [await open(url), await open(url)];
    const onB = hear(b, "burst");
    const warnings: string[] = [];
    const onWarning = (w: Error) => warnings.push(w.message);
    process.on("warning", onWarning);
    try {
      const sent = Array.from({ length: 200 }, (_, i) => `m${i}`);
      for (const m of sent) a.publish("burst", m);
      await onB.next("m199");
      // Then a second burst while nothing is in flight.
      a.publish("burst", "late");
      await onB.next("late");
      expect(onB.heard).toEqual([...sent, "late"]);
    } finally {
      process.off("warning", onWarning);
    }
    expect(warnings.filter((w) => w.includes("already executing a query"))).toEqual([]);
  });

  it("instances on another database hear nothing", async () => {
    const [a, c] = [await open(await database()), await open(await database())];
    const onC = hear(c, "t");
    const onA = hear(a, "t");
    a.publish("t", "only-here");
    await onA.next("only-here");
    // C's own signal comes after anything that could have reached it first.
    c.publish("t", "c-own");
    await onC.next("c-own");
    expect(onC.heard).toEqual(["c-own"]);
  });

  it("a listener whose connection is terminated reconnects and hears later signals", async () => {
    const url = await database();
    const [a, b] = [await open(url), await open(url)];
    const onB = hear(b, "t");
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      const killed = await admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'atrium signals' AND datname = current_database()");
      expect(killed.rowCount).toBe(2);
    } finally {
      await admin.end();
    }
    // Sent until heard: while reconnecting, a signal is lost (the bounded delay applies instead).
    let i = 0;
    const sending = setInterval(() => a.publish("t", `after-${i++}`), 100);
    try {
      await new Promise<void>((resolve) => b.on("t", () => resolve()));
    } finally {
      clearInterval(sending);
    }
    expect(onB.heard.length).toBeGreaterThan(0);
  });
});

// Long synchronous-looking work (a batch's 10,000 token counts, a 50,000-line validation) runs as
// chains of already-resolved promises, which never give the event loop a turn: measured, a
// 50,000-line input_tokens batch held it for 0.5 s. A TurnTaker hands the loop a turn (one
// setImmediate) once `everyMs` of work has gone by. Concurrent chains share one: while a turn is
// due, each of them waits on the same promise, so the microtask queue empties and I/O runs.
export class TurnTaker {
  private due: Promise<void> | null = null;
  private since = Date.now();

  constructor(private readonly everyMs = 10) {}

  /** A promise to await when a turn is due (or under way), else null: `const t = turns.check(); if (t) await t;`. */
  check(): Promise<void> | null {
    if (this.due) return this.due;
    if (Date.now() - this.since < this.everyMs) return null;
    this.due = new Promise<void>((resolve) =>
      setImmediate(() => {
        this.due = null;
        this.since = Date.now();
        resolve();
      }),
    );
    return this.due;
  }
}

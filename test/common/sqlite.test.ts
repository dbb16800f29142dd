import { readFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { BOUND_LIMIT } from "../../src/common/sqlite.js";
import { filesUnder } from "../shared/rest.js";

const SRC = join(import.meta.dirname, "../../src");

describe("BOUND_LIMIT", () => {
  it("limits as LIMIT does, for every bound value", () => {
    const db = new Database(":memory:");
    db.exec("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1), (2), (3), (4), (5)");
    const st = db.prepare(`SELECT n FROM t ORDER BY n ${BOUND_LIMIT}`).pluck();
    expect(st.all(2)).toEqual([1, 2]);
    expect(st.all(0)).toEqual([]);
    expect(st.all(10)).toEqual([1, 2, 3, 4, 5]);
    db.close();
  });

  it("is what the SQLite stores use: no statement outside the PostgreSQL engines binds a bare LIMIT ?", () => {
    const bare = filesUnder(SRC)
      .filter((f) => f.endsWith(".ts") && !f.split("/").includes("postgres") && f !== "common/sqlite.ts")
      .filter((f) => /LIMIT \?/.test(readFileSync(join(SRC, f), "utf8")));
    expect(bare).toEqual([]);
  });
});

// Running totals the record store keeps per project (types.ts, RecordTotal): database triggers on
// `records` add a record's field on insert, subtract it on delete and apply the difference on an
// update, inside the statement that changes the row. So a total moves exactly when a row does —
// a delete of a record already gone or a batch rolled back changes nothing — and a `cap` op read
// after the batch's own writes sees every committed writer's bytes: on PostgreSQL the trigger's
// upsert holds the total's row lock until commit, so writers of one project's total queue there.
import type { Migration } from "./sqlite-migrations.js";
import type { RecordTotal } from "./types.js";

/** The table of totals, for both dialects (a core migration). */
export const RECORD_TOTALS_MIGRATION: Migration = {
  id: "storage/0002_record_totals",
  sql: `
    CREATE TABLE record_totals (
      project_id TEXT    NOT NULL,
      name       TEXT    NOT NULL,
      total      INTEGER NOT NULL DEFAULT 0,
      PRIMARY KEY (project_id, name)
    ) WITHOUT ROWID;
  `,
  postgres: `
    CREATE TABLE record_totals (
      project_id TEXT   NOT NULL,
      name       TEXT   NOT NULL,
      total      BIGINT NOT NULL DEFAULT 0,
      PRIMARY KEY (project_id, name)
    );
  `,
};

const literal = (s: string) => `'${s.replace(/'/g, "''")}'`;

/**
 * The migration `id` that declares total `t`: its triggers, and the total of the records already
 * stored (counted under the write lock the trigger creation takes, so no write slips between).
 */
export function recordTotalMigration(id: string, t: RecordTotal): Migration {
  // The name becomes part of trigger and function names; the field a JSON key.
  if (!/^[a-z][a-z0-9_]*$/.test(t.name)) throw new RangeError(`invalid total name ${t.name}`);
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(t.field)) throw new RangeError(`invalid field name ${t.field}`);
  const kind = literal(t.kind);
  const name = literal(t.name);
  const path = literal(`$.${t.field}`);
  const key = literal(t.field);
  // A value that is not a JSON number counts 0, as for Collection.sum().
  const sqliteNum = (row: string) => `COALESCE(CASE WHEN json_type(${row}.data, ${path}) IN ('integer', 'real') THEN json_extract(${row}.data, ${path}) END, 0)`;
  const sqliteAdd = (project: string, delta: string) =>
    `INSERT INTO record_totals (project_id, name, total) VALUES (${project}, ${name}, ${delta})
       ON CONFLICT (project_id, name) DO UPDATE SET total = total + excluded.total;`;
  const pgNum = (data: string) => `CASE WHEN json_typeof(${data}::json -> ${key}) = 'number' THEN (${data}::json ->> ${key})::numeric ELSE 0 END`;
  const fn = `record_total_${t.name}`;
  return {
    id,
    sql: `
      CREATE TRIGGER ${fn}_insert AFTER INSERT ON records WHEN NEW.kind = ${kind}
      BEGIN ${sqliteAdd("NEW.project_id", sqliteNum("NEW"))} END;
      CREATE TRIGGER ${fn}_delete AFTER DELETE ON records WHEN OLD.kind = ${kind}
      BEGIN ${sqliteAdd("OLD.project_id", `-${sqliteNum("OLD")}`)} END;
      CREATE TRIGGER ${fn}_update AFTER UPDATE OF data ON records WHEN NEW.kind = ${kind} AND OLD.data IS NOT NEW.data
      BEGIN ${sqliteAdd("NEW.project_id", `${sqliteNum("NEW")} - ${sqliteNum("OLD")}`)} END;
      INSERT INTO record_totals (project_id, name, total)
        SELECT project_id, ${name}, SUM(${sqliteNum("records")}) FROM records WHERE kind = ${kind} GROUP BY project_id
        ON CONFLICT (project_id, name) DO UPDATE SET total = excluded.total;
    `,
    postgres: `
      CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $fn$
      DECLARE
        delta numeric := 0;
        project text;
      BEGIN
        IF TG_OP <> 'DELETE' THEN delta := delta + ${pgNum("NEW.data")}; project := NEW.project_id; END IF;
        IF TG_OP <> 'INSERT' THEN delta := delta - ${pgNum("OLD.data")}; project := OLD.project_id; END IF;
        IF delta <> 0 THEN
          INSERT INTO record_totals (project_id, name, total) VALUES (project, ${name}, delta::bigint)
            ON CONFLICT (project_id, name) DO UPDATE SET total = record_totals.total + EXCLUDED.total;
        END IF;
        RETURN NULL;
      END $fn$;
      CREATE TRIGGER ${fn}_insert AFTER INSERT ON records FOR EACH ROW WHEN (NEW.kind = ${kind}) EXECUTE FUNCTION ${fn}();
      CREATE TRIGGER ${fn}_delete AFTER DELETE ON records FOR EACH ROW WHEN (OLD.kind = ${kind}) EXECUTE FUNCTION ${fn}();
      CREATE TRIGGER ${fn}_update AFTER UPDATE ON records FOR EACH ROW
        WHEN (NEW.kind = ${kind} AND OLD.data IS DISTINCT FROM NEW.data) EXECUTE FUNCTION ${fn}();
      INSERT INTO record_totals (project_id, name, total)
        SELECT project_id, ${name}, SUM(${pgNum("data")})::bigint FROM records WHERE kind = ${kind} GROUP BY project_id
        ON CONFLICT (project_id, name) DO UPDATE SET total = EXCLUDED.total;
    `,
  };
}

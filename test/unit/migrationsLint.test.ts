/**
 * Migrations from 0035 on never drop a user's objects: no `CASCADE` (which drops whatever depends
 * on what is dropped, a user's view reading a straggler view included). A view is replaced in place
 * (CREATE OR REPLACE VIEW, columns appended); a plain DROP fails, and migrate names what depends on
 * it (src/db/migrate.ts DependentObjectsError). A foreign key's `ON DELETE CASCADE` deletes rows,
 * not objects, and stays allowed.
 */
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { MIGRATIONS_DIR } from "../../src/db/migrate.js";

/** The first migration the rule holds for. */
const FIRST_CHECKED = 35;

/** `sql` without its comments (`-- …` to the end of the line, `/* … *\/`); string literals stay (dynamic SQL: `EXECUTE format('DROP … CASCADE')`). */
function withoutComments(sql: string): string {
  return sql.replace(/--[^\n]*|\/\*[\s\S]*?\*\//g, " ");
}

/** The CASCADEs of `sql` that drop objects: every `CASCADE` outside comments but a foreign key's `ON DELETE` / `ON UPDATE CASCADE`. */
function droppingCascades(sql: string): string[] {
  const code = withoutComments(sql);
  return [...code.matchAll(/(?:\bON\s+(?:DELETE|UPDATE)\s+)?\bCASCADE\b/gi)]
    .map((m) => m[0])
    .filter((m) => !/^ON\s/i.test(m));
}

describe("migrations never drop a user's objects", () => {
  it("finds a DROP … CASCADE, a TRUNCATE … CASCADE and one in dynamic SQL, not a foreign key's ON DELETE CASCADE or a comment", () => {
    expect(droppingCascades("DROP VIEW straggler.x CASCADE;")).toEqual(["CASCADE"]);
    expect(droppingCascades("truncate straggler.t cascade")).toEqual(["cascade"]);
    expect(droppingCascades("EXECUTE format('DROP VIEW %I CASCADE', v);")).toEqual(["CASCADE"]);
    expect(droppingCascades("FOREIGN KEY (a) REFERENCES t (a) ON DELETE CASCADE ON UPDATE CASCADE")).toEqual([]);
    expect(droppingCascades("-- never DROP … CASCADE\n/* nor CASCADE */ SELECT 1;")).toEqual([]);
  });

  it(`no migration from ${FIRST_CHECKED} on contains a CASCADE that drops objects`, () => {
    const files = readdirSync(MIGRATIONS_DIR)
      .filter((f) => /^\d{4}_.*\.sql$/.test(f) && Number(f.slice(0, 4)) >= FIRST_CHECKED)
      .sort();
    expect(files[0]).toBe("0035_read_model_docs.sql");
    const offenders = files.filter(
      (f) => droppingCascades(readFileSync(path.join(MIGRATIONS_DIR, f), "utf8")).length > 0,
    );
    expect(offenders).toEqual([]);
  });

  it("the rule would have caught migration 0011's DROP VIEW … CASCADE", () => {
    expect(droppingCascades(readFileSync(path.join(MIGRATIONS_DIR, "0011_microsecond_instants.sql"), "utf8"))).toEqual([
      "CASCADE",
    ]);
  });
});

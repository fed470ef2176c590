/**
 * Parameters written into SQL text (src/db/inlineParams.ts), used where
 * several statements go in one round trip (group commit): each value comes
 * back from PostgreSQL exactly as given, whatever its characters.
 */
import { describe, expect, it } from "vitest";
import { inlineParams, sqlLiteral } from "../../src/db/inlineParams.js";
import { useTestDatabase } from "../helpers/db.js";

const getDb = useTestDatabase();

describe("inlineParams", () => {
  it("writes strings, numbers, booleans, null and arrays as literals", () => {
    expect([
      sqlLiteral("it's"),
      sqlLiteral("back\\slash"),
      sqlLiteral(42),
      sqlLiteral(-1.5),
      sqlLiteral(true),
      sqlLiteral(null),
      sqlLiteral(["a", null]),
      sqlLiteral([]),
    ]).toEqual(["'it''s'", " E'back\\\\slash'", "42", "-1.5", "TRUE", "NULL", "ARRAY['a', NULL]", "ARRAY[]"]);
    expect(inlineParams("SELECT $1, $2::text[], $10", ["x", ["y"], 3, 4, 5, 6, 7, 8, 9, 10])).toBe(
      "SELECT 'x', ARRAY['y']::text[], 10",
    );
  });

  it("refuses what it cannot write, and a $n without a value", () => {
    expect(() => sqlLiteral(undefined)).toThrow("sqlLiteral: cannot write undefined undefined as an SQL literal");
    expect(() => sqlLiteral(Number.NaN)).toThrow("sqlLiteral: cannot write number NaN as an SQL literal");
    expect(() => sqlLiteral({ a: 1 })).toThrow("sqlLiteral: cannot write object [object Object] as an SQL literal");
    expect(() => inlineParams("SELECT $1, $2", ["x"])).toThrow("inlineParams: no value for $2");
  });

  it("every value comes back from the server as it was given, in several statements sent as one query", async () => {
    const { pool } = await getDb();
    const hostile = [
      "it's",
      "back\\slash",
      "\\'; DROP TABLE straggler.bronze_events; --",
      "line\nbreak\ttab",
      "é 𝄞 \u2028",
      "$1 $$ $tag$",
      "",
    ];
    const values = [hostile, [1, -2, 2 ** 30], [JSON.stringify({ DUPLICATE: 2, "it's": "\\" }), "{}"], null, 12345];
    const sql = inlineParams(
      "SELECT $1::text[] AS texts, $2::int[] AS numbers; SELECT $3::jsonb[] AS docs, $4::text AS nothing, $5::int AS n, $1::text[] = ARRAY[]::text[] AS empty",
      values,
    );
    const results = (await pool.query(sql)) as unknown as { rows: Record<string, unknown>[] }[];
    expect(results.map((r) => r.rows)).toEqual([
      [{ texts: hostile, numbers: [1, -2, 2 ** 30] }],
      [{ docs: [{ DUPLICATE: 2, "it's": "\\" }, {}], nothing: null, n: 12345, empty: false }],
    ]);
    expect((await pool.query(inlineParams("SELECT $1::text[] AS e", [[]]))).rows).toEqual([{ e: [] }]);
    expect((await pool.query("SELECT to_regclass('straggler.bronze_events') IS NOT NULL AS still")).rows).toEqual([
      { still: true },
    ]);
  });
});

/**
 * Parameters written into SQL text as literals, so that several statements
 * go to the server in one simple-protocol query: one round trip, where the
 * extended protocol (`$n` parameters) takes one statement per exchange.
 * Used where round trips are the cost (group commit: src/ingest/groupCommit.ts).
 */
import pg from "pg";

/**
 * One value as an SQL literal: a string escaped (`pg.escapeLiteral`, E'…' when it holds a backslash),
 * a safe integer or finite number, a boolean, null, or an array of those as `ARRAY[…]` (cast it in the
 * statement: `$3::text[]`; an empty array needs that cast).
 * @throws Error for any other value (undefined, NaN, an object…)
 */
export function sqlLiteral(v: unknown): string {
  if (v === null) return "NULL";
  if (typeof v === "string") return pg.escapeLiteral(v);
  if (typeof v === "number" && Number.isFinite(v)) return String(v);
  if (typeof v === "boolean") return v ? "TRUE" : "FALSE";
  if (Array.isArray(v)) return `ARRAY[${v.map(sqlLiteral).join(", ")}]`;
  throw new Error(`sqlLiteral: cannot write ${typeof v} ${String(v).slice(0, 40)} as an SQL literal`);
}

/**
 * `sql` with each `$n` replaced by `sqlLiteral(values[n - 1])`. The text must hold no `$` other than
 * its parameters (no dollar quoting).
 * @throws Error when a `$n` has no value
 */
export function inlineParams(sql: string, values: readonly unknown[]): string {
  return sql.replace(/\$(\d+)/g, (_, n: string) => {
    const i = Number(n) - 1;
    if (!(i >= 0 && i < values.length)) throw new Error(`inlineParams: no value for $${n}`);
    return sqlLiteral(values[i]);
  });
}

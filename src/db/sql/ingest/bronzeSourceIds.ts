/**
 * The ids of sources in `straggler.bronze_sources` (one row per pipeline and source name; bronze rows
 * name their source by it), made where missing, in the landing's transaction under the pipeline's
 * append lock (so no other landing makes the same name meanwhile).
 */
import { sqlLiteral } from "../../inlineParams.js";

/**
 * The statement as text for a multi-statement exchange: one row per name of `names` (distinct), `id` and `name`.
 * @param pipeline the pipeline's name
 */
export function bronzeSourceIdsText(pipeline: string, names: readonly string[]): string {
  const p = sqlLiteral(pipeline);
  return `WITH names(name) AS (SELECT DISTINCT unnest(ARRAY[${names.map(sqlLiteral).join(", ")}]::text[])),
ins AS (INSERT INTO straggler.bronze_sources (pipeline, name) SELECT ${p}, name FROM names ON CONFLICT (pipeline, name) DO NOTHING RETURNING id, name)
SELECT id, name FROM ins UNION ALL SELECT s.id, s.name FROM straggler.bronze_sources s JOIN names USING (name) WHERE s.pipeline = ${p}`;
}

/** The ids an exchange's answer to `bronzeSourceIdsText` gives, by name. */
export function bronzeSourceIdsFrom(rows: { id: string | number; name: string }[]): Map<string, number> {
  return new Map(rows.map((r) => [r.name, Number(r.id)]));
}

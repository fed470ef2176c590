/**
 * Prunes a pipeline's change feed past its correction horizon, as bronze is
 * archived past it (README "Retention and archives"): the changes of windows
 * that end at or before the watermark minus the horizon can never change again.
 * The feed is pruned as a prefix, so that a consumer is either told it is
 * behind the pruned part or misses nothing: every change with an id below the
 * first change of a window inside the horizon goes (hold markers with them),
 * and `straggler.window_changes_pruned` keeps the last id pruned.
 */
import type { Queryable } from "../../pool.js";

const PRUNE_SQL = `WITH cut AS (
  SELECT coalesce(
           (SELECT min(id) - 1 FROM straggler.window_changes WHERE pipeline = $1 AND window_end > $2),
           (SELECT max(id) FROM straggler.window_changes WHERE pipeline = $1)) AS through_id
), gone AS (
  DELETE FROM straggler.window_changes c USING cut WHERE c.pipeline = $1 AND c.id <= cut.through_id RETURNING c.id
), kept AS (
  INSERT INTO straggler.window_changes_pruned AS p (pipeline, through_id)
  SELECT $1, max(id) FROM gone HAVING count(*) > 0
  ON CONFLICT (pipeline) DO UPDATE SET through_id = greatest(p.through_id, excluded.through_id), pruned_at = now()
)
SELECT count(*)::int AS n FROM gone`;

/**
 * Prunes the changes of `pipeline` (see the module comment). No lock needed: it draws no id, and a read sees the
 * deletion and the pruned id together or neither (one statement).
 * @param cutoff ISO 8601: the watermark minus the correction horizon; windows ending at or before it are past the horizon
 * @returns changes pruned
 * @throws the database's error
 */
export async function pruneChanges(db: Queryable, pipeline: string, cutoff: string): Promise<number> {
  return (await db.query<{ n: number }>(PRUNE_SQL, [pipeline, cutoff])).rows[0]!.n;
}

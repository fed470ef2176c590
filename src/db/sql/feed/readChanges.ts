/**
 * Reads a pipeline's change feed after an id (docs/change-feed.md), in id
 * order. Why `id > after` skips nothing: every writer of a pipeline's changes
 * (micro-batch, correction run, cutover, hold, release) holds the pipeline's
 * results lock from before it draws its first id until it commits
 * (src/db/sql/stream/lockResults.ts, DESIGN §10), so a pipeline's ids are
 * drawn by one transaction at a time and each commits before the next draws:
 * a snapshot that sees an id sees every smaller id of the pipeline. (A bare
 * bigserial does not give that across concurrent writers: a smaller id drawn
 * by a transaction still open becomes visible after a larger one.) Ids are
 * shared by all pipelines, so one pipeline's ids have gaps; gaps never close.
 *
 * While the pipeline is held (its last hold marker is `held`), the feed stops
 * at that marker: the changes written underneath are served after the release
 * (src/db/sql/feed/holdMarkers.ts).
 */
import { keyOut } from "../../../core/keys.js";
import type { Queryable } from "../../pool.js";
import { prepared } from "../../prepared.js";
import type { Aggregate } from "../readmodel/windows.js";

/** What a change is: a window new, updated by a micro-batch, corrected, retracted (gone), switched by a cutover; or a hold's marker. */
type ChangeKind = "new" | "updated" | "corrected" | "retracted" | "cutover" | "held" | "released";

/** One change of the feed. */
export interface FeedChange {
  /** The feed's position: increasing in commit order per pipeline. */
  id: number;
  change: ChangeKind;
  /** The group key (null for the null group and for a hold's marker). */
  key: string | null;
  /** ISO 8601; null for a hold's marker. */
  windowStart: string | null;
  windowEnd: string | null;
  /** The window's revision after the change (before it, for a retraction); null for a marker. */
  revision: number | null;
  /** null: the window was not published before (new). */
  before: Aggregate | null;
  /** null: the window is no longer published (retracted, or gone in a cutover). */
  after: Aggregate | null;
  /** What made the change: micro-batch, correction run, cutover to a version, or hold. */
  cause: { batchId: number } | { correctionRunId: number } | { version: number } | { holdId: number };
  /** When the transaction that made it began, ISO 8601. */
  at: string;
}

/** A page of the feed. */
export interface FeedPage {
  changes: FeedChange[];
  /** The id to read after next: the last change's, or `after` when there was none. */
  next: number;
  /** The hold that stops the feed (its `held` marker is the last change served until the release), or null. */
  heldBy: number | null;
}

/** The feed was pruned past `after` (src/db/sql/feed/pruneChanges.ts): reading on would skip changes. */
export class FeedPrunedError extends Error {
  override name = "FeedPrunedError";
  constructor(
    readonly pipeline: string,
    readonly after: number,
    readonly throughId: number,
  ) {
    super(
      `the change feed of ${pipeline} was pruned through id ${throughId} (past the correction horizon): reading after ${after} would skip changes; ` +
        `rebuild the copy from GET /pipelines/${pipeline}/windows and read the feed after ${throughId}`,
    );
  }
}

const READ_SQL = `WITH mark AS (
  SELECT id, change, hold_id FROM straggler.window_changes
   WHERE pipeline = $1 AND change IN ('held', 'released') ORDER BY id DESC LIMIT 1
), fence AS (SELECT id, hold_id FROM mark WHERE change = 'held')
SELECT c.id, c.change, c.group_key, c.window_start, c.window_end, c.revision,
       c.count_before, c.sum_before, c.min_before, c.max_before, c.count_after, c.sum_after, c.min_after, c.max_after,
       c.batch_id, c.run_id, c.version, c.hold_id, c.at,
       (SELECT hold_id FROM fence) AS held_by,
       (SELECT through_id FROM straggler.window_changes_pruned WHERE pipeline = $1) AS pruned_through
  FROM (SELECT 1) one
  LEFT JOIN straggler.window_changes c
    ON c.pipeline = $1 AND c.id > $2 AND c.id <= coalesce((SELECT id FROM fence), 9223372036854775807)
 ORDER BY c.id LIMIT $3`;

const aggregate = (r: Record<string, any>, side: "before" | "after"): Aggregate | null =>
  r[`count_${side}`] === null
    ? null
    : { count: r[`count_${side}`], sum: r[`sum_${side}`], min: r[`min_${side}`], max: r[`max_${side}`] };

function causeOf(r: Record<string, any>): FeedChange["cause"] {
  if (r.batch_id !== null) return { batchId: r.batch_id };
  if (r.run_id !== null) return { correctionRunId: r.run_id };
  if (r.version !== null) return { version: r.version };
  return { holdId: r.hold_id };
}

/**
 * Up to `limit` changes of `pipeline` with an id above `after`, in id order, stopping at the marker of a hold in force.
 * @param after the last id the consumer applied (0: from the start)
 * @throws FeedPrunedError when changes after `after` were pruned
 * @throws the database's error
 */
export async function readChanges(db: Queryable, pipeline: string, after: number, limit: number): Promise<FeedPage> {
  const { rows } = await db.query(prepared("feed_read", READ_SQL, [pipeline, after, limit]));
  const first = rows[0]!; // the LEFT JOIN's one row when no change matched
  if (first.pruned_through !== null && after < first.pruned_through)
    throw new FeedPrunedError(pipeline, after, first.pruned_through);
  const changes: FeedChange[] = rows
    .filter((r) => r.id !== null)
    .map((r) => ({
      id: r.id,
      change: r.change,
      key: r.group_key === null ? null : keyOut(r.group_key),
      windowStart: r.window_start,
      windowEnd: r.window_end,
      revision: r.revision,
      before: aggregate(r, "before"),
      after: aggregate(r, "after"),
      cause: causeOf(r),
      at: r.at,
    }));
  return { changes, next: changes.at(-1)?.id ?? after, heldBy: first.held_by };
}
